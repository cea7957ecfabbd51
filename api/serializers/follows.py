"""Serializers of ``me/follows/``: a follow of the signed-in user (a topic or a saved
search), and what creating or changing one takes."""

from __future__ import annotations

from rest_framework import serializers

from follows.models import Follow

from .base import TopicSlugField


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
