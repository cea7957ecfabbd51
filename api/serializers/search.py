"""Serializer of ``search/``: a paper found, with its rank."""

from __future__ import annotations

from rest_framework import serializers

from .papers import PaperSerializer


class SearchResultSerializer(PaperSerializer):
    """A paper found by ``search/``, with its ``rank`` (higher is a better match)."""

    rank = serializers.FloatField(read_only=True)

    class Meta(PaperSerializer.Meta):
        fields = [*PaperSerializer.Meta.fields, "rank"]
        read_only_fields = fields

    def add_representation(self, row: dict, data: dict) -> None:
        data["rank"] = float(row["rank"])
