"""Serializers of ``topics/``: a topic in a list, a topic's detail (ancestors, children,
paper count, momentum) and its weekly trend (query and answer)."""

from __future__ import annotations

import datetime as dt

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from topics.models import Topic
from topics.momentum import momentum_sentence

from .base import SelectableFieldsMixin, TopicRefSerializer


class TopicLinksSerializer(serializers.Serializer):
    html = serializers.URLField()
    api = serializers.URLField()
    papers = serializers.URLField()
    trend = serializers.URLField()
    bibtex = serializers.URLField()
    csv = serializers.URLField()
    jsonl = serializers.URLField()


# The topic URLs of the links, by the URL name and the link's key; reversed once per
# response with a placeholder slug (SelectableFieldsMixin.absolute_url).
TOPIC_LINKS = (
    ("html", "topics:detail"),
    ("api", "api:topic-detail"),
    ("papers", "api:topic-papers"),
    ("trend", "api:topic-trend"),
    ("bibtex", "api:topic-export-bibtex"),
    ("csv", "api:topic-export-csv"),
    ("jsonl", "api:topic-export-jsonl"),
)
SLUG_PLACEHOLDER = "topic-slug-placeholder"


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

    def to_representation(self, topic: Topic) -> dict:
        """The fields above (``parent`` from ``select_related``), built directly: the same
        output as DRF's field by field rendering (the declared fields still make the schema
        and the ``fields=`` check), at a fraction of its cost (a page of 25 topics with
        momentum took 10 ms of Python that way, most of it building each topic's nested
        serializers and reversing its seven links)."""
        parent = topic.parent
        data = {
            "slug": topic.slug,
            "name": topic.name,
            "short_name": topic.short_name,
            "display_name": topic.display_name,
            "description": topic.description,
            "parent": parent.slug if parent is not None else None,
            "links": self.get_links(topic),
        }
        self.add_representation(topic, data)
        selected = self.selected_field_names()
        return data if selected is None else {name: data[name] for name in selected}

    def add_representation(self, topic: Topic, data: dict) -> None:
        """Subclasses add their own fields (of ``topic``) to ``data`` here."""

    @extend_schema_field(TopicLinksSerializer)
    def get_links(self, topic: Topic) -> dict:
        return {
            key: self.absolute_url(name, "slug", topic.slug, SLUG_PLACEHOLDER)
            for key, name in TOPIC_LINKS
        }


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

    def to_representation(self, topic: Topic) -> dict:
        # One topic per response: DRF's field by field rendering, not the list's.
        return serializers.ModelSerializer.to_representation(self, topic)

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
        return momentum_data(self.context["momentum"])


def momentum_data(m) -> dict:
    """``m`` (a ``topics.momentum.Momentum``) as :class:`MomentumSerializer` gives it, built
    directly (a list renders one per topic)."""
    return {
        "as_of": m.as_of.isoformat(),
        "recent": int(m.recent),
        "before": int(m.before),
        "change_pct": None if m.change_pct is None else int(m.change_pct),
        "share": float(m.share),
        "sentence": momentum_sentence(m),
        "weeks": [{"week_start": w.week_start.isoformat(), "count": int(w.count)} for w in m.weeks],
    }


class TopicListItemSerializer(TopicSerializer):
    """A topic in the list with the topics index's figures (``topics.index``): ``paper_count``
    (distinct papers, descendants included), ``momentum`` (as the topic's page) and
    ``rising`` (change of the topic's share of all new papers, last four weeks against the
    four before, in percentage points). The view passes ``index_topics`` ({pk: IndexTopic})
    in the context; a topic the index does not hold yet shows 0 papers and null figures."""

    paper_count = serializers.SerializerMethodField()
    momentum = serializers.SerializerMethodField()
    rising = serializers.SerializerMethodField()

    class Meta(TopicSerializer.Meta):
        fields = [*TopicSerializer.Meta.fields, "paper_count", "momentum", "rising"]
        read_only_fields = fields

    def _item(self, topic: Topic):
        return self.context.get("index_topics", {}).get(topic.pk)

    def add_representation(self, topic: Topic, data: dict) -> None:
        data["paper_count"] = self.get_paper_count(topic)
        data["momentum"] = self.get_momentum(topic)
        data["rising"] = self.get_rising(topic)

    @extend_schema_field(OpenApiTypes.INT)
    def get_paper_count(self, topic: Topic) -> int:
        item = self._item(topic)
        return item.paper_count if item else 0

    @extend_schema_field(MomentumSerializer(allow_null=True))
    def get_momentum(self, topic: Topic) -> dict | None:
        item = self._item(topic)
        return momentum_data(item.momentum) if item else None

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_rising(self, topic: Topic) -> float | None:
        item = self._item(topic)
        return round(item.rising, 6) if item else None


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
