"""Writes for follows: following topics and saved searches, digest frequency, matching saved
searches against papers, and importing a user's follows.

A saved search is a keyword query in the topic-rule language (:mod:`topics.tagging.rules`),
optionally limited to topics and/or arXiv categories. Its matches are materialised in
:class:`~follows.models.SearchMatch`:

- a stored match means the query matches the paper's title and abstract and, when the search
  has a category scope, the paper's primary category or a cross-list is one of them;
- the **topic scope** is applied when reading (``follows.selectors``), over accepted
  assignments as they are then. Papers are matched when they are stored, while tagging runs
  in another task at the same time, so the assignments may not exist yet at match time; a
  curator's later decision also changes what the search shows.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from papers.models import Author, Category, Paper
from papers.taxonomy import UnknownCategory, canonical_category
from topics.models import Topic, TopicRedirect
from topics.tagging.classifier import paper_text
from topics.tagging.rules import Rule, RuleSyntaxError, compile_rule

from .models import Follow, SearchMatch
from .selectors import EXPORT_VERSION

logger = logging.getLogger(__name__)

__all__ = [
    "follow_author_create",
    "follow_author_delete",
    "follow_create",
    "follow_delete",
    "follow_search_create",
    "follow_update",
    "follows_author_move",
    "follows_import",
    "follows_move",
    "search_matches_backfill",
    "search_matches_create",
]

MATCH_BATCH_SIZE = 1000


# --- topic follows ---------------------------------------------------------------------------


@transaction.atomic
def follow_create(*, user, topic: Topic, digest_frequency: str | None = None) -> Follow:
    """Make ``user`` follow ``topic`` and return the :class:`Follow`.

    ``digest_frequency`` (``daily``/``weekly``/``off``) applies to a new follow only; default
    weekly. Idempotent: following a topic already followed returns the existing row unchanged
    (the unique (user, topic) constraint settles concurrent requests). Raises
    ``ValidationError`` for an unknown frequency.
    """
    frequency = _clean_frequency(digest_frequency)
    follow, _ = Follow.objects.get_or_create(
        user=user, topic=topic, defaults={"kind": Follow.Kind.TOPIC, "digest_frequency": frequency}
    )
    return follow


@transaction.atomic
def follow_delete(*, user, topic: Topic | None = None, follow: Follow | None = None) -> None:
    """Make ``user`` stop following ``topic``, or delete their ``follow`` (topic or saved
    search, with its matches). Does nothing if there is no such follow of theirs: another
    user's follow is never touched. Raises ``ValueError`` without ``topic`` or ``follow``."""
    if topic is None and follow is None:
        raise ValueError("follow_delete needs a topic or a follow")
    follows = Follow.objects.filter(user=user)
    if topic is not None:
        follows = follows.filter(topic=topic)
    if follow is not None:
        follows = follows.filter(pk=follow.pk)
    follows.delete()


@transaction.atomic
def follow_update(*, follow: Follow, digest_frequency: str) -> Follow:
    """Set how often ``follow`` goes into its user's digests (``daily``, ``weekly`` or
    ``off``); returns the follow. Raises ``ValidationError`` for any other value (nothing is
    written). The caller checks that the follow is the user's own."""
    follow.digest_frequency = _clean_frequency(digest_frequency, required=True)
    follow.save(update_fields=["digest_frequency", "updated_at"])
    return follow


@transaction.atomic
def follows_move(*, source_id: int, target_id: int) -> int:
    """Move every follow of topic ``source_id`` to topic ``target_id`` (pks).

    A user who already follows the target keeps that one follow (the source's is deleted); the
    others' follows move, keeping when they began. Returns the number of follows moved.
    Idempotent: a second call finds nothing left to move.
    """
    Follow.objects.filter(
        topic_id=source_id,
        user_id__in=Follow.objects.filter(topic_id=target_id).values("user_id"),
    ).delete()
    return Follow.objects.filter(topic_id=source_id).update(
        topic_id=target_id, updated_at=timezone.now()
    )


# --- author follows --------------------------------------------------------------------------


def author_current(author: Author) -> Author:
    """The author a follow of ``author`` should name: ``author``, or the survivor a curator
    merged it into (``Author.merged_into``; one query then)."""
    if author.merged_into_id is None:
        return author
    return Author.objects.get(pk=author.merged_into_id)


@transaction.atomic
def follow_author_create(*, user, author: Author, digest_frequency: str | None = None) -> Follow:
    """Make ``user`` follow ``author`` (a merged-away variant: the author it was merged into)
    and return the :class:`Follow`: the papers that author is credited on reach the feed, the
    private Atom feed and the digests, as a topic's do.

    ``digest_frequency`` (``daily``/``weekly``/``off``) applies to a new follow only; default
    weekly. Idempotent: following an author already followed returns the existing row
    unchanged (the unique (user, author) constraint settles concurrent requests). Raises
    ``ValidationError`` for an unknown frequency.
    """
    frequency = _clean_frequency(digest_frequency)
    # Read the author again under a row lock: an instance read before a merge committed (the
    # merge holds the row until then) would put the follow on the merged-away name, whose
    # papers have all moved to the survivor.
    author = Author.objects.select_for_update(no_key=True).get(pk=author.pk)
    follow, _ = Follow.objects.get_or_create(
        user=user,
        author=author_current(author),
        defaults={"kind": Follow.Kind.AUTHOR, "digest_frequency": frequency},
    )
    return follow


@transaction.atomic
def follow_author_delete(*, user, author: Author) -> None:
    """Make ``user`` stop following ``author``; nothing happens when they do not."""
    Follow.objects.filter(user=user, author=author).delete()


@transaction.atomic
def follows_author_move(*, source_ids: list[int], target_id: int) -> int:
    """Move every follow of the authors ``source_ids`` (pks) to author ``target_id``, as
    :func:`follows_move` does for topics: a user who already follows the target (or two of the
    sources) keeps one follow, the oldest; the others move, keeping when they began. Returns
    the number of follows moved. Idempotent."""
    moved = 0
    kept_users = set(Follow.objects.filter(author_id=target_id).values_list("user_id", flat=True))
    for follow in Follow.objects.filter(author_id__in=source_ids).order_by("created_at", "pk"):
        if follow.user_id in kept_users:
            follow.delete()
            continue
        kept_users.add(follow.user_id)
        Follow.objects.filter(pk=follow.pk).update(author_id=target_id, updated_at=timezone.now())
        moved += 1
    return moved


def _clean_frequency(value: str | None, *, required: bool = False) -> str:
    if value in (None, "") and not required:
        return Follow.Frequency.WEEKLY
    if value not in Follow.Frequency.values:
        choices = ", ".join(Follow.Frequency.values)
        raise ValidationError(
            {"digest_frequency": f"Digest frequency must be one of {choices}, not {value!r}."},
            code="invalid_frequency",
        )
    return value


# --- saved searches --------------------------------------------------------------------------


@dataclass(frozen=True)
class _CleanSearch:
    """A saved search checked and resolved: the normalised query and the scope rows."""

    query: str
    topics: tuple[Topic, ...]
    categories: tuple[Category, ...]


def normalise_query(query: str) -> str:
    """``query`` with runs of whitespace made one space and the ends trimmed (a phrase in
    quotes matches any whitespace between its words, so this changes no match)."""
    return " ".join(query.split())


def topics_resolve(slugs: Iterable[str]) -> tuple[list[Topic], list[str]]:
    """Active topics for ``slugs`` (an old slug of a renamed or merged topic resolves through
    ``TopicRedirect`` to the topic now); returns (topics in the order given, without
    duplicates; slugs that name no active topic). Two queries at most."""
    wanted = [s.strip() for s in slugs if s and s.strip()]
    found = {t.slug: t for t in Topic.objects.active().filter(slug__in=wanted)}
    missing = [s for s in wanted if s not in found]
    if missing:
        for redirect in TopicRedirect.objects.filter(
            old_slug__in=missing, topic__active=True
        ).select_related("topic"):
            found[redirect.old_slug] = redirect.topic
    topics, unknown = {}, []
    for slug in wanted:
        if slug in found:
            topics.setdefault(found[slug].pk, found[slug])
        elif slug not in unknown:
            unknown.append(slug)
    return list(topics.values()), unknown


def categories_resolve(codes: Iterable[str]) -> tuple[list[Category], list[str]]:
    """Stored categories for arXiv category ``codes`` (aliases such as ``math.MP`` resolve to
    the canonical code); returns (categories without duplicates; codes that name no stored
    category). One query."""
    wanted = [c.strip() for c in codes if c and c.strip()]
    canonical: dict[str, str] = {}
    for code in wanted:
        try:
            canonical[code] = canonical_category(code)
        except UnknownCategory:
            pass
    stored = {c.code: c for c in Category.objects.filter(code__in=set(canonical.values()))}
    categories, unknown = {}, []
    for code in wanted:
        category = stored.get(canonical.get(code, ""))
        if category is not None:
            categories.setdefault(category.pk, category)
        elif code not in unknown:
            unknown.append(code)
    return list(categories.values()), unknown


def _clean_search(*, query: str, topics: Iterable[str], categories: Iterable[str]) -> _CleanSearch:
    """Check a saved search; raises ``ValidationError`` keyed by ``query`` / ``topics`` /
    ``categories`` with every problem found."""
    errors: dict[str, list[ValidationError]] = defaultdict(list)
    if not isinstance(query, str):
        query = ""
    text = normalise_query(query)
    if not text:
        errors["query"].append(ValidationError("Enter a search query.", code="required"))
    elif len(text) > Follow.QUERY_MAX_LENGTH:
        errors["query"].append(
            ValidationError(
                f"The query is {len(text)} characters long; at most "
                f"{Follow.QUERY_MAX_LENGTH} are allowed.",
                code="max_length",
            )
        )
    else:
        try:
            # Compiled as typed, so the position counts the characters the user sees.
            compile_rule(query)
        except RuleSyntaxError as error:
            errors["query"].append(
                ValidationError(
                    "The query does not parse: %(reason)s at position %(position)s.",
                    code="query_syntax",
                    params={"reason": error.message, "position": error.position},
                )
            )
    topic_rows, unknown_topics = topics_resolve(topics)
    if unknown_topics:
        errors["topics"].append(
            ValidationError(
                "Unknown topic: %(slugs)s.",
                code="unknown_topic",
                params={"slugs": ", ".join(unknown_topics)},
            )
        )
    category_rows, unknown_categories = categories_resolve(categories)
    if unknown_categories:
        errors["categories"].append(
            ValidationError(
                "Unknown arXiv category: %(codes)s.",
                code="unknown_category",
                params={"codes": ", ".join(unknown_categories)},
            )
        )
    if errors:
        raise ValidationError(dict(errors))
    return _CleanSearch(query=text, topics=tuple(topic_rows), categories=tuple(category_rows))


def _search_follow_save(*, user, search: _CleanSearch, digest_frequency: str) -> Follow:
    """Inside a transaction: the user's follow of ``search``, created (and its backfill queued)
    unless they have it. Raises ``ValidationError`` (key ``query``) when creating it would pass
    ``FOLLOWS_MAX_SEARCHES_PER_USER``; the user's row is locked so concurrent creates count
    right."""
    existing = Follow.objects.filter(user=user, kind=Follow.Kind.SEARCH, query=search.query)
    if not existing.exists():
        list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk"))
        limit = settings.FOLLOWS_MAX_SEARCHES_PER_USER
        if Follow.objects.filter(user=user, kind=Follow.Kind.SEARCH).count() >= limit:
            raise ValidationError(
                {
                    "query": (
                        f"You already follow {limit} saved searches, the most one account may "
                        "have; unfollow one first."
                    )
                }
            )
    follow, created = Follow.objects.get_or_create(
        user=user,
        kind=Follow.Kind.SEARCH,
        query=search.query,
        defaults={"digest_frequency": digest_frequency},
    )
    if created:
        follow.topic_scope.set(search.topics)
        follow.category_scope.set(search.categories)
        from topicsite.publish import task_publish

        from .tasks import saved_search_backfill

        # A dead broker must not turn the saved follow into an error page: logged instead.
        transaction.on_commit(partial(task_publish, saved_search_backfill, follow.pk))
    return follow


@transaction.atomic
def follow_search_create(
    *,
    user,
    query: str,
    topics: Sequence[str] = (),
    categories: Sequence[str] = (),
    digest_frequency: str | None = None,
) -> Follow:
    """Make ``user`` follow the saved search ``query`` and return the :class:`Follow`.

    - ``query``: the topic-rule language (words, ``"phrases"``, ``prefix*``, ``OR``, ``NOT``,
      ``-word``, parentheses), at most ``Follow.QUERY_MAX_LENGTH`` characters; whitespace runs
      are made one space.
    - ``topics``: topic slugs (old slugs of renamed or merged topics follow their redirect);
      papers must have an accepted assignment in one of them or a descendant.
    - ``categories``: arXiv category codes (aliases accepted); papers must have one of them
      as primary category or cross-list.
    - ``digest_frequency``: ``daily``, ``weekly`` (default) or ``off``.

    Idempotent: a query the user already follows (after whitespace normalisation) returns
    that follow unchanged. A new follow queues ``follows.tasks.saved_search_backfill`` on
    commit (matches among the last ``FOLLOWS_SEARCH_BACKFILL_DAYS`` days of papers).

    Raises ``ValidationError`` keyed by field, nothing written: a query that does not parse
    (the reason and the 0-based position), an empty or too long query, unknown topic slugs or
    category codes (named), an unknown frequency.
    """
    frequency = _clean_frequency(digest_frequency)
    search = _clean_search(query=query, topics=topics or (), categories=categories or ())
    return _search_follow_save(user=user, search=search, digest_frequency=frequency)


# --- matching saved searches against papers -------------------------------------------------


@dataclass(frozen=True)
class _SavedSearch:
    follow_id: int
    rule: Rule
    category_ids: frozenset[int]


def _saved_searches(follow_ids: Sequence[int] | None) -> list[_SavedSearch]:
    """Every saved search (or those of ``follow_ids``) compiled, each distinct query once.
    Two queries."""
    follows = Follow.objects.filter(kind=Follow.Kind.SEARCH)
    if follow_ids is not None:
        follows = follows.filter(pk__in=follow_ids)
    rows = list(follows.order_by("pk").values_list("pk", "query"))
    scopes: dict[int, set[int]] = defaultdict(set)
    for follow_id, category_id in Follow.category_scope.through.objects.filter(
        follow_id__in=[pk for pk, _ in rows]
    ).values_list("follow_id", "category_id"):
        scopes[follow_id].add(category_id)
    compiled: dict[str, Rule | None] = {}
    searches = []
    for pk, query in rows:
        if query not in compiled:
            try:
                compiled[query] = compile_rule(query)
            except RuleSyntaxError:
                # Only possible for rows written around the service; skip rather than fail
                # the whole batch for every other user.
                logger.warning("Saved search %s does not parse; skipped: %r", pk, query)
                compiled[query] = None
        if compiled[query] is not None:
            searches.append(_SavedSearch(pk, compiled[query], frozenset(scopes[pk])))
    return searches


def search_matches_create(
    *, paper_ids: Iterable[int], follow_ids: Sequence[int] | None = None
) -> int:
    """Match saved searches (all, or the follows ``follow_ids``) against the papers
    ``paper_ids`` (pks; unknown ones ignored) and store the matches as ``SearchMatch`` rows.

    A paper matches when the query matches its title and abstract (folded once per paper) and,
    for a search with a category scope, its primary category or a cross-list is in it. The
    topic scope is applied when reading (see the module docstring). Papers go in batches of
    ``MATCH_BATCH_SIZE``: two reads and one ``INSERT ... ON CONFLICT DO NOTHING`` each, so
    running it twice leaves the same database. Returns the number of matches found (new or
    already stored).
    """
    searches = _saved_searches(follow_ids)
    if not searches:
        return 0
    found = 0
    batch: list[int] = []
    for paper_id in paper_ids:
        batch.append(paper_id)
        if len(batch) == MATCH_BATCH_SIZE:
            found += _match_batch(batch, searches)
            batch = []
    if batch:
        found += _match_batch(batch, searches)
    return found


@transaction.atomic
def _match_batch(paper_ids: list[int], searches: list[_SavedSearch]) -> int:
    papers = Paper.objects.filter(pk__in=paper_ids).values_list(
        "pk", "title", "abstract", "primary_category_id"
    )
    cross_lists: dict[int, set[int]] = defaultdict(set)
    for paper_id, category_id in Paper.cross_lists.through.objects.filter(
        paper_id__in=paper_ids
    ).values_list("paper_id", "category_id"):
        cross_lists[paper_id].add(category_id)
    matches = []
    for paper_id, title, abstract, primary_category_id in papers:
        folded = paper_text(title, abstract)
        category_ids = {primary_category_id, *cross_lists[paper_id]}
        verdicts: dict[int, bool] = {}  # one regex run per distinct query
        for search in searches:
            if search.category_ids and search.category_ids.isdisjoint(category_ids):
                continue
            key = id(search.rule)
            if key not in verdicts:
                verdicts[key] = search.rule.matches_folded(folded)
            if verdicts[key]:
                matches.append(SearchMatch(follow_id=search.follow_id, paper_id=paper_id))
    SearchMatch.objects.bulk_create(matches, ignore_conflicts=True, batch_size=MATCH_BATCH_SIZE)
    return len(matches)


def search_matches_backfill(*, follow: Follow) -> int:
    """Match the saved search ``follow`` against recent papers: those submitted in the
    ``FOLLOWS_SEARCH_BACKFILL_DAYS`` days (default 90) up to the newest submitted date stored
    (so historical data works), at most ``FOLLOWS_SEARCH_BACKFILL_MAX_PAPERS`` (default
    50,000) of the newest, prefiltered in SQL by the category scope. Returns the number of
    matches found; idempotent (see :func:`search_matches_create`)."""
    if follow.kind != Follow.Kind.SEARCH:
        return 0
    newest = Paper.objects.aggregate(newest=Max("submitted"))["newest"]
    if newest is None:
        return 0
    days = settings.FOLLOWS_SEARCH_BACKFILL_DAYS
    papers = Paper.objects.filter(submitted__gt=newest - dt.timedelta(days=days))
    category_ids = list(follow.category_scope.values_list("pk", flat=True))
    if category_ids:
        papers = papers.filter(
            Q(primary_category_id__in=category_ids)
            | Q(
                pk__in=Paper.cross_lists.through.objects.filter(
                    category_id__in=category_ids
                ).values("paper_id")
            )
        )
    limit = settings.FOLLOWS_SEARCH_BACKFILL_MAX_PAPERS
    paper_ids = list(papers.newest_first().values_list("pk", flat=True)[:limit])
    return search_matches_create(paper_ids=paper_ids, follow_ids=[follow.pk])


# --- import ----------------------------------------------------------------------------------


def _entry_name(index: int, entry: object) -> str:
    """ "entry 3 (topic 'agents')": how an import error names the entry (1-based)."""
    if isinstance(entry, dict):
        if entry.get("kind") == Follow.Kind.TOPIC and isinstance(entry.get("topic"), str):
            return f"entry {index} (topic {entry['topic']!r})"
        if entry.get("kind") == Follow.Kind.SEARCH and isinstance(entry.get("query"), str):
            return f"entry {index} (search {entry['query'][:60]!r})"
        if entry.get("kind") == Follow.Kind.AUTHOR and isinstance(entry.get("author"), int):
            return f"entry {index} (author {entry['author']})"
    return f"entry {index}"


def _unstorable(text: str) -> bool:
    """Whether ``text`` holds what a JSON file can spell but the database cannot store: a NUL
    (``\\u0000``) or an unpaired surrogate (``\\ud800``)."""
    return "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text)


def _string_list(entry: dict, key: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{key!r} must be a list of strings")
    return value


def _import_entry(entry: object):
    """Check one entry of an import file; returns ("topic", Topic, frequency), ("author",
    Author, frequency) or ("search", _CleanSearch, frequency); raises ``ValidationError``
    saying what is wrong."""
    if not isinstance(entry, dict):
        raise ValidationError("must be an object")
    for key, value in entry.items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and _unstorable(text):
                raise ValidationError(f"{key!r} holds a NUL or an unpaired surrogate character")
    kind = entry.get("kind")
    frequency = _clean_frequency(entry.get("digest_frequency"))
    if kind == Follow.Kind.TOPIC:
        slug = entry.get("topic")
        if not isinstance(slug, str) or not slug.strip():
            raise ValidationError("'topic' must be a topic slug")
        topics, unknown = topics_resolve([slug])
        if unknown:
            raise ValidationError(f"unknown topic {slug!r}")
        return kind, topics[0], frequency
    if kind == Follow.Kind.SEARCH:
        search = _clean_search(
            query=entry.get("query"),
            topics=_string_list(entry, "topics"),
            categories=_string_list(entry, "categories"),
        )
        return kind, search, frequency
    if kind == Follow.Kind.AUTHOR:
        author_id = entry.get("author")
        if not isinstance(author_id, int) or isinstance(author_id, bool):
            raise ValidationError("'author' must be an author id (a whole number)")
        author = Author.objects.filter(pk=author_id).first()
        if author is None:
            raise ValidationError(f"unknown author {author_id}")
        return kind, author, frequency
    raise ValidationError(f"'kind' must be 'topic', 'author' or 'search', not {kind!r}")


def _messages(error: ValidationError) -> str:
    return "; ".join(message.rstrip(".") for message in error.messages)


@transaction.atomic
def follows_import(*, user, content: bytes) -> int:
    """Add the follows in an export file (``content``: the file's bytes, UTF-8 JSON as
    ``follows.selectors.follows_export`` writes it) to ``user``'s follows; returns the number
    of follows created.

    Idempotent: follows the user already has are left as they are (their digest frequency
    too), as are repeats within the file. All or nothing: the file is refused as a whole,
    nothing written, by a ``ValidationError`` whose messages name each bad entry (1-based) and
    what is wrong: larger than ``FOLLOWS_IMPORT_MAX_BYTES`` (default 1 MB), not UTF-8 JSON
    (line and column), not an object, ``version`` other than 1, more than
    ``FOLLOWS_IMPORT_MAX_FOLLOWS`` entries (default 1000), an unknown ``kind``, topic slug or
    category code, a query that does not parse (reason and position), a bad frequency.
    """
    max_bytes = settings.FOLLOWS_IMPORT_MAX_BYTES
    max_follows = settings.FOLLOWS_IMPORT_MAX_FOLLOWS
    if len(content) > max_bytes:
        raise ValidationError(f"The file is too large: at most {max_bytes:,} bytes are accepted.")
    try:
        data = json.loads(content.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValidationError(f"The file is not UTF-8 text (byte {error.start}).") from None
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"The file is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    except RecursionError:
        raise ValidationError("The file is not valid JSON: nested too deeply.") from None
    if not isinstance(data, dict):
        raise ValidationError("The file must hold a JSON object with 'version' and 'follows'.")
    if data.get("version") != EXPORT_VERSION:
        raise ValidationError(
            f"Unsupported export version {data.get('version')!r}; this site reads version "
            f"{EXPORT_VERSION}."
        )
    entries = data.get("follows")
    if not isinstance(entries, list):
        raise ValidationError("'follows' must be a list.")
    if len(entries) > max_follows:
        raise ValidationError(
            f"The file lists {len(entries):,} follows; at most {max_follows:,} are accepted."
        )
    cleaned, errors = [], []
    for index, entry in enumerate(entries, start=1):
        try:
            cleaned.append(_import_entry(entry))
        except ValidationError as error:
            errors.append(f"{_entry_name(index, entry)}: {_messages(error)}.")
    if errors:
        raise ValidationError(errors)
    before = Follow.objects.filter(user=user).count()
    for kind, target, frequency in cleaned:
        if kind == Follow.Kind.TOPIC:
            follow_create(user=user, topic=target, digest_frequency=frequency)
        elif kind == Follow.Kind.AUTHOR:
            follow_author_create(user=user, author=target, digest_frequency=frequency)
        else:
            _search_follow_save(user=user, search=target, digest_frequency=frequency)
    return Follow.objects.filter(user=user).count() - before
