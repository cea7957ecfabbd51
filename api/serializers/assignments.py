"""Serializers of ``assignments/`` (curators): a paper's assignment to a topic, and what
placing a paper in a topic takes."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.fields import empty

from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Paper
from topics.models import Assignment

from .base import TopicSlugField


class PaperIdField(serializers.CharField):
    """A paper given by its arXiv identifier, any common spelling (``2409.01234v2``,
    ``arXiv:2409.01234``, ``hep-th/9901001``); a version resolves to the paper."""

    def run_validation(self, data=empty):
        text = super().run_validation(data)
        try:
            canonical, _version = parse_arxiv_id(text)
        except InvalidArxivId as error:
            raise serializers.ValidationError(str(error)) from None
        paper = Paper.objects.filter(arxiv_id=canonical).first()
        if paper is None:
            raise serializers.ValidationError(f"No paper with the arXiv identifier {canonical!r}.")
        return paper

    def to_representation(self, value):
        return value.identifier


class AssignmentSerializer(serializers.ModelSerializer):
    """A paper's assignment to a topic: where it came from (``source``), its ``state`` and
    ``score`` (in [0, 1], machine-made only), and the curator decision (``decided_by`` is the
    curator's username, ``decided_at`` when), null while no person decided."""

    paper = serializers.CharField(source="paper.identifier", read_only=True)
    topic = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    decided_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Assignment
        fields = [
            "id",
            "paper",
            "topic",
            "source",
            "state",
            "score",
            "decided_by",
            "decided_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class AssignmentCreateSerializer(serializers.Serializer):
    """What ``POST assignments/`` takes: ``{"paper": "<arXiv id>", "topic": "<slug>"}``."""

    paper = PaperIdField(help_text="arXiv identifier of the paper (a version resolves to it).")
    topic = TopicSlugField(help_text="Slug of the topic to place the paper in.")
