"""Serializer of ``search/``: a paper found, with its rank."""

from __future__ import annotations

from rest_framework import serializers

from .papers import PaperSerializer


class SearchResultSerializer(PaperSerializer):
    """A paper found by ``search/``, with its ``rank`` (higher is a better match; the scale
    depends on the response's ``meta.mode``)."""

    rank = serializers.FloatField(
        read_only=True,
        help_text="Higher is a better match. keyword: PostgreSQL ts_rank; semantic: cosine "
        "similarity, -1 to 1; hybrid: the reciprocal rank fusion score, sum of 1/(60 + rank).",
    )

    class Meta(PaperSerializer.Meta):
        fields = [*PaperSerializer.Meta.fields, "rank"]
        read_only_fields = fields

    def add_representation(self, row: dict, data: dict) -> None:
        data["rank"] = float(row["rank"])
