"""The topic tree as the admin shows it: tree order, indented labels, a choice of topic."""

from django import forms
from django.contrib.postgres.fields import ArrayField
from django.db import connection
from django.db.models import F, Func, IntegerField

from topics.models import Topic


class _PathKey(Func):
    """``Topic.path`` as an array of integers (``"3/17/"`` -> ``{3, 17}``): ordered by it,
    every topic comes right after its parent, siblings by id (PostgreSQL arrays compare
    element by element; as text, ``"10/"`` would come before ``"9/"``)."""

    template = "string_to_array(rtrim(%(expressions)s, '/'), '/')::integer[]"
    output_field = ArrayField(IntegerField())


def tree_order():
    """Topics in tree order: each after its parent, siblings by id."""
    if connection.vendor == "postgresql":
        return _PathKey("path").asc()
    return F("path").asc()  # SQLite (the demo): text order, still each after its parent


def tree_depth(topic: Topic) -> int:
    """How deep ``topic`` sits in the tree, from its ``path``: 0 for a root topic."""
    return max(topic.path.count("/") - 1, 0)


def tree_label(topic: Topic) -> str:
    """The topic's display name indented four spaces per level, "(inactive)" appended when it
    is inactive."""
    label = f"{'    ' * tree_depth(topic)}{topic.display_name}"
    return label if topic.active else f"{label} (inactive)"


class TopicTreeChoiceField(forms.ModelChoiceField):
    """A choice of topic, listed as an indented tree."""

    def __init__(self, queryset=None, **kwargs):
        if queryset is None:
            queryset = Topic.objects.active()
        super().__init__(queryset=queryset.order_by(tree_order()), **kwargs)

    def label_from_instance(self, topic):
        return tree_label(topic).replace(" ", "\u00a0")  # non-breaking: browsers keep them
