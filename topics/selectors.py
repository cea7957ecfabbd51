"""Reads for the topic pages: a topic's papers, ancestors, the topic tree with paper counts and
the papers that match a reader's question. No side effects; every function runs a fixed number
of queries whatever the size of the data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db.models import F, Func, IntegerField, OuterRef, Prefetch, QuerySet, Subquery

from papers.models import Paper

from .models import Assignment, Topic

__all__ = [
    "ASK_POOL_SIZE",
    "TopicNode",
    "topic_ancestors",
    "topic_card_papers",
    "topic_papers",
    "topic_papers_matching",
    "topic_tree",
]

ASK_POOL_SIZE = 500


def topic_papers(*, topic: Topic) -> QuerySet[Paper]:
    """Distinct papers with an accepted assignment to ``topic`` or a descendant, newest first
    (submitted descending, then id descending)."""
    paper_ids = Assignment.objects.accepted().in_subtree(topic).order_by().values("paper_id")
    return Paper.objects.filter(id__in=paper_ids).newest_first()


def topic_card_papers(*, topic: Topic) -> QuerySet[Paper]:
    """:func:`topic_papers` with everything a card shows, in a fixed number of queries.

    On top of ``Paper.objects.for_cards()`` each paper gets ``topic_assignments``: its accepted
    assignments to active topics, with the topic loaded, ordered by topic name (the chips).
    """
    chips = (
        Assignment.objects.accepted()
        .filter(topic__active=True)
        .select_related("topic")
        .order_by("topic__name", "topic_id")
    )
    return (
        topic_papers(topic=topic)
        .for_cards()
        .prefetch_related(Prefetch("assignments", queryset=chips, to_attr="topic_assignments"))
    )


def topic_ancestors(*, topic: Topic) -> list[Topic]:
    """``topic``'s ancestors, root first, from its materialised path (one query, none for a
    root). Inactive ancestors are included; callers decide whether to link them."""
    ancestor_ids = [int(pk) for pk in topic.path.split("/") if pk][:-1]
    if not ancestor_ids:
        return []
    by_id = Topic.objects.in_bulk(ancestor_ids)
    return [by_id[pk] for pk in ancestor_ids if pk in by_id]


@dataclass
class TopicNode:
    """A topic in the index tree: ``paper_count`` is the number of distinct papers accepted in
    the topic or any descendant; ``children`` are nodes ordered by display name."""

    topic: Topic
    paper_count: int
    children: list[TopicNode] = field(default_factory=list)


class _CountDistinct(Func):
    # A plain function rather than an aggregate, so the subquery gets no GROUP BY and yields
    # exactly one row: the count of distinct papers in one topic's subtree.
    template = "COUNT(DISTINCT %(expressions)s)"
    output_field = IntegerField()


def topic_tree() -> list[TopicNode]:
    """The active topics as a forest of :class:`TopicNode`, each level ordered by display name
    (case-insensitive).

    One query: each topic's subtree count is a correlated subquery over assignments whose
    topic path starts with the topic's path, so a paper under two children counts once for
    the parent. An active topic whose parent is inactive is shown as a root.
    """
    subtree_count = (
        Assignment.objects.accepted()
        .filter(topic__path__startswith=OuterRef("path"))
        .order_by()
        .annotate(n=_CountDistinct(F("paper_id")))
        .values("n")
    )
    topics = sorted(
        Topic.objects.active().annotate(paper_count=Subquery(subtree_count)),
        # By the name readers see, whatever the database collation does with case.
        key=lambda t: (t.display_name.casefold(), t.pk),
    )
    nodes = {t.pk: TopicNode(topic=t, paper_count=t.paper_count or 0) for t in topics}
    roots = []
    for topic in topics:  # sorted, so every children list ends up sorted too
        parent = nodes.get(topic.parent_id)
        if parent is None:
            roots.append(nodes[topic.pk])
        else:
            parent.children.append(nodes[topic.pk])
    return roots


# Words that say nothing about a paper's subject; dropped from questions before matching.
_STOPWORDS = frozenset(
    """a about after all also an and any are as at be been but by can could do does for from
    has have how i if in into is it its of on or our over than that the their them then there
    these they this those to under up us using via was we were what when where which while who
    why will with would you your paper papers work works""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _terms(text: str) -> set[str]:
    """Lower-cased words of ``text`` minus stopwords, with a plural ``s`` dropped so "agents"
    matches "agent"."""
    terms = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        terms.add(word)
    return terms


def topic_papers_matching(
    *, topic: Topic, question: str, limit: int = 20, pool: int = ASK_POOL_SIZE
) -> list[Paper]:
    """Papers of ``topic``'s subtree that share words with ``question``, best match first.

    Looks at the ``pool`` newest papers (one query). A paper scores 2 per question word in its
    title and 1 per word in its abstract; papers scoring 0 are left out; ties go to the newer
    paper. Returns at most ``limit`` papers with ``match_score`` (int) and ``matched_terms``
    (sorted list of str) set. A question with no content words matches nothing.
    """
    wanted = _terms(question)
    if not wanted:
        return []
    candidates = (
        topic_papers(topic=topic)
        .select_related("primary_category")
        .only("id", "arxiv_id", "title", "abstract", "submitted", "primary_category__code")[:pool]
    )
    scored = []
    for order, paper in enumerate(candidates):
        in_title = wanted & _terms(paper.title)
        in_abstract = wanted & _terms(paper.abstract)
        score = 2 * len(in_title) + len(in_abstract)
        if score:
            paper.match_score = score
            paper.matched_terms = sorted(in_title | in_abstract)
            scored.append((-score, order, paper))
    scored.sort(key=lambda item: item[:2])
    return [paper for _, _, paper in scored[:limit]]
