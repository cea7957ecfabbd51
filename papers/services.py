"""Writes for papers: the category list, the ingestion of arXiv records, and harvest runs.

- :func:`category_sync` upserts arXiv's taxonomy into :class:`~papers.models.Category`.
- :func:`papers_upsert` stores :class:`~papers.records.ArxivRecord` objects from any source as
  papers: one paper per canonical arXiv identifier, idempotent, in batches that are validated
  first and then written in one transaction each with bulk queries; after each batch commits,
  ``papers.signals.papers_stored`` announces the papers created or changed.
- :func:`harvest_run` pulls chunks from a source (``papers.sources``) and stores them page by
  page, keeping an OAI resumption-token checkpoint so a failed harvest resumes where it stopped.

How two reports of one paper are merged (so that the order sources arrive in does not matter
and a second import of the same data changes nothing):

- the report with the higher ``(latest_version, updated)`` leads: its title, abstract, dates,
  categories and authors are kept; an older or equal report never overwrites them;
- details a poorer source lacks never wipe what a richer one stored: versions are merged by
  number (known dates, sizes and source types kept), blank fields (DOI, journal reference,
  comments ...) are filled from the other report of the same or an older version, and
  affiliations are kept when the new report lists the same authors without any.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from .identifiers import InvalidArxivId, parse_arxiv_id
from .models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from .records import ArxivRecord, ParseError
from .signals import papers_stored
from .sources import SourceError, sources_for
from .taxonomy import UnknownCategory, all_categories, canonical_category, get_category

__all__ = [
    "HarvestSummary",
    "IngestResult",
    "category_sync",
    "harvest_run",
    "papers_upsert",
]

logger = logging.getLogger(__name__)

# Resumption tokens expire on arXiv's side within about a day, so an older checkpoint is useless.
CHECKPOINT_TTL = 24 * 60 * 60
# Rows per INSERT: HEP papers list thousands of authors, and PostgreSQL takes at most 65535
# parameters per statement.
WRITE_BATCH_SIZE = 1000
# Ids per lookup query, for the same reason.
LOOKUP_CHUNK = 5000
SUMMARY_ERROR_LIMIT = 1000

# Plain fields copied from a record to the paper row, compared to decide whether it changed.
_TEXT_FIELDS = (
    "title",
    "title_raw",
    "abstract",
    "abstract_raw",
    "comments",
    "journal_ref",
    "doi",
    "report_no",
    "license",
    "submitter",
)
_ROW_FIELDS = (
    *_TEXT_FIELDS,
    "latest_version",
    "submitted",
    "updated",
    "withdrawn",
    "datestamp",
    "source",
)
# Fields a source may simply not carry (oai_dc has no submitter, Atom no report number):
# blank in one report does not mean blank on arXiv.
_FILLABLE = ("comments", "journal_ref", "doi", "report_no", "license", "submitter")
_UPDATE_FIELDS = [
    *_ROW_FIELDS,
    "primary_category",
    "author_count",
    "affiliation_count",
    "updated_at",
]
_MAX_LENGTHS = {
    "doi": Paper._meta.get_field("doi").max_length,
    "report_no": Paper._meta.get_field("report_no").max_length,
    "license": Paper._meta.get_field("license").max_length,
    "submitter": Paper._meta.get_field("submitter").max_length,
    "source": Paper._meta.get_field("source").max_length,
}
_AUTHOR_NAME_MAX = Author._meta.get_field("name").max_length
_AFFILIATION_NAME_MAX = Affiliation._meta.get_field("name").max_length
_AUTHOR_PART_MAX = {
    "keyname": Author._meta.get_field("keyname").max_length,
    "forenames": Author._meta.get_field("forenames").max_length,
    "suffix": Author._meta.get_field("suffix").max_length,
}

CrossListThrough = Paper.cross_lists.through
AuthorshipAffiliation = Authorship.affiliations.through


# --- results --------------------------------------------------------------------------------


@dataclass
class IngestResult:
    """What :func:`papers_upsert` did.

    ``created`` / ``updated`` / ``unchanged``: counts of papers (a paper reported twice in one
    call counts once per batch it appears in); ``paper_ids``: primary keys of the papers
    created or changed, in the order stored; ``errors``: one :class:`ParseError` per rejected
    record, naming the source (file or URL) and the record (arXiv identifier) and why.
    """

    created: int = 0
    updated: int = 0
    unchanged: int = 0
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
        self.paper_ids.extend(other.paper_ids)
        self.errors.extend(other.errors)


@dataclass
class HarvestSummary:
    """What :func:`harvest_run` did: ``pages`` (chunks read), paper counts as in
    :class:`IngestResult`, ``deleted`` (ids OAI reported deleted; papers are kept), and
    ``errors``: rejected records, unparseable pages and refused requests, each naming its
    source and record or line."""

    kind: str
    pages: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    errors: list[Exception] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (a task's return value); at most 1000 error messages."""
        return {
            "kind": self.kind,
            "pages": self.pages,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "error_count": len(self.errors),
            "errors": [str(error) for error in self.errors[:SUMMARY_ERROR_LIMIT]],
        }


# --- categories -----------------------------------------------------------------------------


def category_sync() -> int:
    """Upsert every canonical arXiv category of ``papers.taxonomy`` into ``Category``.

    Aliases (``math.MP``) and subsumed legacy archives (``cmp-lg``) are not stored: papers
    reference their canonical codes. Idempotent; returns the number of categories in the
    taxonomy that are stored (whether created or already there).
    """
    infos = [info for info in all_categories() if info.canonical == info.code]
    with transaction.atomic():
        Category.objects.bulk_create(
            [_category_row(info) for info in infos],
            update_conflicts=True,
            unique_fields=["code"],
            update_fields=["name", "archive", "archive_name", "group", "group_name", "is_active"],
        )
    return len(infos)


def _category_row(info) -> Category:
    return Category(
        code=info.code,
        name=info.name,
        archive=info.archive,
        archive_name=info.archive_name,
        group=info.group,
        group_name=info.group_name,
        is_active=info.is_active,
    )


# --- ingestion ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _VersionState:
    submitted: dt.datetime | None
    size_kb: int | None
    source_type: str


@dataclass(frozen=True)
class _AuthorState:
    name: str
    affiliations: tuple[str, ...]


@dataclass
class _PaperState:
    """Everything stored about one paper, in a form both a record and the database give."""

    arxiv_id: str
    title: str
    title_raw: str
    abstract: str
    abstract_raw: str
    comments: str
    journal_ref: str
    doi: str
    report_no: str
    license: str
    submitter: str
    latest_version: int
    submitted: dt.date
    updated: dt.date | None
    withdrawn: bool
    datestamp: dt.date | None
    source: str
    primary: str
    cross_lists: frozenset[str]
    versions: dict[int, _VersionState]
    authors: tuple[_AuthorState, ...]

    def row_values(self) -> tuple:
        return (*(getattr(self, name) for name in _ROW_FIELDS), self.primary)

    def affiliations_in_order(self) -> list[str]:
        """Distinct affiliations in order of first mention."""
        return list(dict.fromkeys(name for author in self.authors for name in author.affiliations))


@dataclass
class _Plan:
    """One paper to write: ``old`` is None for a new paper."""

    state: _PaperState
    old: _PaperState | None
    pk: int | None = None

    @property
    def cross_lists_changed(self) -> bool:
        return self.old is None or self.old.cross_lists != self.state.cross_lists

    @property
    def authors_changed(self) -> bool:
        return self.old is None or self.old.authors != self.state.authors

    def changed_versions(self) -> dict[int, _VersionState]:
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
      several reports of a paper, in one call or across calls and sources, are merged as the
      module docstring says; a paper whose merged data equals what is stored is not written
      at all (counted ``unchanged``).
    - Categories are mapped to canonical codes (``taxonomy.canonical_category``); the first is
      the primary category, the others the cross-lists (deduplicated, never the primary).
      ``Category`` rows missing from the table are created from the taxonomy.
    - Each batch is validated first: a record with an invalid identifier, an unknown category,
      no category, no title, no submitted date or an over-long field is rejected (an error in
      the result naming ``source`` — or the record's own source label when ``source`` is empty
      — and the arXiv identifier) and the rest of the batch is stored. The batch is then
      written in one transaction with bulk queries: a failure leaves nothing of it written
      and propagates.
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
    while batch := list(islice(iterator, size)):
        result.add(_upsert_batch(batch, source=source))
    return result


def _upsert_batch(records: list[ArxivRecord], *, source: str) -> IngestResult:
    result = IngestResult()
    prepared: dict[str, _PaperState] = {}
    author_parts: dict[str, dict[str, str]] = {}
    for record in records:
        try:
            state = _prepare(record, source=source, author_parts=author_parts)
        except ParseError as error:
            result.errors.append(error)
            logger.warning("rejected %s", error)
            continue
        # The same paper twice in a batch (overlapping API pages): merge like across batches.
        prepared[state.arxiv_id] = _merge(prepared.get(state.arxiv_id), state)
    if not prepared:
        return result

    with transaction.atomic():
        stored = _load_states(sorted(prepared))
        plans = []
        for arxiv_id, state in prepared.items():
            pk, old = stored.get(arxiv_id, (None, None))
            merged = _merge(old, state)
            if merged == old:
                result.unchanged += 1
            else:
                plans.append(_Plan(state=merged, old=old, pk=pk))
        if plans:
            _write(plans, author_parts)
            result.created = sum(1 for plan in plans if plan.old is None)
            result.updated = len(plans) - result.created
            result.paper_ids = [plan.pk for plan in plans]
            transaction.on_commit(
                partial(papers_stored.send, sender=Paper, paper_ids=list(result.paper_ids))
            )
    return result


def _prepare(
    record: ArxivRecord, *, source: str, author_parts: dict[str, dict[str, str]]
) -> _PaperState:
    """Validate ``record`` and turn it into a :class:`_PaperState`; raises ParseError."""
    label = source or record.source

    def reject(message: str, record_id: str) -> ParseError:
        return ParseError(message, source=label, record=record_id)

    raw_id = record.arxiv_id or ""
    try:
        arxiv_id, id_version = parse_arxiv_id(raw_id)
    except InvalidArxivId as error:
        raise reject(str(error), raw_id or "(no identifier)") from None

    codes: list[str] = []
    for code in record.categories:
        try:
            codes.append(canonical_category(code))
        except UnknownCategory:
            raise reject(f"unknown arXiv category {code!r}", arxiv_id) from None
    if not codes:
        raise reject("no category", arxiv_id)
    primary = codes[0]

    title = (record.title or "").strip()
    if not title:
        raise reject("no title", arxiv_id)

    versions = {
        version.number: _VersionState(
            submitted=version.submitted,
            size_kb=version.size_kb,
            source_type=version.source_type or "",
        )
        for version in record.versions
        if version.number >= 1
    }
    submitted = record.submitted
    if submitted is None and 1 in versions and versions[1].submitted is not None:
        submitted = versions[1].submitted.astimezone(dt.UTC).date()
    if submitted is None:
        raise reject("no submitted date", arxiv_id)

    authors = []
    for author in record.authors:
        name = " ".join(author.name.split())
        if not name:
            continue
        affiliations = tuple(
            dict.fromkeys(" ".join(a.split()) for a in author.affiliations if a.strip())
        )
        if len(name) > _AUTHOR_NAME_MAX:
            raise reject(f"author name longer than {_AUTHOR_NAME_MAX} characters", arxiv_id)
        if any(len(a) > _AFFILIATION_NAME_MAX for a in affiliations):
            raise reject(f"affiliation longer than {_AFFILIATION_NAME_MAX} characters", arxiv_id)
        authors.append(_AuthorState(name=name, affiliations=affiliations))
        parts = {part: getattr(author, part)[:limit] for part, limit in _AUTHOR_PART_MAX.items()}
        if any(parts.values()):
            author_parts.setdefault(name, parts)
        else:
            author_parts.setdefault(name, {})

    state = _PaperState(
        arxiv_id=arxiv_id,
        title=title,
        title_raw=record.title_raw or record.title,
        abstract=record.abstract or "",
        abstract_raw=record.abstract_raw or record.abstract or "",
        comments=record.comments or "",
        journal_ref=record.journal_ref or "",
        doi=record.doi or "",
        report_no=record.report_no or "",
        license=record.license or "",
        submitter=record.submitter or "",
        latest_version=max(record.latest_version or 1, id_version or 1, *versions, 1),
        submitted=submitted,
        updated=record.updated,
        withdrawn=bool(record.withdrawn),
        datestamp=record.datestamp,
        source=record.source or "",
        primary=primary,
        cross_lists=frozenset(codes[1:]) - {primary},
        versions=versions,
        authors=tuple(authors),
    )
    for name, limit in _MAX_LENGTHS.items():
        if len(getattr(state, name)) > limit:
            raise reject(f"{name} longer than {limit} characters", arxiv_id)
    return state


def _merge(old: _PaperState | None, new: _PaperState) -> _PaperState:
    """The state to store when ``new`` is reported for a paper stored as ``old``."""
    if old is None:
        return new
    newer = (new.latest_version, new.updated or dt.date.min) > (
        old.latest_version,
        old.updated or dt.date.min,
    )
    same_version = new.latest_version == old.latest_version
    lead, other = (new, old) if newer else (old, new)
    merged = dataclasses.replace(lead)
    if newer or same_version:
        for name in _FILLABLE:
            if not getattr(merged, name) and getattr(other, name):
                setattr(merged, name, getattr(other, name))
    merged.submitted = min(old.submitted, new.submitted)
    merged.updated = lead.updated or other.updated
    merged.datestamp = max((d for d in (old.datestamp, new.datestamp) if d), default=None)
    if new.latest_version > old.latest_version:
        merged.withdrawn = new.withdrawn
    elif same_version:
        # Some formats cannot see a withdrawal (oai_dc has no version stubs): either report
        # of the same version noticing it is enough.
        merged.withdrawn = old.withdrawn or new.withdrawn
    else:
        merged.withdrawn = old.withdrawn
    merged.versions = _merge_versions(lead.versions, other.versions)
    merged.latest_version = max(old.latest_version, new.latest_version, *merged.versions, 1)
    merged.authors = _merge_authors(old.authors, new.authors, newer=newer)
    return merged


def _merge_versions(
    lead: dict[int, _VersionState], other: dict[int, _VersionState]
) -> dict[int, _VersionState]:
    merged = {}
    for number in sorted(lead.keys() | other.keys()):
        first, second = lead.get(number), other.get(number)
        if first is None or second is None:
            merged[number] = first or second
            continue
        merged[number] = _VersionState(
            submitted=first.submitted or second.submitted,
            size_kb=first.size_kb if first.size_kb is not None else second.size_kb,
            source_type=first.source_type or second.source_type,
        )
    return merged


def _merge_authors(
    old: tuple[_AuthorState, ...], new: tuple[_AuthorState, ...], *, newer: bool
) -> tuple[_AuthorState, ...]:
    if not new:
        return old
    if not old:
        return new
    same_names = [a.name for a in old] == [a.name for a in new]
    old_has_affiliations = any(a.affiliations for a in old)
    new_has_affiliations = any(a.affiliations for a in new)
    if newer:
        # A newer report without affiliations for the same authors (oai_dc, Atom) keeps them.
        return old if same_names and not new_has_affiliations else new
    if same_names and new_has_affiliations and not old_has_affiliations:
        return new
    return old


def _chunks(items: list, size: int = LOOKUP_CHUNK) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _load_states(arxiv_ids: list[str]) -> dict[str, tuple[int, _PaperState]]:
    """Stored state of the given papers, locking their rows until the transaction ends."""
    rows = []
    for ids in _chunks(arxiv_ids):
        rows.extend(
            Paper.objects.select_for_update(of=("self",))
            .filter(arxiv_id__in=ids)
            .order_by("arxiv_id")
            .values("pk", "arxiv_id", "primary_category__code", *_ROW_FIELDS)
        )
    if not rows:
        return {}
    pks = [row["pk"] for row in rows]
    cross_lists: dict[int, set[str]] = {pk: set() for pk in pks}
    versions: dict[int, dict[int, _VersionState]] = {pk: {} for pk in pks}
    authors: dict[int, list[tuple[int, str]]] = {pk: [] for pk in pks}
    affiliations: dict[int, list[str]] = {}
    for chunk in _chunks(pks):
        for paper_id, code in CrossListThrough.objects.filter(paper_id__in=chunk).values_list(
            "paper_id", "category__code"
        ):
            cross_lists[paper_id].add(code)
        for paper_id, number, submitted, size_kb, source_type in PaperVersion.objects.filter(
            paper_id__in=chunk
        ).values_list("paper_id", "number", "submitted", "size_kb", "source_type"):
            versions[paper_id][number] = _VersionState(submitted, size_kb, source_type)
        for authorship_id, paper_id, name in (
            Authorship.objects.filter(paper_id__in=chunk)
            .order_by("paper_id", "position")
            .values_list("pk", "paper_id", "author__name")
        ):
            authors[paper_id].append((authorship_id, name))
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
            _PaperState(
                arxiv_id=row["arxiv_id"],
                **{name: row[name] for name in _ROW_FIELDS},
                primary=row["primary_category__code"],
                cross_lists=frozenset(cross_lists[pk]),
                versions=dict(sorted(versions[pk].items())),
                authors=tuple(
                    _AuthorState(name=name, affiliations=tuple(affiliations.get(aid, ())))
                    for aid, name in authors[pk]
                ),
            ),
        )
    return states


def _write(plans: list[_Plan], author_parts: dict[str, dict[str, str]]) -> None:
    """Write the planned papers with bulk queries; sets ``plan.pk``. Call inside a transaction."""
    category_ids = _category_ids(
        {plan.state.primary for plan in plans}
        | {code for plan in plans for code in plan.state.cross_lists}
    )

    papers = [
        Paper(
            arxiv_id=plan.state.arxiv_id,
            **{name: getattr(plan.state, name) for name in _ROW_FIELDS},
            primary_category_id=category_ids[plan.state.primary],
            author_count=len(plan.state.authors),
            affiliation_count=len(plan.state.affiliations_in_order()),
        )
        for plan in plans
    ]
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
        plan.pk = pks[plan.state.arxiv_id]

    _write_cross_lists([plan for plan in plans if plan.cross_lists_changed], category_ids)
    _write_versions(plans)
    _write_authors([plan for plan in plans if plan.authors_changed], author_parts)


def _category_ids(codes: set[str]) -> dict[str, int]:
    """``Category`` ids by canonical code, creating rows missing from the table."""
    found = dict(Category.objects.filter(code__in=codes).values_list("code", "pk"))
    missing = codes - found.keys()
    if missing:
        Category.objects.bulk_create(
            [_category_row(get_category(code)) for code in sorted(missing)],
            ignore_conflicts=True,
        )
        found = dict(Category.objects.filter(code__in=codes).values_list("code", "pk"))
    return found


def _write_cross_lists(plans: list[_Plan], category_ids: dict[str, int]) -> None:
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


def _write_versions(plans: list[_Plan]) -> None:
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


def _write_authors(plans: list[_Plan], author_parts: dict[str, dict[str, str]]) -> None:
    """Replace the authorships and paper affiliations of ``plans`` by their new author lists."""
    if not plans:
        return
    paper_ids = [plan.pk for plan in plans]
    names = sorted({author.name for plan in plans for author in plan.state.authors})
    affiliation_names = sorted(
        {name for plan in plans for author in plan.state.authors for name in author.affiliations}
    )
    author_ids = _ids_by_name(
        Author, names, lambda name: Author(name=name, **author_parts.get(name, {}))
    )
    affiliation_ids = _ids_by_name(
        Affiliation, affiliation_names, lambda name: Affiliation(name=name)
    )

    AuthorshipAffiliation.objects.filter(authorship__paper_id__in=paper_ids).delete()
    Authorship.objects.filter(paper_id__in=paper_ids).delete()
    PaperAffiliation.objects.filter(paper_id__in=paper_ids).delete()

    authorships = [
        Authorship(paper_id=plan.pk, author_id=author_ids[author.name], position=position)
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


# --- harvest --------------------------------------------------------------------------------


def harvest_run(
    *, kind: str, params: Mapping[str, Any] | None = None, batch_size: int | None = None
) -> HarvestSummary:
    """Harvest from a source and store what it yields, chunk by chunk (page by page).

    ``kind`` and ``params`` are as :func:`papers.sources.sources_for` takes them (``recorded``,
    ``oai``, ``atom``, ``snapshot``). Each chunk goes through :func:`papers_upsert`.

    Reported, not raised (they land in ``summary.errors``): records a parser or the upsert
    rejected, a page that cannot be parsed and a request the source refused (OAI error,
    API error entry); such a page ends its source, and a recorded harvest goes on with the
    next entry. OAI harvests keep a checkpoint (the next resumption token, in the cache for
    a day) after each stored page; a run with the same parameters resumes from it, and it is
    cleared once the list is complete.

    Raises ``ValueError`` for bad parameters, ``papers.sources.HarvestError`` when a request
    fails for good (the checkpoint is kept), ``ManifestError``/``NotRecorded`` for a bad
    recorded directory, and database errors from the upsert.
    """
    params = dict(params or {})
    summary = HarvestSummary(kind=kind)
    checkpoint_key = _checkpoint_key(kind, params) if kind == "oai" else None
    run_params = params
    if checkpoint_key and not params.get("resumption_token"):
        token = cache.get(checkpoint_key)
        if token:
            logger.info("resuming OAI harvest from checkpoint %s", token)
            run_params = {**params, "resumption_token": token}

    completed = True
    for source in sources_for(kind, run_params):
        try:
            for chunk in source.chunks():
                result = papers_upsert(
                    records=chunk.records, batch_size=batch_size, source=chunk.source
                )
                summary.pages += 1
                summary.created += result.created
                summary.updated += result.updated
                summary.unchanged += result.unchanged
                summary.deleted += len(chunk.deleted)
                summary.errors.extend(chunk.errors)
                summary.errors.extend(result.errors)
                for error in chunk.errors:
                    logger.warning("rejected %s", error)
                logger.info(
                    "%s: %d created, %d updated, %d unchanged, %d rejected",
                    chunk.source,
                    result.created,
                    result.updated,
                    result.unchanged,
                    len(chunk.errors) + len(result.errors),
                )
                if checkpoint_key and chunk.resumption_token:
                    cache.set(checkpoint_key, chunk.resumption_token, CHECKPOINT_TTL)
        except (ParseError, SourceError) as error:
            completed = False
            summary.errors.append(error)
            logger.error("harvest stopped for this source: %s", error)
    if checkpoint_key and completed:
        cache.delete(checkpoint_key)
    return summary


def _checkpoint_key(kind: str, params: Mapping[str, Any]) -> str:
    identity = json.dumps({"kind": kind, "params": params}, sort_keys=True, default=str)
    return "papers:harvest-checkpoint:" + hashlib.sha256(identity.encode()).hexdigest()[:32]
