"""Pieces several resources' serializers share: ``?fields=`` selection, a topic named in
another resource, a topic given by its slug."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import empty

from topics.models import Topic
from topics.selectors import topic_by_slug

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

    def selected_field_names(self) -> list[str] | None:
        """The names ``?fields=`` keeps, in the fields' order, for a serializer that builds
        its representation directly; None for every field (no ``fields=``, or all of them).
        Worked out once per serializer (a list's child serves every item); an unknown name
        raises as :attr:`_readable_fields` does. Without ``fields=``, DRF's fields (built
        anew for every response) are never made."""
        if "_selected_names" not in self.__dict__:
            selected = None
            if self.get_field_names_selected() is not None:
                names = [f.field_name for f in self._readable_fields]
                selected = None if names == list(self.Meta.fields) else names
            self._selected_names = selected
        return self._selected_names

    def absolute_url(self, name: str, kwarg: str, value: str, placeholder: str) -> str:
        """``request.build_absolute_uri(reverse(name, kwargs={kwarg: value}))`` for a value
        ``reverse`` leaves as it is (an arXiv id, a slug), reversed once per serializer:
        ``placeholder`` is a value of the same kind, cut out of the URL reversed with it."""
        templates = self.__dict__.setdefault("_url_templates", {})
        if name not in templates:
            url = self.context["request"].build_absolute_uri(
                reverse(name, kwargs={kwarg: placeholder})
            )
            templates[name] = url.rsplit(placeholder, 1)
        head, tail = templates[name]
        return f"{head}{value}{tail}"


class TopicRefSerializer(serializers.Serializer):
    """A topic named in another resource: ``{"slug", "name"}``."""

    slug = serializers.SlugField(read_only=True)
    name = serializers.CharField(read_only=True)


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
