"""Storing arXiv records as papers, batch by batch, with bulk queries: :func:`papers_upsert`.

Each batch is validated (``papers.ingest.checks``) and merged with what is stored
(``papers.ingest.merge``) first, then written in one transaction. The pieces the snapshot
backfill (``papers.ingest.backfill``) shares are public here: :func:`paper_states_load` reads
what is stored, :class:`PaperPlan` is one paper to write, :func:`plans_write` is the ORM writer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import islice

from django.conf import settings
from django.db import connection, transaction
from django.db.models.constants import OnConflict

from papers.author_services import author_ids_current
from papers.categories import category_ids_ensure
from papers.models import Affiliation, Author, Authorship, Paper, PaperAffiliation, PaperVersion
from papers.records import ArxivRecord, ParseError
from papers.signals import papers_stored
from topicsite.signals import content_changed_on_commit

from .checks import record_prepare
from .deleted import papers_live_changed_on_commit
from .merge import ROW_FIELDS, AuthorState, PaperState, VersionState, paper_state_merge

__all__ = [
    "IngestResult",
    "PaperPlan",
    "paper_states_load",
    "papers_upsert",
    "plans_write",
]

logger = logging.getLogger(__name__)

# Rows per INSERT: HEP papers list thousands of authors, and PostgreSQL takes at most 65535
# parameters per statement.
WRITE_BATCH_SIZE = 1000
# Ids per lookup query, for the same reason.
LOOKUP_CHUNK = 5000
_UPDATE_FIELDS = [
    *ROW_FIELDS,
    "primary_category",
    "author_count",
    "affiliation_count",
    "updated_at",
]

CrossListThrough = Paper.cross_lists.through
AuthorshipAffiliation = Authorship.affiliations.through


@dataclass
class IngestResult:
    """What :func:`papers_upsert` did.

    ``created`` / ``updated`` / ``unchanged``: counts of papers (a paper reported twice in one
    call counts once per batch it appears in); ``duplicates``: records that repeated a paper
    already given in the same call (merged with it, as two reports of the paper are);
    ``paper_ids``: primary keys of the papers
    created or changed, in the order stored; ``errors``: one :class:`ParseError` per rejected
    record, naming the source (file or URL) and the record (arXiv identifier) and why.
    """

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0
    paper_ids: list[int] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return len(self.errors)

    def add(self, other: IngestResult) -> None:
        """Accumulate ``other`` into this result."""
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.duplicates += other.duplicates
        self.paper_ids.extend(other.paper_ids)
        self.errors.extend(other.errors)


@dataclass
class PaperPlan:
    """One paper to write: the merged ``state``, the stored ``old`` one (None for a new paper)
    and the row's ``pk`` once known; ``row_written`` once its paper row is in the table
    (inserted by :func:`_claim_new`), so that :func:`plans_write` leaves it."""

    state: PaperState
    old: PaperState | None
    pk: int | None = None
    row_written: bool = False

    @property
    def cross_lists_changed(self) -> bool:
        return self.old is None or self.old.cross_lists != self.state.cross_lists

    @property
    def authors_changed(self) -> bool:
        return self.old is None or self.old.authors != self.state.authors

    @property
    def withdrawn_changed(self) -> bool:
        """A stored paper became withdrawn or stopped being so (it starts or stops counting)."""
        return self.old is not None and self.old.withdrawn != self.state.withdrawn

    def changed_versions(self) -> dict[int, VersionState]:
        old_versions = self.old.versions if self.old else {}
        return {
            number: version
            for number, version in self.state.versions.items()
            if old_versions.get(number) != version
        }


def papers_upsert(
    *, records: Iterable[ArxivRecord], batch_size: int | None = None, source: str = ""
) -> IngestResult:
    """Store ``records`` as papers, ``batch_size`` records per transaction.

    - One paper per canonical arXiv identifier (``1234.5678v2`` and ``1234.5678`` are one);
      several reports of a paper, in one call or across calls and sources, are merged as
      ``papers.ingest.merge`` says; a paper whose merged data equals what is stored is not written
      at all (counted ``unchanged``).
    - Categories are mapped to canonical codes (``taxonomy.canonical_category``); the first is
      the primary category, the others the cross-lists (deduplicated, never the primary).
      ``Category`` rows missing from the table are created from the taxonomy.
    - Each batch is validated first, the same way on PostgreSQL and SQLite. A record is
      rejected (a :class:`ParseError` in the result naming ``source`` — or the record's own
      source label when ``source`` is empty —, the arXiv identifier and the field at fault)
      and the rest of the batch is stored when it has: an invalid identifier (named escaped
      when it holds unstorable characters); an unknown category or none; no submitted date;
      a NUL character, another C0 control character (all but tab, line feed and carriage
      return) or a lone UTF-16 surrogate in any text (title, abstract, comments, author name
      parts and raw names, affiliations ...: the record is rejected rather than silently
      altered); a title, abstract or comments longer than ``checks.TEXT_LIMITS`` (1000,
      10000, 2000 characters); text longer than its column (DOI,
      report number, licence, submitter 255, author name 300, keyname and forenames 200,
      suffix 50, affiliation 500, version source type 8 characters); a version number (of a
      version, of the identifier's ``vN`` or ``latest_version``) outside 1..``MAX_VERSION``;
      a version size outside 0..``SIZE_KB_MAX`` kb; a submitted, updated, version or OAI
      datestamp date before ``EARLIEST_DATE`` (1991-01-01) or more than ``FUTURE_TOLERANCE``
      (2 days) after today, UTC. Versions lists are otherwise taken as given: some formats
      list only the latest version, or none (then the version is unknown, None).
    - Stored but flagged: a record without a title gets ``Paper.TITLE_PLACEHOLDER`` and
      ``title_missing``; one whose title, abstract or author names needed a mojibake repair
      gets ``text_repaired`` (the raw names are kept on the authorships). The DOI field is
      split into its valid DOIs (``dois``). A record repeating a paper given earlier in the
      same call is merged with it and counted in ``duplicates``.
    - The batch is then written in one transaction with bulk queries: a failure leaves nothing
      of it written and propagates. Existing papers are read with their rows locked; papers
      new to this transaction are inserted only where no row has appeared meanwhile, and a
      paper another transaction stored after the read is merged with what it stored, so with
      concurrent harvests of overlapping data each paper is counted ``created`` once and an
      older report never overwrites a newer one.
    - After each batch commits, ``papers_stored`` is sent (``sender=Paper``,
      ``paper_ids=[...]``) with the papers created or changed in it, unless there are none.

    ``batch_size`` defaults to ``settings.ARXIV_INGEST_BATCH_SIZE``. Works on PostgreSQL and
    SQLite. Returns an :class:`IngestResult`.
    """
    size = batch_size or settings.ARXIV_INGEST_BATCH_SIZE
    if size < 1:
        raise ValueError(f"batch_size must be at least 1, not {size}")
    result = IngestResult()
    iterator = iter(records)
    seen: set[str] = set()
    while batch := list(islice(iterator, size)):
        result.add(_upsert_batch(batch, source=source, seen=seen))
    return result


def _upsert_batch(records: list[ArxivRecord], *, source: str, seen: set[str]) -> IngestResult:
    result = IngestResult()
    prepared: dict[str, PaperState] = {}
    author_parts: dict[str, dict[str, str]] = {}
    for record in records:
        try:
            state = record_prepare(record, source=source, author_parts=author_parts)
        except ParseError as error:
            result.errors.append(error)
            logger.warning("rejected %s", error)
            continue
        # The same paper twice in one call (a page listing it twice): counted, and merged
        # like two reports of the paper from different calls.
        if state.arxiv_id in seen:
            result.duplicates += 1
            logger.info("%s: %s appears again", source or record.source, state.arxiv_id)
        seen.add(state.arxiv_id)
        prepared[state.arxiv_id] = paper_state_merge(prepared.get(state.arxiv_id), state)
    if not prepared:
        return result

    with transaction.atomic():
        stored = paper_states_load(sorted(prepared))
        plans = []
        for arxiv_id, state in prepared.items():
            pk, old = stored.get(arxiv_id, (None, None))
            merged = paper_state_merge(old, state)
            if merged == old:
                result.unchanged += 1
            else:
                plans.append(PaperPlan(state=merged, old=old, pk=pk))
        plans, raced = _claim_new(plans)
        result.unchanged += raced
        if plans:
            plans_write(plans, author_parts)
            result.created = sum(1 for plan in plans if plan.old is None)
            result.updated = len(plans) - result.created
            result.paper_ids = [plan.pk for plan in plans]
            content_changed_on_commit()
            papers_live_changed_on_commit(plan.pk for plan in plans if plan.withdrawn_changed)
            transaction.on_commit(
                partial(papers_stored.send, sender=Paper, paper_ids=list(result.paper_ids))
            )
    return result


def _chunks(items: list, size: int = LOOKUP_CHUNK) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def paper_states_load(arxiv_ids: list[str]) -> dict[str, tuple[int, PaperState]]:
    """Stored state of the given papers, ``{arxiv_id: (pk, PaperState)}`` for those stored,
    locking their rows until the transaction ends (call inside one)."""
    rows = []
    for ids in _chunks(arxiv_ids):
        rows.extend(
            Paper.objects.select_for_update(of=("self",))
            .filter(arxiv_id__in=ids)
            .order_by("arxiv_id")
            .values("pk", "arxiv_id", "primary_category__code", *ROW_FIELDS)
        )
    if not rows:
        return {}
    pks = [row["pk"] for row in rows]
    cross_lists: dict[int, set[str]] = {pk: set() for pk in pks}
    versions: dict[int, dict[int, VersionState]] = {pk: {} for pk in pks}
    authors: dict[int, list[tuple[int, str, str]]] = {pk: [] for pk in pks}
    affiliations: dict[int, list[str]] = {}
    for chunk in _chunks(pks):
        for paper_id, code in CrossListThrough.objects.filter(paper_id__in=chunk).values_list(
            "paper_id", "category__code"
        ):
            cross_lists[paper_id].add(code)
        for paper_id, number, submitted, size_kb, source_type in PaperVersion.objects.filter(
            paper_id__in=chunk
        ).values_list("paper_id", "number", "submitted", "size_kb", "source_type"):
            versions[paper_id][number] = VersionState(submitted, size_kb, source_type)
        for authorship_id, paper_id, name, name_raw in (
            Authorship.objects.filter(paper_id__in=chunk)
            .order_by("paper_id", "position")
            .values_list("pk", "paper_id", "author__name", "name_raw")
        ):
            authors[paper_id].append((authorship_id, name, name_raw))
        # Through rows keep insertion order, which is the order the source listed them in.
        for authorship_id, name in (
            AuthorshipAffiliation.objects.filter(authorship__paper_id__in=chunk)
            .order_by("pk")
            .values_list("authorship_id", "affiliation__name")
        ):
            affiliations.setdefault(authorship_id, []).append(name)
    states = {}
    for row in rows:
        pk = row["pk"]
        states[row["arxiv_id"]] = (
            pk,
            PaperState(
                arxiv_id=row["arxiv_id"],
                **{name: row[name] for name in ROW_FIELDS},
                primary=row["primary_category__code"],
                cross_lists=frozenset(cross_lists[pk]),
                versions=dict(sorted(versions[pk].items())),
                authors=tuple(
                    AuthorState(
                        name=name,
                        affiliations=tuple(affiliations.get(aid, ())),
                        name_raw=name_raw,
                    )
                    for aid, name, name_raw in authors[pk]
                ),
            ),
        )
    return states


def _claim_new(plans: list[PaperPlan]) -> tuple[list[PaperPlan], int]:
    """Insert the paper rows of the new papers among ``plans``, unless another transaction
    inserted the same paper after :func:`paper_states_load` looked (concurrent harvests of
    overlapping data); merge those with what that transaction stored instead.

    Row locks cannot cover a row that does not exist yet, so the insert is
    ``INSERT … ON CONFLICT (arxiv_id) DO NOTHING RETURNING``: PostgreSQL makes it wait for a
    concurrent inserter of the same id to finish and then skips the row, and only the rows
    this transaction inserted come back. The skipped papers are then read again, locked, and
    merged like any stored paper, so a report is counted ``created`` (and announced) by exactly
    one transaction and an older report never overwrites a newer one stored meanwhile.

    Returns the plans still to write (``row_written`` set on those inserted here, ``old`` and
    ``pk`` on those merged) and the number found unchanged after the merge. Call inside the
    transaction that called :func:`paper_states_load`.
    """
    new = [plan for plan in plans if plan.old is None]
    if not new:
        return plans, 0
    inserted = _insert_new_rows(new)
    raced = [plan for plan in new if plan.state.arxiv_id not in inserted]
    for plan in new:
        if plan.state.arxiv_id in inserted:
            plan.pk = inserted[plan.state.arxiv_id]
            plan.row_written = True
    if not raced:
        return plans, 0
    stored = paper_states_load(sorted(plan.state.arxiv_id for plan in raced))
    unchanged = set()
    for plan in raced:
        # A paper deleted again meanwhile stays new: plans_write inserts it.
        pk, old = stored.get(plan.state.arxiv_id, (None, None))
        if old is None:
            continue
        merged = paper_state_merge(old, plan.state)
        if merged == old:
            unchanged.add(plan.state.arxiv_id)
        else:
            plan.state, plan.old, plan.pk = merged, old, pk
    logger.info(
        "%d papers were stored meanwhile by another transaction; merged with them", len(raced)
    )
    return [plan for plan in plans if plan.state.arxiv_id not in unchanged], len(unchanged)


def _insert_new_rows(plans: list[PaperPlan]) -> dict[str, int]:
    """Insert the paper rows of ``plans`` where no row has their arXiv identifier; returns
    ``{arxiv_id: pk}`` of the rows inserted."""
    papers = sorted(_paper_rows(plans, _plan_category_ids(plans)), key=lambda p: p.arxiv_id)
    fields = [f for f in Paper._meta.concrete_fields if not f.primary_key]
    returning = [Paper._meta.get_field("arxiv_id"), Paper._meta.pk]
    size = min(WRITE_BATCH_SIZE, connection.ops.bulk_batch_size(fields, papers))
    inserted: dict[str, int] = {}
    for chunk in _chunks(papers, size):
        # What bulk_create(ignore_conflicts=True) runs, with the rows inserted returned
        # (bulk_create returns none then): ON CONFLICT DO NOTHING (INSERT OR IGNORE on
        # SQLite) ... RETURNING, through Django's own insert, which fills created_at and
        # updated_at and uses UNNEST on PostgreSQL. A single skipped row comes back as None.
        rows = Paper.objects._insert(
            chunk, fields=fields, returning_fields=returning, on_conflict=OnConflict.IGNORE
        )
        inserted.update(row for row in rows if row)
    return inserted


def _plan_category_ids(plans: list[PaperPlan]) -> dict[str, int]:
    return category_ids_ensure(
        {plan.state.primary for plan in plans}
        | {code for plan in plans for code in plan.state.cross_lists}
    )


def _paper_rows(plans: list[PaperPlan], category_ids: dict[str, int]) -> list[Paper]:
    return [
        Paper(
            arxiv_id=plan.state.arxiv_id,
            **{name: getattr(plan.state, name) for name in ROW_FIELDS},
            primary_category_id=category_ids[plan.state.primary],
            author_count=len(plan.state.authors),
            affiliation_count=len(plan.state.affiliations_in_order()),
        )
        for plan in plans
    ]


def plans_write(plans: list[PaperPlan], author_parts: dict[str, dict[str, str]]) -> None:
    """Write the planned papers with bulk queries; sets ``plan.pk``. Paper rows are upserted
    on ``arxiv_id`` except those already written (``plan.row_written``). Call inside a
    transaction."""
    category_ids = _plan_category_ids(plans)

    papers = _paper_rows([plan for plan in plans if not plan.row_written], category_ids)
    if papers:
        # One row order for every worker, so concurrent batches lock rows in the same order.
        papers.sort(key=lambda paper: paper.arxiv_id)
        Paper.objects.bulk_create(
            papers,
            batch_size=WRITE_BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["arxiv_id"],
            update_fields=_UPDATE_FIELDS,
        )
        pks = {paper.arxiv_id: paper.pk for paper in papers}
        if any(pk is None for pk in pks.values()):
            # Databases that cannot return ids from an upsert: look them up.
            pks = dict(Paper.objects.filter(arxiv_id__in=list(pks)).values_list("arxiv_id", "pk"))
        for plan in plans:
            if not plan.row_written:
                plan.pk = pks[plan.state.arxiv_id]

    _write_cross_lists([plan for plan in plans if plan.cross_lists_changed], category_ids)
    _write_versions(plans)
    _write_authors([plan for plan in plans if plan.authors_changed], author_parts)


def _write_cross_lists(plans: list[PaperPlan], category_ids: dict[str, int]) -> None:
    if not plans:
        return
    CrossListThrough.objects.filter(paper_id__in=[plan.pk for plan in plans]).delete()
    CrossListThrough.objects.bulk_create(
        [
            CrossListThrough(paper_id=plan.pk, category_id=category_ids[code])
            for plan in plans
            for code in sorted(plan.state.cross_lists)
        ],
        batch_size=WRITE_BATCH_SIZE,
    )


def _write_versions(plans: list[PaperPlan]) -> None:
    rows = [
        PaperVersion(
            paper_id=plan.pk,
            number=number,
            submitted=version.submitted,
            size_kb=version.size_kb,
            source_type=version.source_type,
        )
        for plan in plans
        for number, version in plan.changed_versions().items()
    ]
    if rows:
        rows.sort(key=lambda row: (row.paper_id, row.number))
        PaperVersion.objects.bulk_create(
            rows,
            batch_size=WRITE_BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["paper", "number"],
            update_fields=["submitted", "size_kb", "source_type"],
        )


def _write_authors(plans: list[PaperPlan], author_parts: dict[str, dict[str, str]]) -> None:
    """Replace the authorships and paper affiliations of ``plans`` by their new author lists."""
    if not plans:
        return
    paper_ids = [plan.pk for plan in plans]
    names = sorted({author.name for plan in plans for author in plan.state.authors})
    affiliation_names = sorted(
        {name for plan in plans for author in plan.state.authors for name in author.affiliations}
    )
    # A name a curator merged into another author credits that author.
    author_ids = author_ids_current(
        _ids_by_name(Author, names, lambda name: Author(name=name, **author_parts.get(name, {})))
    )
    affiliation_ids = _ids_by_name(
        Affiliation, affiliation_names, lambda name: Affiliation(name=name)
    )

    AuthorshipAffiliation.objects.filter(authorship__paper_id__in=paper_ids).delete()
    Authorship.objects.filter(paper_id__in=paper_ids).delete()
    PaperAffiliation.objects.filter(paper_id__in=paper_ids).delete()

    authorships = [
        Authorship(
            paper_id=plan.pk,
            author_id=author_ids[author.name],
            position=position,
            name_raw=author.name_raw,
        )
        for plan in plans
        for position, author in enumerate(plan.state.authors)
    ]
    Authorship.objects.bulk_create(authorships, batch_size=WRITE_BATCH_SIZE)
    if any(authorship.pk is None for authorship in authorships):
        # Databases that cannot return ids from a bulk insert: look them up.
        by_place = {
            (paper_id, position): pk
            for paper_id, position, pk in Authorship.objects.filter(
                paper_id__in=paper_ids
            ).values_list("paper_id", "position", "pk")
        }
        for authorship in authorships:
            authorship.pk = by_place[(authorship.paper_id, authorship.position)]

    authors_in_order = [author for plan in plans for author in plan.state.authors]
    AuthorshipAffiliation.objects.bulk_create(
        [
            AuthorshipAffiliation(authorship_id=authorship.pk, affiliation_id=affiliation_ids[name])
            for authorship, author in zip(authorships, authors_in_order, strict=True)
            for name in author.affiliations
        ],
        batch_size=WRITE_BATCH_SIZE,
    )
    PaperAffiliation.objects.bulk_create(
        [
            PaperAffiliation(
                paper_id=plan.pk, affiliation_id=affiliation_ids[name], position=position
            )
            for plan in plans
            for position, name in enumerate(plan.state.affiliations_in_order())
        ],
        batch_size=WRITE_BATCH_SIZE,
    )


def _ids_by_name(model, names: list[str], build) -> dict[str, int]:
    """Primary keys of ``model`` rows by their unique ``name``, creating the missing ones."""
    ids: dict[str, int] = {}
    for chunk in _chunks(names):
        found = dict(model.objects.filter(name__in=chunk).values_list("name", "pk"))
        missing = [name for name in chunk if name not in found]
        if missing:
            # ignore_conflicts: another worker may create the same author meanwhile.
            model.objects.bulk_create(
                [build(name) for name in missing],
                batch_size=WRITE_BATCH_SIZE,
                ignore_conflicts=True,
            )
            found.update(model.objects.filter(name__in=missing).values_list("name", "pk"))
        ids.update(found)
    return ids
