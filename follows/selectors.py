"""Reads for follows: the papers of a follow or of all a user's follows, which follows matched
which papers, follower counts, the follows page and the export. No side effects; each function
runs a fixed number of queries whatever the size of the data.

The papers of a **topic follow** are those with an accepted assignment to the topic or a
descendant (as on the topic page). The papers of a **saved search** are its stored matches
(``SearchMatch``: query and category scope) that, when the search has a topic scope, also have
an accepted assignment in one of its topics or their descendants (applied here, so tagging
that finishes after matching and later curator decisions count). Withdrawn papers are kept
(cards mark them). The papers of an **author follow** are the papers that author is credited on
(its authorships; a curator's merge moves those of its name variants to it).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.lookups import StartsWith
from django.utils import timezone

from papers.models import Authorship, Paper
from topics.models import Assignment, Topic
from topics.selectors import topic_newest_paper_ids, topic_papers
from topicsite.readers import any_of, read_statement

from .models import Follow, SearchMatch

__all__ = [
    "EXPORT_VERSION",
    "author_follower_count",
    "author_followed_paper_ids",
    "follow_papers",
    "follower_count",
    "topic_follow_states",
    "topic_follow_states_from_rows",
    "topic_follow_states_statement",
    "follows_export",
    "scoped_search_matches",
    "user_follow_matches",
    "user_follows",
    "user_newest_paper_ids",
    "user_papers",
]

EXPORT_VERSION = 1

_TopicScope = Follow.topic_scope.through


def scoped_search_matches() -> QuerySet[SearchMatch]:
    """Stored saved-search matches (``SearchMatch``) that pass their search's topic scope (no
    scope, or an accepted assignment of the paper in a scope topic or a descendant), as a
    queryset to filter further; no query until evaluated."""
    scope = _TopicScope.objects.filter(follow_id=OuterRef("follow_id"))
    in_scope = scope.filter(
        Exists(
            Assignment.objects.accepted().filter(
                paper_id=OuterRef(OuterRef("paper_id")),
                topic__path__startswith=OuterRef("topic__path"),
            )
        )
    )
    return SearchMatch.objects.filter(~Exists(scope) | Exists(in_scope))


def _arrived_since(papers: QuerySet[Paper], since: dt.datetime | dt.date | None):
    """Papers stored (``created_at``) at or after ``since`` (a date means its midnight in the
    site's time zone)."""
    if since is None:
        return papers
    if not isinstance(since, dt.datetime):
        since = timezone.make_aware(dt.datetime.combine(since, dt.time.min))
    return papers.filter(created_at__gte=since)


def author_followed_paper_ids(*, user) -> QuerySet:
    """The pks of papers credited to an author ``user`` follows, as a ``values("paper_id")``
    subquery over authorships (no query until evaluated; may repeat a paper)."""
    followed = Follow.objects.filter(user=user, kind=Follow.Kind.AUTHOR).values("author_id")
    return Authorship.objects.filter(author_id__in=followed).values("paper_id")


def follow_papers(*, follow: Follow) -> QuerySet[Paper]:
    """The papers of ``follow`` (topic, author or saved search, see the module docstring) that
    count (neither withdrawn nor deleted), distinct, newest first (submitted descending, then
    id descending). One query when evaluated."""
    if follow.kind == Follow.Kind.TOPIC:
        return topic_papers(topic=follow.topic)
    if follow.kind == Follow.Kind.AUTHOR:
        credited = Authorship.objects.filter(author_id=follow.author_id).values("paper_id")
        return Paper.objects.live().filter(pk__in=credited).newest_first()
    matches = scoped_search_matches().filter(follow_id=follow.pk).values("paper_id")
    return Paper.objects.live().filter(pk__in=matches).newest_first()


def user_papers(*, user, since: dt.datetime | dt.date | None = None) -> QuerySet[Paper]:
    """Distinct papers of any of ``user``'s follows that count (neither withdrawn nor
    deleted), newest first (submitted descending, then id descending); with ``since``, only
    papers stored (``Paper.created_at``) at or after it. One SQL query: ``IN`` subqueries
    over accepted assignments under the followed topics' paths, over the followed authors'
    authorships and over the scoped search matches. Chainable (filters, slicing)."""
    # The followed topics' subtrees first (few rows), then their accepted assignments through
    # the (topic, state) index.
    followed_above = Follow.objects.filter(
        StartsWith(OuterRef("path"), F("topic__path")),
        user=user,
        kind=Follow.Kind.TOPIC,
    ).exclude(topic__path="")
    subtree_topic_ids = Topic.objects.filter(Exists(followed_above)).values("pk")
    topic_paper_ids = (
        Assignment.objects.accepted_live().filter(topic_id__in=subtree_topic_ids).values("paper_id")
    )
    search_paper_ids = (
        scoped_search_matches()
        .filter(follow__user=user, follow__kind=Follow.Kind.SEARCH)
        .values("paper_id")
    )
    papers = Paper.objects.live().filter(
        Q(pk__in=topic_paper_ids)
        | Q(pk__in=search_paper_ids)
        | Q(pk__in=author_followed_paper_ids(user=user))
    )
    return _arrived_since(papers, since).newest_first()


def user_newest_paper_ids(*, user, limit: int, after: dt.date | None = None) -> list[int]:
    """Ids of the newest ``limit`` papers of :func:`user_papers` (the same papers, in the same
    order: submitted descending, then id descending), with ``after`` only those submitted
    strictly after that date. One query (two from ``topics.selectors.MERGED_BRANCHES_MIN_ROWS``
    papers on: the followed subtrees' topics first), whose cost grows with the number of
    follows and with ``limit`` (or the papers after ``after``), not with the topics' sizes: one
    index range scan per topic of the followed subtrees and per followed author, and the
    saved searches' matches, each its own branch (``topics.selectors.topic_newest_paper_ids``;
    :func:`user_papers`' one ``OR`` of ``IN`` subqueries walked every paper newest first for
    a reader who followed no author and saved no search). Raises ``ValueError`` for a
    negative ``limit``."""
    followed_above = Follow.objects.filter(
        StartsWith(OuterRef("path"), F("topic__path")),
        user=user,
        kind=Follow.Kind.TOPIC,
    ).exclude(topic__path="")
    search_paper_ids = (
        scoped_search_matches()
        .filter(follow__user=user, follow__kind=Follow.Kind.SEARCH)
        .values("paper_id")
    )
    return topic_newest_paper_ids(
        topic_ids=Topic.objects.filter(Exists(followed_above)),
        limit=limit,
        extra_papers=Paper.objects.filter(pk__in=search_paper_ids),
        author_ids=Follow.objects.filter(user=user, kind=Follow.Kind.AUTHOR).values("author_id"),
        after=after,
    )


_KIND_ORDER = {Follow.Kind.TOPIC: 0, Follow.Kind.AUTHOR: 1, Follow.Kind.SEARCH: 2}


def _follow_sort_key(follow: Follow):
    return (_KIND_ORDER.get(follow.kind, 3), follow.label.casefold(), follow.pk)


def user_follows(*, user) -> list[Follow]:
    """``user``'s follows for display: topics first, then authors, then saved searches, each
    by label; ``topic``, ``author``, ``topic_scope`` and ``category_scope`` loaded. Three
    queries."""
    follows = (
        Follow.objects.filter(user=user)
        .select_related("topic", "author")
        .prefetch_related("topic_scope", "category_scope")
    )
    return sorted(follows, key=_follow_sort_key)


def user_follow_matches(
    *,
    user,
    paper_ids: Iterable[int] | None = None,
    since: dt.datetime | dt.date | None = None,
) -> dict[int, list[Follow]]:
    """Which of ``user``'s follows matched each paper: ``{paper pk: [Follow, ...]}`` (follows
    ordered topics first, then authors, then saved searches, each by label; ``topic``,
    ``author`` and ``topic_scope`` loaded), only papers that at least one follow matched.

    ``paper_ids``: the papers to look at (e.g. one feed page); ``None`` means every paper of
    :func:`user_papers` (with ``since``). ``since`` keeps papers stored at or after it. At most
    five queries whatever the number of papers or follows, six when the user follows authors.
    """
    follows = sorted(
        Follow.objects.filter(user=user)
        .select_related("topic", "author")
        .prefetch_related("topic_scope"),
        key=_follow_sort_key,
    )
    if not follows:
        return {}
    if paper_ids is None:
        ids = list(user_papers(user=user, since=since).values_list("pk", flat=True))
    else:
        ids = list(dict.fromkeys(paper_ids))
        if since is not None and ids:
            papers = _arrived_since(Paper.objects.filter(pk__in=ids), since)
            ids = list(papers.values_list("pk", flat=True))
    if not ids:
        return {}
    paths: dict[int, list[str]] = defaultdict(list)
    for paper_id, path in (
        Assignment.objects.accepted()
        .filter(paper_id__in=ids)
        .values_list("paper_id", "topic__path")
    ):
        paths[paper_id].append(path)
    search_ids = [f.pk for f in follows if f.kind == Follow.Kind.SEARCH]
    matched = set()
    if search_ids:
        matched = set(
            SearchMatch.objects.filter(follow_id__in=search_ids, paper_id__in=ids).values_list(
                "paper_id", "follow_id"
            )
        )

    author_ids = [f.author_id for f in follows if f.kind == Follow.Kind.AUTHOR]
    credited = set()
    if author_ids:
        credited = set(
            Authorship.objects.filter(author_id__in=author_ids, paper_id__in=ids).values_list(
                "paper_id", "author_id"
            )
        )

    def under(paper_id: int, topics: Iterable[Topic]) -> bool:
        prefixes = tuple(t.path for t in topics if t.path)
        return bool(prefixes) and any(p.startswith(prefixes) for p in paths[paper_id])

    result: dict[int, list[Follow]] = {}
    for paper_id in ids:
        hits = []
        for follow in follows:
            if follow.kind == Follow.Kind.TOPIC:
                hit = under(paper_id, [follow.topic])
            elif follow.kind == Follow.Kind.AUTHOR:
                hit = (paper_id, follow.author_id) in credited
            else:
                scope = follow.topic_scope.all()
                hit = (paper_id, follow.pk) in matched and (not scope or under(paper_id, scope))
            if hit:
                hits.append(follow)
        if hits:
            result[paper_id] = hits
    return result


def follower_count(*, topic: Topic) -> int:
    """How many users follow ``topic`` itself (not its descendants). One query."""
    return Follow.objects.filter(topic=topic, kind=Follow.Kind.TOPIC).count()


def topic_follow_states(*, user, topic_ids: Iterable[int]) -> dict[int, tuple[str, int, bool]]:
    """``{topic pk: (slug, follower count, whether user follows it)}`` for the stored topics
    of ``topic_ids`` (the count as :func:`follower_count`; False for an anonymous user). One
    query (:func:`topic_follow_states_statement`)."""
    user_id = user.pk if user.is_authenticated else None
    return topic_follow_states_from_rows(
        read_statement(topic_follow_states_statement(user_id, topic_ids))
    )


def topic_follow_states_statement(user_id, topic_ids: Iterable) -> tuple[str, str, list] | None:
    """``(alias, sql, params)`` of :func:`topic_follow_states` for the reader whose primary
    key is ``user_id`` (``None``: not signed in), or ``None`` for no topics. SQL written out
    and prepared once per connection (``topicsite.readers``): a Follow button on every
    signed-in page view, where compiling the ORM's query cost more than running it."""
    ids = [int(pk) for pk in topic_ids]
    if not ids:
        return None
    follows, topics = Follow._meta.db_table, Topic._meta.db_table
    among, among_params = any_of(DEFAULT_DB_ALIAS, "t.id", ids)
    sql = (
        f"SELECT t.id, t.slug, "  # noqa: S608 - table names
        f"(SELECT COUNT(*) FROM {follows} f WHERE f.topic_id = t.id AND f.kind = %s) "
        f"AS followers, "
        f"(SELECT COUNT(*) FROM {follows} f WHERE f.topic_id = t.id AND f.user_id = %s) AS mine "
        f"FROM {topics} t WHERE {among}"
    )
    return DEFAULT_DB_ALIAS, sql, [Follow.Kind.TOPIC.value, user_id, *among_params]


def topic_follow_states_from_rows(rows) -> dict[int, tuple[str, int, bool]]:
    """:func:`topic_follow_states` from its statement's ``rows``."""
    return {pk: (slug, count, bool(mine)) for pk, slug, count, mine in rows}


def author_follower_count(*, author) -> int:
    """How many users follow ``author``. One query."""
    return Follow.objects.filter(author=author, kind=Follow.Kind.AUTHOR).count()


def follows_export(*, user) -> dict:
    """``user``'s follows as the export file holds them (JSON-ready)::

        {"version": 1, "exported_at": "2026-11-30T04:15:24+00:00",
         "follows": [{"kind": "topic", "topic": slug, "digest_frequency": "weekly"},
                     {"kind": "author", "author": id, "name": str, "digest_frequency": "off"},
                     {"kind": "search", "query": str, "topics": [slug, ...],
                      "categories": [code, ...], "digest_frequency": "daily"}]}

    Follows oldest first, scopes sorted; three queries. ``follows.services.follows_import``
    reads it back.
    """
    follows = (
        Follow.objects.filter(user=user)
        .select_related("topic", "author")
        .prefetch_related("topic_scope", "category_scope")
        .order_by("created_at", "pk")
    )
    entries = []
    for follow in follows:
        if follow.kind == Follow.Kind.TOPIC:
            entries.append(
                {
                    "kind": follow.kind,
                    "topic": follow.topic.slug,
                    "digest_frequency": follow.digest_frequency,
                }
            )
        elif follow.kind == Follow.Kind.AUTHOR:
            entries.append(
                {
                    "kind": follow.kind,
                    "author": follow.author_id,
                    "name": follow.author.name,
                    "digest_frequency": follow.digest_frequency,
                }
            )
        else:
            entries.append(
                {
                    "kind": follow.kind,
                    "query": follow.query,
                    "topics": sorted(t.slug for t in follow.topic_scope.all()),
                    "categories": sorted(c.code for c in follow.category_scope.all()),
                    "digest_frequency": follow.digest_frequency,
                }
            )
    return {
        "version": EXPORT_VERSION,
        "exported_at": timezone.now().isoformat(timespec="seconds"),
        "follows": entries,
    }
