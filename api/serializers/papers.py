"""Serializers of ``papers/`` (and of every paper list: a topic's papers, exports): a paper
with its authors, categories, topics and links.

Everything from papers is plain text in JSON strings (never markup). Paper serializers expect
paper rows (``api.selectors.paper_rows`` / ``paper_row``) or papers from
``api.selectors.papers_for_api`` (prefetched relations).
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from papers.models import Paper

from ..selectors import AUTHORS_SHOWN, LOCAL_PREFIX, paper_row
from .base import SelectableFieldsMixin, TopicRefSerializer

# An arXiv identifier (or API id) the paper URLs are reversed with once per response.
ARXIV_ID_PLACEHOLDER = "0000.00000"


class AuthorSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The author's name as the paper gives it.")
    affiliations = serializers.ListField(
        child=serializers.CharField(), help_text="Affiliations given for this author here."
    )


class PaperUrlsSerializer(serializers.Serializer):
    abs = serializers.URLField(allow_null=True, help_text="Abstract page on arXiv.")
    pdf = serializers.URLField(
        allow_null=True, help_text="PDF on arXiv; null for a withdrawn or deleted paper."
    )
    html = serializers.URLField(help_text="The paper's page on this site.")
    api = serializers.URLField(help_text="This paper in the API.")


class PaperSerializer(SelectableFieldsMixin, serializers.ModelSerializer):
    """A paper: ``id`` (canonical arXiv identifier, or ``local:<n>`` for papers not on arXiv),
    ``version`` (the version the metadata describes; null when no source said), title and
    abstract as text, ``authors`` in order with their affiliations (the first 100; a paper
    with more also has ``author_count``, all its authors, which ``papers/<id>/authors/`` pages
    through), ``affiliations`` of the paper in order of first mention,
    ``primary_category`` and ``categories`` (cross-lists) as codes, ``submitted`` (v1 date),
    ``updated`` (latest version's date, null with one version), ``withdrawn``, ``deleted``
    (arXiv reports the record deleted), ``doi`` (the first DOI) and ``journal_ref`` (empty
    strings when unknown), ``dois`` (every DOI the paper's DOI field gives, in order),
    ``topics`` (accepted assignments to active topics) and ``urls`` (``pdf`` null for a
    withdrawn or deleted paper: arXiv serves a withdrawal notice or nothing)."""

    id = serializers.SerializerMethodField(help_text="arXiv identifier, or local:<n>.")
    version = serializers.IntegerField(
        source="latest_version",
        read_only=True,
        allow_null=True,
        help_text="The version the metadata describes; null when no source said which.",
    )
    doi = serializers.CharField(
        read_only=True, help_text="The first DOI of the paper (see dois), or an empty string."
    )
    dois = serializers.SerializerMethodField()
    authors = serializers.SerializerMethodField()
    affiliations = serializers.SerializerMethodField()
    primary_category = serializers.CharField(source="primary_category.code", read_only=True)
    categories = serializers.SerializerMethodField(help_text="Cross-list category codes.")
    topics = serializers.SerializerMethodField()
    deleted = serializers.SerializerMethodField(
        help_text="arXiv's OAI-PMH reports the record deleted (the paper is kept, marked)."
    )
    urls = serializers.SerializerMethodField()

    class Meta:
        model = Paper
        fields = [
            "id",
            "version",
            "title",
            "abstract",
            "authors",
            "affiliations",
            "primary_category",
            "categories",
            "submitted",
            "updated",
            "withdrawn",
            "deleted",
            "doi",
            "dois",
            "journal_ref",
            "topics",
            "urls",
        ]
        read_only_fields = fields

    def to_representation(self, row: dict) -> dict:
        """The fields above from a paper row (``api.selectors.ROW_KEYS``; a ``Paper`` from
        ``papers_for_api`` is turned into one), built directly: the same output as DRF's
        field by field rendering (the declared fields still make the schema and the
        ``fields=`` check), at a fraction of its cost on lists of 25 to 100 papers."""
        if not isinstance(row, dict):
            row = paper_row(row)
        selected = self.selected_field_names()
        arxiv_id = row["arxiv_id"]
        api_id = arxiv_id or f"{LOCAL_PREFIX}{row['id']}"
        updated = row["updated"]
        authors = row["authors"]
        data = {
            "id": api_id,
            "version": row["latest_version"],
            "title": row["title"],
            "abstract": row["abstract"],
            "authors": authors,
            "affiliations": row["affiliations"],
            "primary_category": row["category_code"],
            "categories": row["categories"],
            "submitted": row["submitted"].isoformat(),
            "updated": updated.isoformat() if updated else None,
            "withdrawn": row["withdrawn"],
            "deleted": row["deleted"],
            # The first DOI; a field holding no valid DOI is given as received.
            "doi": row["dois"][0] if row["dois"] else row["doi"],
            "dois": row["dois"],
            "journal_ref": row["journal_ref"],
            "topics": row["topics"],
            "urls": self._urls(row["id"], arxiv_id, api_id, live=row["live"]),
        }
        self.add_representation(row, data)
        # Only a paper whose list is cut short says how many authors it has: every other
        # response stays as it was.
        truncated = row["author_total"] > len(authors)
        if selected is None:
            if truncated:
                data = _with_author_count(data, row["author_total"])
            return data
        data = {name: data[name] for name in selected}
        if truncated and "authors" in data:
            data = _with_author_count(data, row["author_total"])
        return data

    def add_representation(self, row: dict, data: dict) -> None:
        """Subclasses add their own fields (from ``row``) to ``data`` here."""

    # The methods below describe the fields for the schema (drf-spectacular); the values
    # come from the row in to_representation.
    @extend_schema_field(OpenApiTypes.STR)
    def get_id(self, row: dict) -> str:
        return row["arxiv_id"] or f"{LOCAL_PREFIX}{row['id']}"

    @extend_schema_field(
        AuthorSerializer(
            many=True,
            help_text=f"The first {AUTHORS_SHOWN} authors in order. A paper with more "
            "authors also has author_count (an integer, placed after this list); "
            "papers/<id>/authors/ lists them all, page by page.",
        )
    )
    def get_authors(self, row: dict) -> list[dict]:
        return row["authors"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_affiliations(self, row: dict) -> list[str]:
        return row["affiliations"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_dois(self, row: dict) -> list[str]:
        """Every DOI of the paper's DOI field, in order (arXiv lets one field hold several)."""
        return row["dois"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_categories(self, row: dict) -> list[str]:
        return row["categories"]

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_deleted(self, row: dict) -> bool:
        return row["deleted"]

    @extend_schema_field(TopicRefSerializer(many=True))
    def get_topics(self, row: dict) -> list[dict]:
        return row["topics"]

    def _urls(self, pk: int, arxiv_id: str | None, api_id: str, *, live: bool) -> dict:
        if arxiv_id:
            html = self.absolute_url("papers:detail", "arxiv_id", arxiv_id, ARXIV_ID_PLACEHOLDER)
        else:
            html = self.context["request"].build_absolute_uri(
                reverse("papers:detail-local", kwargs={"pk": pk})
            )
        return {
            "abs": f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else None,
            # As Paper.pdf_url: no PDF for a paper that does not count (row["live"]).
            "pdf": f"https://arxiv.org/pdf/{arxiv_id}" if arxiv_id and live else None,
            "html": html,
            "api": self.absolute_url("api:paper-detail", "paper_id", api_id, ARXIV_ID_PLACEHOLDER),
        }

    @extend_schema_field(PaperUrlsSerializer)
    def get_urls(self, row: dict) -> dict:
        return self._urls(row["id"], row["arxiv_id"], self.get_id(row), live=row["live"])


def _with_author_count(data: dict, author_count: int) -> dict:
    """``data`` with ``author_count`` placed right after ``authors``."""
    result = {}
    for name, value in data.items():
        result[name] = value
        if name == "authors":
            result["author_count"] = author_count
    return result


class PaperAuthorSerializer(AuthorSerializer):
    """One author of a paper in ``papers/<id>/authors/``: ``position`` (0-based, the order
    the paper gives), ``name`` and ``affiliations`` (by name)."""

    position = serializers.IntegerField(help_text="0-based place in the paper's author list.")

    def to_representation(self, authorship) -> dict:
        return {
            "position": authorship.position,
            "name": authorship.author.name,
            "affiliations": [a.name for a in authorship.api_affiliations],
        }


class SimilarPaperSerializer(PaperSerializer):
    """A paper similar to another (``papers/<id>/similar/``), with ``score``: the cosine
    similarity of their embeddings, in [-1, 1], higher is closer."""

    score = serializers.FloatField(read_only=True)

    class Meta(PaperSerializer.Meta):
        fields = [*PaperSerializer.Meta.fields, "score"]
        read_only_fields = fields

    def add_representation(self, row: dict, data: dict) -> None:
        data["score"] = round(float(row["rank"]), 6)
