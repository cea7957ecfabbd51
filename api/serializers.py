"""Serializers of the read resources: papers, topics (with momentum), trends, categories.

Everything from papers and users is plain text in JSON strings (never markup). Paper
serializers expect paper rows (``api.selectors.paper_rows`` / ``paper_row``) or papers from
``api.selectors.papers_for_api`` (prefetched relations).
"""

from __future__ import annotations

import datetime as dt

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from papers.models import Category, Paper
from topics.models import Topic
from topics.momentum import momentum_sentence

from .selectors import LOCAL_PREFIX, paper_row

FIELDS_PARAM = "fields"


class SelectableFieldsMixin:
    """``?fields=id,title`` keeps only those fields of each object (top-level names).

    An unknown name is a 400 naming it and listing the fields there are. Only applies to the
    serializer the view builds for its response (``context["select_fields"]`` true).
    """

    def get_field_names_selected(self) -> list[str] | None:
        request = self.context.get("request")
        if request is None or not self.context.get("select_fields"):
            return None
        raw = request.query_params.get(FIELDS_PARAM)
        if raw is None or not raw.strip():
            return None
        return [name.strip() for name in raw.split(",") if name.strip()]

    @property
    def _readable_fields(self):
        fields = list(super()._readable_fields)
        selected = self.get_field_names_selected()
        if selected is None:
            return fields
        known = {f.field_name for f in fields}
        unknown = [name for name in selected if name not in known]
        if unknown:
            raise ValidationError(
                {
                    FIELDS_PARAM: [
                        f"Unknown field{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(repr(n) for n in unknown)}; "
                        f"allowed: {', '.join(f.field_name for f in fields)}."
                    ]
                }
            )
        wanted = set(selected)
        return [f for f in fields if f.field_name in wanted]


class TopicRefSerializer(serializers.Serializer):
    """A topic named in another resource: ``{"slug", "name"}``."""

    slug = serializers.SlugField(read_only=True)
    name = serializers.CharField(read_only=True)


class AuthorSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The author's name as the paper gives it.")
    affiliations = serializers.ListField(
        child=serializers.CharField(), help_text="Affiliations given for this author here."
    )


class PaperUrlsSerializer(serializers.Serializer):
    abs = serializers.URLField(allow_null=True, help_text="Abstract page on arXiv.")
    pdf = serializers.URLField(allow_null=True, help_text="PDF on arXiv.")
    html = serializers.URLField(help_text="The paper's page on this site.")
    api = serializers.URLField(help_text="This paper in the API.")


class PaperSerializer(SelectableFieldsMixin, serializers.ModelSerializer):
    """A paper: ``id`` (canonical arXiv identifier, or ``local:<n>`` for papers not on arXiv),
    ``version`` (latest version number), title and abstract as text, ``authors`` in order with
    their affiliations, ``affiliations`` of the paper in order of first mention,
    ``primary_category`` and ``categories`` (cross-lists) as codes, ``submitted`` (v1 date),
    ``updated`` (latest version's date, null with one version), ``withdrawn``, ``doi`` and
    ``journal_ref`` (empty strings when unknown), ``topics`` (accepted assignments to active
    topics) and ``urls``."""

    id = serializers.SerializerMethodField(help_text="arXiv identifier, or local:<n>.")
    version = serializers.IntegerField(source="latest_version", read_only=True)
    authors = serializers.SerializerMethodField()
    affiliations = serializers.SerializerMethodField()
    primary_category = serializers.CharField(source="primary_category.code", read_only=True)
    categories = serializers.SerializerMethodField(help_text="Cross-list category codes.")
    topics = serializers.SerializerMethodField()
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
            "doi",
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
        selected = self.__dict__.get("_selected_names", False)
        if selected is False:
            # None: every field, in the order ``data`` has them (without ``fields=``, DRF's
            # fields, built anew for every response, are not needed at all).
            selected = None
            if self.get_field_names_selected() is not None:
                names = [f.field_name for f in self._readable_fields]
                selected = None if names == self.Meta.fields else names
            self._selected_names = selected
        arxiv_id = row["arxiv_id"]
        api_id = arxiv_id or f"{LOCAL_PREFIX}{row['id']}"
        updated = row["updated"]
        data = {
            "id": api_id,
            "version": row["latest_version"],
            "title": row["title"],
            "abstract": row["abstract"],
            "authors": row["authors"],
            "affiliations": row["affiliations"],
            "primary_category": row["category_code"],
            "categories": row["categories"],
            "submitted": row["submitted"].isoformat(),
            "updated": updated.isoformat() if updated else None,
            "withdrawn": row["withdrawn"],
            "doi": row["doi"],
            "journal_ref": row["journal_ref"],
            "topics": row["topics"],
            "urls": self._urls(row["id"], arxiv_id, api_id),
        }
        self.add_representation(row, data)
        if selected is None:
            return data
        return {name: data[name] for name in selected}

    def add_representation(self, row: dict, data: dict) -> None:
        """Subclasses add their own fields (from ``row``) to ``data`` here."""

    # The methods below describe the fields for the schema (drf-spectacular); the values
    # come from the row in to_representation.
    @extend_schema_field(OpenApiTypes.STR)
    def get_id(self, row: dict) -> str:
        return row["arxiv_id"] or f"{LOCAL_PREFIX}{row['id']}"

    @extend_schema_field(AuthorSerializer(many=True))
    def get_authors(self, row: dict) -> list[dict]:
        return row["authors"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_affiliations(self, row: dict) -> list[str]:
        return row["affiliations"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_categories(self, row: dict) -> list[str]:
        return row["categories"]

    @extend_schema_field(TopicRefSerializer(many=True))
    def get_topics(self, row: dict) -> list[dict]:
        return row["topics"]

    def _absolute_url(self, name: str, kwarg: str, value: str) -> str:
        """``build_absolute_uri(reverse(name, kwargs={kwarg: value}))`` for an arXiv or API
        id (characters ``reverse`` leaves as they are), reversed once per serializer."""
        templates = self.__dict__.setdefault("_url_templates", {})
        if name not in templates:
            placeholder = "0000.00000"
            url = self.context["request"].build_absolute_uri(
                reverse(name, kwargs={kwarg: placeholder})
            )
            templates[name] = url.split(placeholder, 1)
        head, tail = templates[name]
        return f"{head}{value}{tail}"

    def _urls(self, pk: int, arxiv_id: str | None, api_id: str) -> dict:
        if arxiv_id:
            html = self._absolute_url("papers:detail", "arxiv_id", arxiv_id)
        else:
            html = self.context["request"].build_absolute_uri(
                reverse("papers:detail-local", kwargs={"pk": pk})
            )
        return {
            "abs": f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else None,
            "pdf": f"https://arxiv.org/pdf/{arxiv_id}" if arxiv_id else None,
            "html": html,
            "api": self._absolute_url("api:paper-detail", "paper_id", api_id),
        }

    @extend_schema_field(PaperUrlsSerializer)
    def get_urls(self, row: dict) -> dict:
        return self._urls(row["id"], row["arxiv_id"], self.get_id(row))


class SearchResultSerializer(PaperSerializer):
    """A paper found by ``search/``, with its ``rank`` (higher is a better match)."""

    rank = serializers.FloatField(read_only=True)

    class Meta(PaperSerializer.Meta):
        fields = [*PaperSerializer.Meta.fields, "rank"]
        read_only_fields = fields

    def add_representation(self, row: dict, data: dict) -> None:
        data["rank"] = float(row["rank"])


class TopicLinksSerializer(serializers.Serializer):
    html = serializers.URLField()
    api = serializers.URLField()
    papers = serializers.URLField()
    trend = serializers.URLField()
    bibtex = serializers.URLField()
    csv = serializers.URLField()
    jsonl = serializers.URLField()


def _topic_links(request, topic: Topic) -> dict:
    def url(name):
        return request.build_absolute_uri(reverse(name, kwargs={"slug": topic.slug}))

    return {
        "html": request.build_absolute_uri(topic.get_absolute_url()),
        "api": url("api:topic-detail"),
        "papers": url("api:topic-papers"),
        "trend": url("api:topic-trend"),
        "bibtex": url("api:topic-export-bibtex"),
        "csv": url("api:topic-export-csv"),
        "jsonl": url("api:topic-export-jsonl"),
    }


class TopicSerializer(SelectableFieldsMixin, serializers.ModelSerializer):
    """A topic in a list: slug, name, short name, display name (``"LLM: Large Language
    Model"``), description, ``parent`` (slug or null) and ``links``."""

    display_name = serializers.CharField(read_only=True)
    parent = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    links = serializers.SerializerMethodField()

    class Meta:
        model = Topic
        fields = ["slug", "name", "short_name", "display_name", "description", "parent", "links"]
        read_only_fields = fields

    @extend_schema_field(TopicLinksSerializer)
    def get_links(self, topic: Topic) -> dict:
        return _topic_links(self.context["request"], topic)


class MomentumWeekSerializer(serializers.Serializer):
    week_start = serializers.DateField(help_text="A Monday.")
    count = serializers.IntegerField(help_text="The topic's papers submitted that week.")


class MomentumSerializer(serializers.Serializer):
    """``topics.momentum.Momentum`` with its sentence."""

    as_of = serializers.DateField()
    recent = serializers.IntegerField(help_text="Papers in the last four weeks.")
    before = serializers.IntegerField(help_text="Papers in the four weeks before.")
    change_pct = serializers.IntegerField(
        allow_null=True, help_text="Whole percent change; null when before is 0."
    )
    share = serializers.FloatField(help_text="recent / all papers of the last four weeks.")
    sentence = serializers.CharField(help_text="The momentum as the topic page words it.")
    weeks = MomentumWeekSerializer(many=True)


class TopicDetailSerializer(TopicSerializer):
    """A topic with ``parent`` and ``ancestors`` (root first) and ``children`` as
    ``{"slug", "name"}``, ``paper_count`` (distinct papers, descendants included) and
    ``momentum``. The view passes ``ancestors``, ``children``, ``paper_count`` and
    ``momentum`` in the context."""

    parent = serializers.SerializerMethodField()
    ancestors = serializers.SerializerMethodField()
    children = serializers.SerializerMethodField()
    paper_count = serializers.SerializerMethodField()
    momentum = serializers.SerializerMethodField()

    class Meta(TopicSerializer.Meta):
        fields = [
            "slug",
            "name",
            "short_name",
            "display_name",
            "description",
            "parent",
            "ancestors",
            "children",
            "paper_count",
            "momentum",
            "links",
        ]
        read_only_fields = fields

    @extend_schema_field(TopicRefSerializer(allow_null=True))
    def get_parent(self, topic: Topic) -> dict | None:
        ancestors = self.context["ancestors"]
        return TopicRefSerializer(ancestors[-1]).data if ancestors else None

    @extend_schema_field(TopicRefSerializer(many=True))
    def get_ancestors(self, topic: Topic) -> list[dict]:
        return TopicRefSerializer(self.context["ancestors"], many=True).data

    @extend_schema_field(TopicRefSerializer(many=True))
    def get_children(self, topic: Topic) -> list[dict]:
        return TopicRefSerializer(self.context["children"], many=True).data

    @extend_schema_field(OpenApiTypes.INT)
    def get_paper_count(self, topic: Topic) -> int:
        return self.context["paper_count"]

    @extend_schema_field(MomentumSerializer)
    def get_momentum(self, topic: Topic) -> dict:
        m = self.context["momentum"]
        return MomentumSerializer(
            {
                "as_of": m.as_of,
                "recent": m.recent,
                "before": m.before,
                "change_pct": m.change_pct,
                "share": m.share,
                "sentence": momentum_sentence(m),
                "weeks": [{"week_start": w.week_start, "count": w.count} for w in m.weeks],
            }
        ).data


class TrendQuerySerializer(serializers.Serializer):
    """Query parameters of ``topics/{slug}/trend/``."""

    MAX_WEEKS = 260

    as_of = serializers.DateField(
        required=False,
        input_formats=["%Y-%m-%d"],
        help_text="Last day counted, YYYY-MM-DD (default: the newest submitted date).",
    )
    weeks = serializers.IntegerField(
        required=False,
        default=12,
        min_value=1,
        max_value=MAX_WEEKS,
        help_text=f"Number of weeks, 1 to {MAX_WEEKS} (default 12).",
    )

    def validate(self, attrs):
        as_of = attrs.get("as_of")
        if as_of is not None:
            # The first week's Monday must be a date Python can hold (year 1 or later).
            try:
                as_of - dt.timedelta(days=as_of.weekday(), weeks=attrs["weeks"] - 1)
            except OverflowError:
                raise ValidationError(
                    {"as_of": [f"Too early for {attrs['weeks']} weeks before it."]}
                ) from None
        return attrs


class TrendWeekSerializer(serializers.Serializer):
    week_start = serializers.DateField(help_text="A Monday.")
    count = serializers.IntegerField(help_text="The topic's papers submitted that week.")
    total = serializers.IntegerField(help_text="All papers submitted that week.")
    share = serializers.FloatField(help_text="count / total (0 when total is 0).")


TrendSerializer = inline_serializer(
    name="Trend",
    fields={
        "topic": TopicRefSerializer(),
        "as_of": serializers.DateField(),
        "weeks": TrendWeekSerializer(many=True),
    },
)


class CategorySerializer(serializers.ModelSerializer):
    """An arXiv category: canonical ``code`` and ``name``, its archive and group."""

    class Meta:
        model = Category
        fields = ["code", "name", "archive", "archive_name", "group", "group_name", "is_active"]
        read_only_fields = fields
