"""Checking an arXiv record before anything of it is written, and turning it into a paper state.

:func:`record_prepare` validates one :class:`~papers.records.ArxivRecord` and returns the
:class:`~papers.ingest.merge.PaperState` to merge and store, or raises a ``ParseError`` naming
the source, the record and the field at fault: text no column can hold or longer than its
column, version numbers, sizes and dates out of range, unknown or missing categories, no title,
no submitted date. The same checks run on PostgreSQL and SQLite.
"""

from __future__ import annotations

import datetime as dt
import re

from django.utils import timezone

from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Affiliation, Author, Paper, PaperVersion
from papers.parsers import split_dois
from papers.records import ArxivRecord, ParseError
from papers.taxonomy import UnknownCategory, canonical_category
from papers.text import fix_mojibake, unwrap

from .merge import TEXT_FIELDS, AuthorState, PaperState, VersionState

__all__ = [
    "EARLIEST_DATE",
    "FUTURE_TOLERANCE",
    "MAX_VERSION",
    "SIZE_KB_MAX",
    "TEXT_LIMITS",
    "record_prepare",
]

# What a record may say, checked before anything is written (see ``record_prepare``).
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
# Characters refused in any text: NUL (PostgreSQL refuses it), lone UTF-16 surrogates (not
# encodable as UTF-8, so no driver can send them) and the other C0 control characters but
# tab, line feed and carriage return (XML 1.0 cannot carry them, so arXiv's OAI and API
# never send them: in a snapshot line they are corruption, and on a page they are invisible).
_UNSTORABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
# Text fields longer than any real arXiv record's (arXiv caps new abstracts at 1920
# characters; titles run to a few hundred): past these a record is corrupt or hostile.
TEXT_LIMITS = {"title": 1000, "abstract": 10000, "comments": 2000}
# The raw form of an author name keeps its TeX (``{\"u}``), so it may run longer.
_AUTHOR_RAW_MAX = 1000

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


def record_prepare(
    record: ArxivRecord, *, source: str, author_parts: dict[str, dict[str, str]]
) -> PaperState:
    """Validate ``record`` and turn it into a :class:`PaperState`.

    What is checked is listed in :func:`papers.ingest.papers_upsert`. Raises ParseError naming
    ``source`` (or the record's own source label), the record (its canonical arXiv identifier; the
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

    # An entry without a title is kept, under a placeholder curators can filter on.
    title = (record.title or "").strip()
    title_missing = not title
    if title_missing:
        title = Paper.TITLE_PLACEHOLDER
    for name, limit in TEXT_LIMITS.items():
        length = len(title if name == "title" else getattr(record, name) or "")
        if length > limit:
            raise reject(f"{name} is {length} characters long, more than {limit}", arxiv_id)
    # Pieces of the field that are no DOI stay in ``doi`` (the field as received), unlinked.
    dois, _not_dois = split_dois(record.doi)
    repaired = _was_repaired(record.title_raw) or _was_repaired(record.abstract_raw)

    versions = {
        version.number: VersionState(
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
        raw = " ".join((author.raw or "").split())
        if len(raw) > _AUTHOR_RAW_MAX:
            raise reject(
                f"author {position} name as received longer than {_AUTHOR_RAW_MAX} characters",
                arxiv_id,
            )
        repaired = repaired or _was_repaired(raw)
        authors.append(
            AuthorState(name=name, affiliations=affiliations, name_raw=raw if raw != name else "")
        )
        author_parts.setdefault(name, parts if any(parts.values()) else {})

    state = PaperState(
        arxiv_id=arxiv_id,
        title=title,
        title_raw=record.title_raw or record.title or "",
        abstract=record.abstract or "",
        abstract_raw=record.abstract_raw or record.abstract or "",
        comments=record.comments or "",
        journal_ref=record.journal_ref or "",
        doi=record.doi or "",
        report_no=record.report_no or "",
        license=record.license or "",
        submitter=record.submitter or "",
        dois=dois,
        text_repaired=repaired,
        title_missing=title_missing,
        latest_version=max(
            (v for v in (record.latest_version, id_version, *versions) if v is not None),
            default=None,
        ),
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


def _was_repaired(raw: str | None) -> bool:
    """True when :func:`papers.text.fix_mojibake` changes ``raw`` (unwrapped) as the parsers
    read it: double-encoded text whose repair the stored paper must record."""
    if not raw or raw.isascii():
        return False
    text = unwrap(raw)
    return fix_mojibake(text) != text


class _Invalid(ValueError):
    """A record field no paper can have; the message names the field (never quotes its text)."""


# Every text a record carries to a column, by the field name errors use.
_RECORD_TEXTS = (*TEXT_FIELDS, "source")
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
        for part in (*_AUTHOR_TEXTS, "raw"):
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
    """True when ``value`` is not text or holds a character refused in text (``_UNSTORABLE``:
    one scan of a compiled character class)."""
    if not value:
        return False
    if not isinstance(value, str):
        return True
    return _UNSTORABLE.search(value) is not None


def _check_text(name: str, value: object) -> None:
    """Raise :class:`_Invalid` naming ``name`` when ``_unstorable(value)``."""
    if not _unstorable(value):
        return
    if not isinstance(value, str):
        raise _Invalid(f"{name} is not text but {type(value).__name__}")
    character = _UNSTORABLE.search(value)[0]
    if character == "\x00":
        what = "a NUL character"
    elif character < " ":
        what = "a control character"
    else:
        what = "a lone surrogate"
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
