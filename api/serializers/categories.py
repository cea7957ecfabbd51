"""Serializer of ``categories/``: an arXiv category."""

from __future__ import annotations

from rest_framework import serializers

from papers.models import Category


class CategorySerializer(serializers.ModelSerializer):
    """An arXiv category: canonical ``code`` and ``name``, its archive and group."""

    class Meta:
        model = Category
        fields = ["code", "name", "archive", "archive_name", "group", "group_name", "is_active"]
        read_only_fields = fields
