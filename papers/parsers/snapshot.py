"""Stream the Kaggle arXiv snapshot (``arxiv-metadata-oai-snapshot.json``) as :class:`ArxivRecord`.

Format: the "arXiv Dataset" published by Cornell University on Kaggle
(https://www.kaggle.com/datasets/Cornell-University/arxiv), one JSON object per line with the
fields ``id, submitter, authors, title, comments, journal-ref, doi, report-no, categories,
license, abstract, versions, update_date, authors_parsed``. The file holds millions of lines,
so it is read one line at a time and never loaded whole.

``update_date`` is the date arXiv last touched the record (an OAI datestamp), not the date of
the latest version: ``updated`` comes from the last entry of ``versions``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from papers.identifiers import parse_arxiv_id
from papers.parsers import parse_iso_date, parse_rfc2822, says_withdrawn, split_author_line
from papers.records import ArxivRecord, AuthorName, ParseError, Version
from papers.text import unwrap

__all__ = ["iter_snapshot", "parse_snapshot_line"]


def iter_snapshot(
    stream: Iterable[bytes] | Iterable[str],
    *,
    source: str,
    on_error: Callable[[ParseError], object] | None = None,
) -> Iterator[ArxivRecord]:
    """Yield one :class:`ArxivRecord` per line of a Kaggle snapshot, reading lazily.

    ``stream`` is a binary file object (or any iterable of lines, bytes or str); blank lines are
    skipped. A bad line (invalid JSON, missing ``id`` or ``title``, invalid id or dates) becomes
    a :class:`ParseError` with ``record="line N"`` (1-based) and ``source``: passed to
    ``on_error`` when given, after which reading continues; raised otherwise.
    """
    for line_number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            record = parse_snapshot_line(line, source=source, line_number=line_number)
        except ParseError as error:
            if on_error is None:
                raise
            on_error(error)
            continue
        yield record


def parse_snapshot_line(line: str | bytes, *, source: str, line_number: int) -> ArxivRecord:
    """Parse one snapshot line (a JSON object) into an :class:`ArxivRecord`.

    Versions come from ``versions[].created`` (RFC 2822, aware UTC); ``submitted`` is v1's date
    and ``updated`` the latest version's. Authors come from ``authors_parsed`` entries
    ``[keyname, forenames, suffix, affiliation…]`` with the display name "Forenames Keyname
    Suffix"; when that field is missing the ``authors`` line is split instead.
    ``update_date`` goes to ``datestamp``.

    Raises :class:`ParseError` (``record="line N"``, naming ``source``) for invalid JSON, a
    missing ``id`` or ``title``, an invalid id, or malformed versions or dates.
    """
    record = f"line {line_number}"
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ParseError(f"invalid JSON: {error}", source=source, record=record) from error
    if not isinstance(data, dict):
        raise ParseError("line is not a JSON object", source=source, record=record)
    try:
        return _record(data)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        message = getattr(error, "message", str(error))
        raise ParseError(message, source=source, record=record) from error


def _record(data: dict[str, Any]) -> ArxivRecord:
    raw_id = data.get("id")
    if not raw_id:
        raise ValueError("missing id")
    arxiv_id, _ = parse_arxiv_id(raw_id)
    title_raw = _string(data, "title")
    if not title_raw.strip():
        raise ValueError(f"missing title for {arxiv_id}")
    abstract_raw = _string(data, "abstract")

    versions = sorted(
        (_version(entry) for entry in data.get("versions") or []),
        key=lambda version: version.number,
    )
    first, latest = (versions[0], versions[-1]) if versions else (None, None)
    comments = unwrap(_string(data, "comments"))
    update_date = _string(data, "update_date").strip()
    return ArxivRecord(
        arxiv_id=arxiv_id,
        title=unwrap(title_raw),
        title_raw=title_raw,
        abstract=unwrap(abstract_raw),
        abstract_raw=abstract_raw,
        authors=_authors(data),
        categories=_string(data, "categories").split(),
        versions=versions,
        latest_version=latest.number if latest else 1,
        submitted=first.submitted.date() if first and first.submitted else None,
        updated=latest.submitted.date() if latest and latest.submitted else None,
        comments=comments,
        journal_ref=unwrap(_string(data, "journal-ref")),
        doi=_string(data, "doi").strip(),
        report_no=unwrap(_string(data, "report-no")),
        license=_string(data, "license").strip(),
        submitter=unwrap(_string(data, "submitter")),
        withdrawn=says_withdrawn(comments, abstract_raw),
        datestamp=parse_iso_date(update_date) if update_date else None,
        source="snapshot",
    )


def _version(entry: dict[str, Any]) -> Version:
    label = str(entry.get("version", ""))
    if not (label.startswith("v") and label[1:].isdigit()):
        raise ValueError(f"bad version label {label!r}")
    created = entry.get("created")
    return Version(number=int(label[1:]), submitted=parse_rfc2822(created) if created else None)


def _authors(data: dict[str, Any]) -> list[AuthorName]:
    parsed = data.get("authors_parsed")
    if not parsed:
        return split_author_line(_string(data, "authors"))
    authors = []
    for entry in parsed:
        if not isinstance(entry, list):
            raise ValueError(f"authors_parsed entry is not a list: {entry!r}")
        keyname, forenames, suffix = (unwrap(part) for part in [*entry[:3], "", "", ""][:3])
        affiliations = tuple(
            text for text in (unwrap(part) for part in _flatten(entry[3:])) if text
        )
        authors.append(
            AuthorName(
                name=" ".join(part for part in (forenames, keyname, suffix) if part),
                keyname=keyname,
                forenames=forenames,
                suffix=suffix,
                affiliations=affiliations,
            )
        )
    return authors


def _flatten(values: list[Any]) -> Iterator[str]:
    """Affiliations follow the three name parts, as strings or (in some dumps) lists."""
    for value in values:
        if isinstance(value, list):
            yield from _flatten(value)
        elif value:
            yield str(value)


def _string(data: dict[str, Any], key: str) -> str:
    """The field as text; the snapshot writes ``null`` for absent values."""
    value = data.get(key)
    return "" if value is None else str(value)
