"""The topic tree as the admin shows it: tree order, indented labels, a choice of topic."""

from collections import defaultdict

from django import forms
from django.db.models import F, Func, IntegerField

from topics.models import Topic


def tree_ids_by_name() -> list[int]:
    """Every topic's id (active or not) in tree order by name: each topic right after its
    parent, siblings by name (case-insensitive, then id). One query over the topics' ids,
    parents and names; a parent cycle (impossible through the services) drops the topics on
    it rather than looping."""
    children: dict[int | None, list[tuple[str, int]]] = defaultdict(list)
    for pk, parent_id, name in Topic.objects.order_by().values_list("pk", "parent_id", "name"):
        children[parent_id].append((name.casefold(), pk))
    ordered: list[int] = []
    stack = [pk for _, pk in sorted(children[None], reverse=True)]
    while stack:
        pk = stack.pop()
        ordered.append(pk)
        stack.extend(pk for _, pk in sorted(children[pk], reverse=True))
    return ordered


class _TreePosition(Func):
    """A topic's position in :func:`tree_ids_by_name` (1-based), computed when the query is
    compiled, so that a list ordered by it is always the current tree. PostgreSQL: the ids as
    one array parameter (``array_position``); elsewhere (SQLite, the demo) their position in
    one ``,3,17,`` string parameter (``instr``), still one parameter whatever the size."""

    output_field = IntegerField()

    def __init__(self, expression="pk", **extra):
        super().__init__(F(expression), **extra)

    def as_sql(self, compiler, connection, **extra_context):
        sql, params = compiler.compile(self.source_expressions[0])
        ids = tree_ids_by_name()
        if connection.vendor == "postgresql":
            return f"array_position(%s::integer[], {sql})", [ids, *params]
        joined = "," + ",".join(map(str, ids)) + ","
        return f"instr(%s, ',' || {sql} || ',')", [joined, *params]


def tree_order():
    """Topics in tree order by name: each right after its parent, siblings by name (see
    :func:`tree_ids_by_name`); an expression to ``order_by`` on a ``Topic`` queryset."""
    return _TreePosition().asc()


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
