"""Serializers of ``me/follows/``: a follow of the signed-in user (a topic, an author or a
saved search), and what creating or changing one takes."""

from __future__ import annotations

from rest_framework import serializers

from follows.models import Follow
from papers.models import Author

from .base import TopicSlugField


class FollowedAuthorSerializer(serializers.ModelSerializer):
    """An author as a follow names it: ``id`` (the author page is ``/authors/<id>-<slug>/``)
    and ``name``."""

    class Meta:
        model = Author
        fields = ["id", "name"]
        read_only_fields = fields


class FollowSerializer(serializers.ModelSerializer):
    """A follow of the signed-in user: a topic (``kind`` ``topic``, ``topic`` its slug), an
    author (``kind`` ``author``, ``author`` its id and name) or a saved search (``kind``
    ``search``: ``query`` in the topic-rule language, limited to ``topics`` and/or
    ``categories`` when given)."""

    topic = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    author = FollowedAuthorSerializer(read_only=True, allow_null=True)
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
            "author",
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
    """What ``POST me/follows/`` takes: ``{"topic": "<slug>"}`` to follow a topic,
    ``{"author": <id>}`` to follow an author, or ``{"query": "...", "topics": [<slug>...],
    "categories": [<code>...]}`` to save a search; ``digest_frequency``
    (``daily``/``weekly``/``off``, default weekly) for any."""

    topic = TopicSlugField(required=False, help_text="Slug of the topic to follow.")
    author = serializers.PrimaryKeyRelatedField(
        queryset=Author.objects.all(),
        required=False,
        help_text="Id of the author to follow (a merged-away name follows the author it was "
        "merged into).",
    )
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
        given = [
            name
            for name, present in (
                ("topic", "topic" in attrs),
                ("author", "author" in attrs),
                ("query", bool(attrs.get("query", "").strip())),
            )
            if present
        ]
        if len(given) > 1:
            raise serializers.ValidationError(
                "Send one of 'topic' (a topic slug), 'author' (an author id) or 'query' (a "
                f"saved search), not {' and '.join(repr(name) for name in given)}."
            )
        if not given:
            raise serializers.ValidationError(
                "Send 'topic' (a topic slug), 'author' (an author id) or 'query' (a saved search)."
            )
        extra = sorted({"topics", "categories"} & set(attrs)) if given[0] != "query" else []
        if extra:
            raise serializers.ValidationError(
                {name: "Only a saved search ('query') takes this." for name in extra}
            )
        return attrs
