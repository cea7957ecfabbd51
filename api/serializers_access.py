"""Serializers of the access-controlled API resources: the user's follows (``me/follows/``) and
curators' assignments (``assignments/``)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.fields import empty

from follows.models import Follow
from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Paper
from topics.models import Assignment, Topic
from topics.selectors import topic_by_slug


def _active_topic(slug: str) -> Topic:
    """The active topic with ``slug`` (or, after a rename or merge, an old slug of it);
    raises ``ValidationError`` naming the slug."""
    topic = topic_by_slug(slug)
    if topic is None:
        raise serializers.ValidationError(f"No active topic has the slug {slug!r}.")
    return topic


class TopicSlugField(serializers.CharField):
    """A topic given by its slug: validates to the active :class:`~topics.models.Topic`."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", Topic._meta.get_field("slug").max_length)
        super().__init__(**kwargs)

    def run_validation(self, data=empty):
        # After the string's own checks (required, blank, length).
        return _active_topic(super().run_validation(data))

    def to_representation(self, value):
        return value.slug


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


# --- follows ---------------------------------------------------------------------------------


class FollowSerializer(serializers.ModelSerializer):
    """A follow of the signed-in user: a topic (``kind`` ``topic``, ``topic`` its slug) or a
    saved search (``kind`` ``search``: ``query`` in the topic-rule language, limited to
    ``topics`` and/or ``categories`` when given)."""

    topic = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    topics = serializers.SlugRelatedField(
        source="topic_scope", slug_field="slug", many=True, read_only=True
    )
    categories = serializers.SlugRelatedField(
        source="category_scope", slug_field="code", many=True, read_only=True
    )

    class Meta:
        model = Follow
        fields = [
            "id",
            "kind",
            "topic",
            "query",
            "topics",
            "categories",
            "digest_frequency",
            "created_at",
        ]
        read_only_fields = fields


class FollowUpdateSerializer(serializers.Serializer):
    """What ``PATCH me/follows/{id}/`` takes: ``{"digest_frequency": "daily"}`` (``daily``,
    ``weekly`` or ``off``)."""

    digest_frequency = serializers.ChoiceField(
        choices=Follow.Frequency.choices,
        help_text="How often the follow goes into your digests.",
    )


class FollowCreateSerializer(serializers.Serializer):
    """What ``POST me/follows/`` takes: ``{"topic": "<slug>"}`` to follow a topic, or
    ``{"query": "...", "topics": [<slug>...], "categories": [<code>...]}`` to save a search;
    ``digest_frequency`` (``daily``/``weekly``/``off``, default weekly) for either."""

    topic = TopicSlugField(required=False, help_text="Slug of the topic to follow.")
    query = serializers.CharField(
        required=False,
        max_length=Follow.QUERY_MAX_LENGTH,
        help_text=(
            "Saved search: keywords over title and abstract in the topic-rule language "
            '(words, "phrases", prefix*, OR, NOT, -word, parentheses).'
        ),
    )
    topics = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=50,
        help_text="Saved search: only papers in these topics (slugs), descendants included.",
    )
    categories = serializers.ListField(
        child=serializers.CharField(max_length=32),
        required=False,
        max_length=50,
        help_text="Saved search: only papers with one of these arXiv categories (codes), "
        "primary or cross-list.",
    )
    digest_frequency = serializers.ChoiceField(
        choices=Follow.Frequency.choices,
        required=False,
        help_text="How often the follow goes into your digests (default weekly).",
    )

    def validate(self, attrs):
        has_topic, has_query = "topic" in attrs, bool(attrs.get("query", "").strip())
        if has_topic and has_query:
            raise serializers.ValidationError(
                "Send either 'topic' (a topic slug) or 'query' (a saved search), not both."
            )
        if not (has_topic or has_query):
            raise serializers.ValidationError(
                "Send 'topic' (a topic slug) or 'query' (a saved search)."
            )
        extra = sorted({"topics", "categories"} & set(attrs)) if has_topic else []
        if extra:
            raise serializers.ValidationError(
                {name: "Only a saved search ('query') takes this." for name in extra}
            )
        return attrs


# --- assignments -----------------------------------------------------------------------------


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
