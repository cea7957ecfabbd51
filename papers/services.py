"""Writes for papers: the category list, the ingestion of arXiv records, and harvest runs.

- :func:`category_sync` upserts arXiv's taxonomy into :class:`~papers.models.Category`.
- :func:`papers_upsert` stores :class:`~papers.records.ArxivRecord` objects from any source as
  papers: one paper per canonical arXiv identifier, idempotent, in batches that are validated
  first and then written in one transaction each with bulk queries; after each batch commits,
  ``papers.signals.papers_stored`` announces the papers created or changed.
- :func:`harvest_run` makes a :class:`~papers.models.HarvestRun` and executes it: chunks from
  the sources (``papers.sources``) are stored page by page, each page in one transaction with
  the run's checkpoint, so a failed or killed harvest resumes exactly where it stopped
  (:func:`harvest_run_resume`) and ends equal to an uninterrupted one. One harvest of a kind
  runs at a time, whatever the number of workers (a lock in the cache).

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
import logging
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models.constants import OnConflict
from django.utils import timezone

from topicsite.signals import content_changed_on_commit

from .identifiers import InvalidArxivId, parse_arxiv_id
from .models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    HarvestRun,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from .records import ArxivRecord, ParseError
from .signals import papers_stored
from .sources import Chunk, HarvestError, SourceError, oai_sets, sources_for
from .taxonomy import UnknownCategory, all_categories, canonical_category, get_category

__all__ = [
    "EARLIEST_DATE",
    "FUTURE_TOLERANCE",
    "HarvestLocked",
    "HarvestSummary",
    "IngestResult",
    "MAX_VERSION",
    "SIZE_KB_MAX",
    "category_sync",
    "harvest_run",
    "harvest_run_resume",
    "papers_upsert",
]

logger = logging.getLogger(__name__)

# An incremental OAI harvest starts this long before the day the last one started: datestamps
# are days, and a record changed while that harvest ran must not fall between the two.
INCREMENTAL_OVERLAP = dt.timedelta(days=1)
# Rows per INSERT: HEP papers list thousands of authors, and PostgreSQL takes at most 65535
# parameters per statement.
WRITE_BATCH_SIZE = 1000
# Ids per lookup query, for the same reason.
LOOKUP_CHUNK = 5000
SUMMARY_ERROR_LIMIT = 1000

# What a record may say, checked before anything is written (see ``_check_record``).
# Real papers reach a few dozen versions at most; a typo such as ``v999`` would make every
# later genuine report of the paper look older for ever.
MAX_VERSION = 100
# arXiv opened in August 1991: no paper, version or OAI datestamp is older than this.
EARLIEST_DATE = dt.date(1991, 1, 1)
# How far past today (UTC) a date may lie: arXiv dates a version when it is received, so
# anything later is a typo (a far-future date would become every topic's momentum "as of").
FUTURE_TOLERANCE = dt.timedelta(days=2)
# PositiveIntegerField on PostgreSQL; applied on SQLite too, which would store more.
SIZE_KB_MAX = 2**31 - 1
# Characters no text column can hold: NUL (PostgreSQL refuses it) and lone UTF-16
# surrogates (not encodable as UTF-8, so no driver can send them).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

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
_SOURCE_TYPE_MAX = PaperVersion._meta.get_field("source_type").max_length

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
    """What one execution of a harvest run did (:func:`harvest_run`, :func:`harvest_run_resume`).

    ``run_id`` and ``status`` are the :class:`~papers.models.HarvestRun`'s after the execution
    (``pending`` when it paused to continue in a new task); ``pages`` (chunks stored), paper
    counts as in :class:`IngestResult`, ``deleted`` (ids OAI reported deleted; papers are
    kept), all for this execution (the run holds the totals); ``errors``: rejected records,
    ids asked for and not delivered, unparseable recorded files, each an exception naming its
    source and record or line.
    """

    kind: str
    run_id: int | None = None
    status: str = ""
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
            "run_id": self.run_id,
            "status": self.status,
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
    """One paper to write: ``old`` is None for a new paper; ``row_written`` once its paper row
    is in the table (inserted by :func:`_claim_new`), so that :func:`_write` leaves it."""

    state: _PaperState
    old: _PaperState | None
    pk: int | None = None
    row_written: bool = False

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
    - Each batch is validated first, the same way on PostgreSQL and SQLite. A record is
      rejected (a :class:`ParseError` in the result naming ``source`` — or the record's own
      source label when ``source`` is empty —, the arXiv identifier and the field at fault)
      and the rest of the batch is stored when it has: an invalid identifier (named escaped
      when it holds unstorable characters); an unknown category or none; no title; no
      submitted date; a NUL character or a lone UTF-16 surrogate in any text (title,
      abstract, comments, author name parts, affiliations ...: no column can hold them, so
      the record is rejected rather than silently altered); text longer than its column (DOI,
      report number, licence, submitter 255, author name 300, keyname and forenames 200,
      suffix 50, affiliation 500, version source type 8 characters); a version number (of a
      version, of the identifier's ``vN`` or ``latest_version``) outside 1..``MAX_VERSION``;
      a version size outside 0..``SIZE_KB_MAX`` kb; a submitted, updated, version or OAI
      datestamp date before ``EARLIEST_DATE`` (1991-01-01) or more than ``FUTURE_TOLERANCE``
      (2 days) after today, UTC. Versions lists are otherwise taken as given: some formats
      list only the latest version, or none.
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
        plans, raced = _claim_new(plans)
        result.unchanged += raced
        if plans:
            _write(plans, author_parts)
            result.created = sum(1 for plan in plans if plan.old is None)
            result.updated = len(plans) - result.created
            result.paper_ids = [plan.pk for plan in plans]
            content_changed_on_commit()
            transaction.on_commit(
                partial(papers_stored.send, sender=Paper, paper_ids=list(result.paper_ids))
            )
    return result


def _prepare(
    record: ArxivRecord, *, source: str, author_parts: dict[str, dict[str, str]]
) -> _PaperState:
    """Validate ``record`` and turn it into a :class:`_PaperState`.

    What is checked is listed in :func:`papers_upsert`. Raises ParseError naming ``source``
    (or the record's own source label), the record (its canonical arXiv identifier; the
    identifier as given, escaped, when that is what is wrong) and the field at fault.
    ``author_parts`` collects the split name parts of the record's authors by display name.
    """
    label = source or record.source

    def reject(message: str, record_id: str) -> ParseError:
        return ParseError(message, source=label, record=record_id)

    raw_id = record.arxiv_id or ""
    try:
        arxiv_id, id_version = parse_arxiv_id(raw_id)
    except InvalidArxivId as error:
        raise reject(str(error), _printable(str(raw_id)) or "(no identifier)") from None
    try:
        _check_record(record, id_version=id_version)
    except _Invalid as error:
        raise reject(str(error), arxiv_id) from None

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
    }
    submitted = record.submitted
    if submitted is None and 1 in versions and versions[1].submitted is not None:
        submitted = versions[1].submitted.astimezone(dt.UTC).date()
    if submitted is None:
        raise reject("no submitted date", arxiv_id)

    authors = []
    for position, author in enumerate(record.authors, start=1):
        name = " ".join(author.name.split())
        if not name:
            continue
        affiliations = tuple(
            dict.fromkeys(" ".join(a.split()) for a in author.affiliations if a.strip())
        )
        if len(name) > _AUTHOR_NAME_MAX:
            raise reject(
                f"author {position} name longer than {_AUTHOR_NAME_MAX} characters", arxiv_id
            )
        if any(len(a) > _AFFILIATION_NAME_MAX for a in affiliations):
            raise reject(
                f"author {position} affiliation longer than {_AFFILIATION_NAME_MAX} characters",
                arxiv_id,
            )
        parts = {part: getattr(author, part) or "" for part in _AUTHOR_PART_MAX}
        for part, limit in _AUTHOR_PART_MAX.items():
            if len(parts[part]) > limit:
                raise reject(f"author {position} {part} longer than {limit} characters", arxiv_id)
        authors.append(_AuthorState(name=name, affiliations=affiliations))
        author_parts.setdefault(name, parts if any(parts.values()) else {})

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


class _Invalid(ValueError):
    """A record field no paper can have; the message names the field (never quotes its text)."""


# Every text a record carries to a column, by the field name errors use.
_RECORD_TEXTS = (*_TEXT_FIELDS, "source")
_AUTHOR_TEXTS = ("name", "keyname", "forenames", "suffix")


def _check_record(record: ArxivRecord, *, id_version: int | None) -> None:
    """Raise :class:`_Invalid` for what the database would refuse or what would poison the
    site: text no column can hold, version numbers outside 1..``MAX_VERSION``, sizes outside
    0..``SIZE_KB_MAX`` kb, over-long source types, dates before ``EARLIEST_DATE`` or more than
    ``FUTURE_TOLERANCE`` after today (UTC)."""
    for name in _RECORD_TEXTS:
        _check_text(name, getattr(record, name))
    for position, author in enumerate(record.authors, start=1):
        # Field names are only spelled out for an error: HEP papers list thousands of authors.
        for part in _AUTHOR_TEXTS:
            if _unstorable(getattr(author, part)):
                _check_text(f"author {position} {part}", getattr(author, part))
        for affiliation in author.affiliations:
            if _unstorable(affiliation):
                _check_text(f"author {position} affiliation", affiliation)

    if id_version is not None:
        _check_version_number("identifier version", id_version)
    latest_date = timezone.now().date() + FUTURE_TOLERANCE
    for version in record.versions:
        _check_version_number("version number", version.number)
        if version.size_kb is not None and not (
            isinstance(version.size_kb, int) and 0 <= version.size_kb <= SIZE_KB_MAX
        ):
            raise _Invalid(
                f"v{version.number} size {version.size_kb!r} kb out of range (0 to {SIZE_KB_MAX})"
            )
        if version.source_type:
            _check_text(f"v{version.number} source_type", version.source_type)
            if len(version.source_type) > _SOURCE_TYPE_MAX:
                raise _Invalid(
                    f"v{version.number} source_type longer than {_SOURCE_TYPE_MAX} characters"
                )
        if version.submitted is not None:
            _check_date(f"v{version.number} date", version.submitted, latest_date)
    if record.latest_version is not None:
        _check_version_number("latest_version", record.latest_version)
    _check_date("submitted", record.submitted, latest_date)
    _check_date("updated", record.updated, latest_date)
    _check_date("datestamp", record.datestamp, latest_date)


def _unstorable(value: object) -> bool:
    """True when ``value`` is not text or holds a character no column can take (cheap for the
    usual, clean text: a memchr for NUL, and ASCII text holds no surrogate)."""
    if not value:
        return False
    if not isinstance(value, str):
        return True
    return "\x00" in value or (not value.isascii() and _UNSTORABLE.search(value) is not None)


def _check_text(name: str, value: object) -> None:
    """Raise :class:`_Invalid` naming ``name`` when ``_unstorable(value)``."""
    if not _unstorable(value):
        return
    if not isinstance(value, str):
        raise _Invalid(f"{name} is not text but {type(value).__name__}")
    character = _UNSTORABLE.search(value)[0]
    what = "a NUL character" if character == "\x00" else "a lone surrogate"
    raise _Invalid(f"{name} contains {what} (U+{ord(character):04X}), which is not storable text")


def _check_version_number(name: str, number: object) -> None:
    if not isinstance(number, int) or not 1 <= number <= MAX_VERSION:
        raise _Invalid(f"{name} {number!r} out of range (1 to {MAX_VERSION})")


def _check_date(name: str, value: dt.date | dt.datetime | None, latest: dt.date) -> None:
    """Raise :class:`_Invalid` naming ``name`` for a date (a datetime: its UTC date) before
    ``EARLIEST_DATE`` or after ``latest``."""
    if value is None:
        return
    if isinstance(value, dt.datetime):
        try:
            value = value.astimezone(dt.UTC).date() if value.tzinfo else value.date()
        except OverflowError:
            raise _Invalid(f"{name} {value.isoformat()} out of range") from None
    if value > latest:
        raise _Invalid(
            f"{name} {value.isoformat()} is in the future (after {latest.isoformat()}, "
            f"today + {FUTURE_TOLERANCE.days} days, UTC)"
        )
    if value < EARLIEST_DATE:
        raise _Invalid(
            f"{name} {value.isoformat()} is before arXiv began ({EARLIEST_DATE.isoformat()})"
        )


def _printable(text: str) -> str:
    """``text``, escaped when it holds characters no column (or log) can take."""
    return repr(text)[1:-1] if _UNSTORABLE.search(text) else text


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


def _claim_new(plans: list[_Plan]) -> tuple[list[_Plan], int]:
    """Insert the paper rows of the new papers among ``plans``, unless another transaction
    inserted the same paper after :func:`_load_states` looked (concurrent harvests of
    overlapping data); merge those with what that transaction stored instead.

    Row locks cannot cover a row that does not exist yet, so the insert is
    ``INSERT … ON CONFLICT (arxiv_id) DO NOTHING RETURNING``: PostgreSQL makes it wait for a
    concurrent inserter of the same id to finish and then skips the row, and only the rows
    this transaction inserted come back. The skipped papers are then read again, locked, and
    merged like any stored paper, so a report is counted ``created`` (and announced) by exactly
    one transaction and an older report never overwrites a newer one stored meanwhile.

    Returns the plans still to write (``row_written`` set on those inserted here, ``old`` and
    ``pk`` on those merged) and the number found unchanged after the merge. Call inside the
    transaction that called :func:`_load_states`.
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
    stored = _load_states(sorted(plan.state.arxiv_id for plan in raced))
    unchanged = set()
    for plan in raced:
        # A paper deleted again meanwhile stays new: _write inserts it.
        pk, old = stored.get(plan.state.arxiv_id, (None, None))
        if old is None:
            continue
        merged = _merge(old, plan.state)
        if merged == old:
            unchanged.add(plan.state.arxiv_id)
        else:
            plan.state, plan.old, plan.pk = merged, old, pk
    logger.info(
        "%d papers were stored meanwhile by another transaction; merged with them", len(raced)
    )
    return [plan for plan in plans if plan.state.arxiv_id not in unchanged], len(unchanged)


def _insert_new_rows(plans: list[_Plan]) -> dict[str, int]:
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


def _plan_category_ids(plans: list[_Plan]) -> dict[str, int]:
    return _category_ids(
        {plan.state.primary for plan in plans}
        | {code for plan in plans for code in plan.state.cross_lists}
    )


def _paper_rows(plans: list[_Plan], category_ids: dict[str, int]) -> list[Paper]:
    return [
        Paper(
            arxiv_id=plan.state.arxiv_id,
            **{name: getattr(plan.state, name) for name in _ROW_FIELDS},
            primary_category_id=category_ids[plan.state.primary],
            author_count=len(plan.state.authors),
            affiliation_count=len(plan.state.affiliations_in_order()),
        )
        for plan in plans
    ]


def _write(plans: list[_Plan], author_parts: dict[str, dict[str, str]]) -> None:
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


# --- harvest runs ---------------------------------------------------------------------------


class HarvestLocked(Exception):
    """Another harvest of the same ``kind`` is running (``holder`` names its run), so this one
    was not started or resumed. Nothing was written; try again once that harvest is done."""

    def __init__(self, kind: str, holder: str):
        self.kind = kind
        self.holder = holder
        super().__init__(f"another {kind} harvest is running ({holder}); not started")


class HarvestLockUnavailable(HarvestLocked):
    """The one-harvest-per-kind lock could not be taken because the cache (Redis) did not
    answer; nothing was written. Try again once Redis is back."""

    def __init__(self, kind: str):
        self.kind = kind
        self.holder = ""
        Exception.__init__(
            self,
            f"the {kind} harvest lock could not be taken: the cache (Redis) is not answering; "
            "not started",
        )


class _Superseded(Exception):
    """A newer execution of the same run took it over; this one must stop writing."""


class _SourceLock:
    """One harvest of a kind at a time across every worker: ``cache.add`` of a key that names
    the run holding it, with a timeout (``settings.ARXIV_HARVEST_LOCK_TIMEOUT`` seconds,
    renewed after every page) so that a killed worker does not hold it for ever.

    The run that holds the lock may take it again: its previous execution died holding it (a
    killed worker) or is still alive, and then the newer execution fences it out at its next
    page (see ``HarvestRun.attempt``).
    """

    def __init__(self, kind: str, *, run_id: int | None = None):
        self.kind = kind
        self.key = f"papers:harvest-lock:{kind}"
        self.owner = f"run #{run_id}" if run_id else f"new run {uuid.uuid4().hex}"
        self.timeout = settings.ARXIV_HARVEST_LOCK_TIMEOUT

    def __enter__(self) -> _SourceLock:
        for _ in range(3):
            if cache.add(self.key, self.owner, self.timeout):
                return self
            holder = cache.get(self.key)
            if holder is None:
                continue  # expired between the two calls: try again
            if holder == self.owner:
                logger.warning("%s takes over the %s harvest lock it held", self.owner, self.kind)
                cache.set(self.key, self.owner, self.timeout)
                return self
            logger.warning("%s harvest refused: %s holds the lock", self.kind, holder)
            raise HarvestLocked(self.kind, holder)
        # Never stored, never held by anyone: the cache is not answering (it skips errors).
        logger.error("%s harvest refused: the cache did not store its lock", self.kind)
        raise HarvestLockUnavailable(self.kind)

    def claim(self, run_id: int) -> None:
        """Name the run that now holds the lock."""
        self.owner = f"run #{run_id}"
        cache.set(self.key, self.owner, self.timeout)

    def refresh(self) -> None:
        cache.touch(self.key, self.timeout)

    def __exit__(self, *exc_info) -> None:
        # Another holder may have taken an expired lock meanwhile: release only our own.
        if cache.get(self.key) == self.owner:
            cache.delete(self.key)


def harvest_run(
    *,
    kind: str,
    params: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    task_id: str = "",
    max_seconds: float | None = None,
) -> HarvestSummary:
    """Make a :class:`~papers.models.HarvestRun` of ``kind`` with ``params`` and execute it.

    ``kind`` and ``params`` are as :func:`papers.sources.sources_for` takes them (``recorded``,
    ``oai``, ``atom``, ``snapshot``). OAI list harvests get their ``sets`` written out
    (``settings.ARXIV_OAI_SETS`` unless given) and, with ``"incremental": true`` and no
    ``from``, the day before the last succeeded incremental harvest started (yesterday for the
    first one), so that the stored run says exactly what it harvests.

    ``task_id`` ties the run to the Celery task that makes it: when a run of that task exists
    already (the task was delivered again after its worker died, or retried), that run is
    resumed instead. ``max_seconds``: pause after the page that passes this budget (status
    ``pending``; :func:`harvest_run_resume` continues), so that no task outlives its limits.
    How pages are stored and what fails the run: :func:`harvest_run_resume`.

    Raises :class:`HarvestLocked` (nothing stored) when a harvest of the same kind is running,
    ``ValueError`` for bad parameters, ``ManifestError`` for a bad recorded directory, and
    what :func:`harvest_run_resume` raises.
    """
    if task_id:
        existing = HarvestRun.objects.filter(task_id=task_id).first()
        if existing is not None:
            logger.info("task %s: resuming its harvest run #%d", task_id, existing.pk)
            return harvest_run_resume(run=existing, batch_size=batch_size, max_seconds=max_seconds)
    params = _resolved_params(kind, dict(params or {}))
    with _SourceLock(kind) as lock:
        run = HarvestRun.objects.create(kind=kind, params=params, task_id=task_id)
        lock.claim(run.pk)
        logger.info("harvest run #%d (%s) made: %s", run.pk, kind, params)
        return _execute(run, lock, batch_size=batch_size, max_seconds=max_seconds)


def harvest_run_resume(
    *, run: HarvestRun, batch_size: int | None = None, max_seconds: float | None = None
) -> HarvestSummary:
    """Execute ``run`` from its checkpoint to its end (a succeeded run is left as it is).

    Each page (chunk) is stored in one transaction together with the run's checkpoint: counts,
    errors, next resumption token, newest datestamp and position. A crash at any point leaves
    the database as it was after the last stored page, and resuming asks for the next page
    only, so the result equals an uninterrupted harvest. A run that is ``running`` (its worker
    died, or is still alive) is taken over: the older execution stops at its next page
    without writing it.

    Reported in the run's ``errors`` and the summary, and the harvest goes on: records a
    parser or the upsert rejected, ids asked for and not delivered, pages the API kept empty,
    and for ``recorded`` runs a file that cannot be parsed or a recorded refusal (the next
    file is replayed). Everything else fails the run: status ``failed``, the error recorded,
    the checkpoint kept, and the exception re-raised with a note naming the run and how to
    resume it: ``papers.sources.HarvestError`` (network, after the bounded retries),
    ``ParseError`` (a page that cannot be parsed), ``SourceError`` (a refused request),
    database errors.

    Raises :class:`HarvestLocked` (nothing done) when another run of the kind holds the lock.
    Returns a :class:`HarvestSummary` of this execution.
    """
    if run.status == HarvestRun.Status.SUCCEEDED:
        return HarvestSummary(kind=run.kind, run_id=run.pk, status=run.status)
    with _SourceLock(run.kind, run_id=run.pk) as lock:
        return _execute(run, lock, batch_size=batch_size, max_seconds=max_seconds)


def _resolved_params(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with OAI sets and an incremental ``from`` written out; validated."""
    if kind == HarvestRun.Kind.OAI and not (
        params.get("identifiers") or params.get("resumption_token")
    ):
        params["sets"] = oai_sets(params)
        if params.get("incremental") is True and not params.get("from"):
            params["from"] = _incremental_from().isoformat()
    sources_for(kind, params)  # raises ValueError / ManifestError for bad parameters
    return params


def _incremental_from() -> dt.date:
    last = (
        HarvestRun.objects.filter(
            kind=HarvestRun.Kind.OAI,
            status=HarvestRun.Status.SUCCEEDED,
            params__incremental=True,
            started_at__isnull=False,
        )
        .order_by("-started_at")
        .first()
    )
    if last is None:
        return timezone.now().date() - dt.timedelta(days=1)
    return last.started_at.date() - INCREMENTAL_OVERLAP


def _execute(
    run: HarvestRun, lock: _SourceLock, *, batch_size: int | None, max_seconds: float | None
) -> HarvestSummary:
    summary = HarvestSummary(kind=run.kind, run_id=run.pk)
    attempt = _run_begin(run)
    if attempt is None:
        summary.status = HarvestRun.Status.SUCCEEDED
        return summary
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    try:
        sources = sources_for(run.kind, run.params)
        first = int(run.position.get("source", 0))
        for index in range(first, len(sources)):
            state = run.position.get("state") if index == first else None
            try:
                for chunk in sources[index].chunks(state):
                    _store_chunk(run, attempt, index, chunk, batch_size, summary)
                    lock.refresh()
                    last = chunk.position is None and index == len(sources) - 1
                    if deadline is not None and time.monotonic() >= deadline and not last:
                        _run_set_status(run, attempt, HarvestRun.Status.PENDING)
                        summary.status = HarvestRun.Status.PENDING
                        logger.info("harvest run #%d paused after its time budget", run.pk)
                        return summary
            except (ParseError, SourceError) as error:
                if run.kind != HarvestRun.Kind.RECORDED:
                    raise
                # A recorded directory replays unrelated responses: one bad file does not
                # stop the others.
                logger.error("harvest run #%d: %s; going on with the next file", run.pk, error)
                summary.errors.append(error)
                _store_source_end(run, attempt, index, errors=[error])
                continue
            _store_source_end(run, attempt, index)
        _run_set_status(run, attempt, HarvestRun.Status.SUCCEEDED)
        summary.status = HarvestRun.Status.SUCCEEDED
        logger.info(
            "harvest run #%d succeeded: %d pages, %d created, %d updated, %d unchanged, %d errors",
            run.pk,
            run.pages_done,
            run.records_created,
            run.records_updated,
            run.records_unchanged,
            run.error_count,
        )
        return summary
    except _Superseded:
        logger.warning("harvest run #%d was taken over by a newer execution; stopping", run.pk)
        run.refresh_from_db()
        summary.status = run.status
        return summary
    except BaseException as error:
        _run_fail(run, attempt, error)
        error.add_note(
            f"harvest run #{run.pk} failed after {run.pages_done} stored pages; its checkpoint "
            f"is kept: resume it with `manage.py harvest --resume {run.pk}` or the admin action"
        )
        raise


def _locked_run(run: HarvestRun, attempt: int | None) -> HarvestRun:
    """The run's row, locked for this transaction; raises _Superseded when a newer execution
    (a higher ``attempt``) owns it."""
    locked = HarvestRun.objects.select_for_update().get(pk=run.pk)
    if attempt is not None and locked.attempt != attempt:
        raise _Superseded()
    return locked


def _run_begin(run: HarvestRun) -> int | None:
    """Mark ``run`` running as a new execution; its ``attempt`` number, or None when the run
    has succeeded meanwhile."""
    with transaction.atomic():
        locked = _locked_run(run, None)
        if locked.status == HarvestRun.Status.SUCCEEDED:
            _copy_progress(locked, run)
            return None
        locked.status = HarvestRun.Status.RUNNING
        locked.attempt += 1
        locked.started_at = locked.started_at or timezone.now()
        locked.finished_at = None
        locked.save(update_fields=["status", "attempt", "started_at", "finished_at", "updated_at"])
    _copy_progress(locked, run)
    return locked.attempt


def _store_chunk(
    run: HarvestRun,
    attempt: int,
    index: int,
    chunk: Chunk,
    batch_size: int | None,
    summary: HarvestSummary,
) -> None:
    """Store ``chunk``'s records and the run's checkpoint after it in one transaction."""
    with transaction.atomic():
        locked = _locked_run(run, attempt)
        result = papers_upsert(records=chunk.records, batch_size=batch_size, source=chunk.source)
        rejected = [*chunk.errors, *result.errors]
        locked.pages_done += 1
        locked.records_created += result.created
        locked.records_updated += result.updated
        locked.records_unchanged += result.unchanged
        locked.records_rejected += len(rejected)
        locked.records_deleted += len(chunk.deleted)
        datestamps = [record.datestamp for record in chunk.records if record.datestamp]
        if datestamps:
            newest = max(datestamps)
            if locked.last_datestamp is None or newest > locked.last_datestamp:
                locked.last_datestamp = newest
        if chunk.position is None:
            locked.position = {"source": index + 1}
            locked.resumption_token = ""
        else:
            locked.position = {"source": index, "state": chunk.position}
            locked.resumption_token = chunk.resumption_token or ""
        _add_errors(locked, [*rejected, *chunk.gaps])
        locked.save()
    _copy_progress(locked, run)
    summary.pages += 1
    summary.created += result.created
    summary.updated += result.updated
    summary.unchanged += result.unchanged
    summary.deleted += len(chunk.deleted)
    summary.errors.extend([*rejected, *chunk.gaps])
    for error in [*chunk.errors, *chunk.gaps]:
        logger.warning("run #%d: %s", run.pk, error)
    logger.info(
        "run #%d, page %d (%s): %d created, %d updated, %d unchanged, %d rejected",
        run.pk,
        locked.pages_done,
        chunk.source,
        result.created,
        result.updated,
        result.unchanged,
        len(rejected),
    )


def _store_source_end(
    run: HarvestRun, attempt: int, index: int, *, errors: Iterable[Exception] = ()
) -> None:
    """Move the checkpoint past source ``index`` (once it is exhausted or its file rejected)."""
    errors = list(errors)
    if not errors and run.position.get("source", 0) > index:
        return
    with transaction.atomic():
        locked = _locked_run(run, attempt)
        locked.position = {"source": index + 1}
        locked.resumption_token = ""
        _add_errors(locked, errors)
        locked.save(
            update_fields=["position", "resumption_token", "errors", "error_count", "updated_at"]
        )
    _copy_progress(locked, run)


def _run_set_status(run: HarvestRun, attempt: int, status: str) -> None:
    with transaction.atomic():
        locked = _locked_run(run, attempt)
        locked.status = status
        fields = ["status", "updated_at"]
        if status == HarvestRun.Status.SUCCEEDED:
            locked.finished_at = timezone.now()
            locked.resumption_token = ""
            fields += ["finished_at", "resumption_token"]
        locked.save(update_fields=fields)
    _copy_progress(locked, run)


def _run_fail(run: HarvestRun, attempt: int, error: BaseException) -> None:
    """Record ``error`` on ``run`` and mark it failed, keeping its checkpoint."""
    logger.error("harvest run #%d failed: %s", run.pk, error)
    try:
        with transaction.atomic():
            locked = _locked_run(run, attempt)
            locked.status = HarvestRun.Status.FAILED
            locked.finished_at = timezone.now()
            _add_errors(locked, [error])
            locked.save(
                update_fields=["status", "finished_at", "errors", "error_count", "updated_at"]
            )
        _copy_progress(locked, run)
    except _Superseded:
        logger.warning("harvest run #%d: a newer execution owns it; failure not recorded", run.pk)
    except Exception:
        # The database itself may be what failed; the error is raised to the caller anyway.
        logger.exception("harvest run #%d: could not record its failure", run.pk)


def _add_errors(run: HarvestRun, errors: list) -> None:
    """Append error messages: ``str`` of our own errors (they name source and record), with the
    exception type for anything unexpected; the first ``ERRORS_KEPT`` are kept, all counted."""
    messages = [
        str(error)
        if isinstance(error, ParseError | SourceError | HarvestError)
        else f"{type(error).__name__}: {error}"
        for error in errors
    ]
    room = max(HarvestRun.ERRORS_KEPT - len(run.errors), 0)
    run.errors = [*run.errors, *messages[:room]]
    run.error_count += len(messages)


_PROGRESS_FIELDS = [
    "status",
    "attempt",
    "pages_done",
    "records_created",
    "records_updated",
    "records_unchanged",
    "records_rejected",
    "records_deleted",
    "resumption_token",
    "last_datestamp",
    "position",
    "errors",
    "error_count",
    "started_at",
    "finished_at",
    "updated_at",
]


def _copy_progress(source: HarvestRun, target: HarvestRun) -> None:
    """Keep the caller's ``run`` object in step with the stored row."""
    for name in _PROGRESS_FIELDS:
        setattr(target, name, getattr(source, name))
