"""The reader's library (``me/library/``) and "for you" picks (``me/for-you/``)."""

from __future__ import annotations

from rest_framework import serializers

from follows.models import LibraryItem


class PaperRefSerializer(serializers.Serializer):
    """A paper in brief: the API ``id`` (arXiv identifier or ``local:<n>``), ``title`` and
    the site page's ``url``."""

    id = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()


class LibraryItemSerializer(serializers.Serializer):
    """A saved paper: ``id`` (the item's, for ``me/library/{id}/``), the ``paper``,
    ``saved_at``, ``read`` and ``note``."""

    id = serializers.IntegerField()
    paper = PaperRefSerializer()
    saved_at = serializers.DateTimeField()
    read = serializers.BooleanField()
    note = serializers.CharField(allow_blank=True)


class LibraryItemCreateSerializer(serializers.Serializer):
    """Save ``paper`` (its API id: any arXiv identifier spelling, or ``local:<n>``)."""

    paper = serializers.CharField(max_length=200)


class LibraryItemUpdateSerializer(serializers.Serializer):
    """Mark ``read`` or unread, and/or write the ``note`` (empty removes it)."""

    read = serializers.BooleanField(required=False)
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=LibraryItem.NOTE_MAX_LENGTH,
        trim_whitespace=False,
    )


class ForYouPickSerializer(serializers.Serializer):
    """A "for you" pick: the ``paper``, its ``score`` (comparable within one answer only) and
    ``reasons`` ("close to …", "in …", "by …", "matches your search …")."""

    paper = PaperRefSerializer()
    score = serializers.FloatField()
    reasons = serializers.ListField(child=serializers.CharField())


class ForYouSerializer(serializers.Serializer):
    """The reader's picks, best first, and the window of submitted dates they come from."""

    since = serializers.DateField(allow_null=True)
    until = serializers.DateField(allow_null=True)
    results = ForYouPickSerializer(many=True)
