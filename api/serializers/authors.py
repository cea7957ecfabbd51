"""Authors: one author's summary (``authors/{id}/``)."""

from __future__ import annotations

from rest_framework import serializers


class AuthorNameCountSerializer(serializers.Serializer):
    """A co-author (``id`` and ``url`` of their page) or an affiliation (``id`` null, ``url``
    empty), with ``papers``: how many of the author's papers it is on."""

    id = serializers.IntegerField(source="pk", allow_null=True)
    name = serializers.CharField()
    papers = serializers.IntegerField()
    url = serializers.CharField(allow_blank=True)


class AuthorTopicSerializer(serializers.Serializer):
    """A topic the author's papers are accepted in: display name, page url, and how many."""

    name = serializers.CharField()
    url = serializers.CharField()
    papers = serializers.IntegerField()


class AuthorDetailSerializer(serializers.Serializer):
    """An author: ``id``, ``name``, ``paper_count`` (live papers credited), the site page's
    ``html_url``, and the top ``affiliations``, ``coauthors`` and ``topics`` (each at most
    ten, most papers first)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    paper_count = serializers.IntegerField()
    html_url = serializers.CharField()
    affiliations = AuthorNameCountSerializer(many=True)
    coauthors = AuthorNameCountSerializer(many=True)
    topics = AuthorTopicSerializer(many=True)


class AuthorListItemSerializer(serializers.Serializer):
    """An author found by name: ``id``, ``name``, ``paper_count`` (papers that count) and
    the site page's ``html_url``."""

    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    paper_count = serializers.IntegerField()
    html_url = serializers.CharField()


class AutocompleteItemSerializer(serializers.Serializer):
    """One suggestion: ``type`` (topic, author or category), ``id`` (topic slug, author id
    as text, category code), ``display_name``, ``hint`` (what it is: the parent topic, the
    paper count, the category's archive) and the site page's ``url``."""

    type = serializers.ChoiceField(choices=["topic", "author", "category"])
    id = serializers.CharField()
    display_name = serializers.CharField()
    hint = serializers.CharField(allow_blank=True)
    url = serializers.CharField()


class AutocompleteSerializer(serializers.Serializer):
    """Suggestions for ``q``: topics first, then authors, then categories."""

    q = serializers.CharField()
    results = AutocompleteItemSerializer(many=True)
