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

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Iterator
from email.utils import format_datetime
from typing import Any

from papers.identifiers import parse_arxiv_id
from papers.parsers import (
    author_name,
    parse_iso_date,
    parse_rfc2822,
    says_withdrawn,
    split_author_line,
)
from papers.records import ArxivRecord, AuthorName, ParseError, Version
from papers.text import fix_mojibake, readable, unwrap

__all__ = ["iter_snapshot", "parse_snapshot_line", "snapshot_line"]


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
    Suffix"; when that field is missing the ``authors`` line is split instead. Affiliations
    come from the ``authors`` line when it has parenthesised ones and lists the same authors
    (Kaggle's ``authors_parsed`` leaves numbered affiliations unresolved, ``"1 and 2"``, or
    drops them); bare affiliation numbers are never kept. Titles, names and affiliations are
    in display form (:func:`papers.text.readable`). ``update_date`` goes to ``datestamp``.

    Raises :class:`ParseError` (``record="line N"``, naming ``source``) for invalid JSON, a
    missing ``id`` or ``title``, an invalid id, or malformed versions or dates.
    """
    record = f"line {line_number}"
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ParseError(f"invalid JSON: {error}", source=source, record=record) from error
    except RecursionError:
        raise ParseError("JSON nested too deeply", source=source, record=record) from None
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
    if not isinstance(raw_id, str):
        raise ValueError(f'id is {_json_type(raw_id)}, expected a string such as "0704.0001"')
    arxiv_id, _ = parse_arxiv_id(raw_id)
    # No title: stored under a placeholder and flagged by the ingestion service.
    title_raw = _string(data, "title")
    abstract_raw = _string(data, "abstract")

    listed = data.get("versions") or []
    if not isinstance(listed, list):
        raise ValueError(
            f"versions is {_json_type(listed)}, expected a list of objects such as "
            '{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}'
        )
    versions = sorted(
        (_version(index, entry) for index, entry in enumerate(listed)),
        key=lambda version: version.number,
    )
    first, latest = (versions[0], versions[-1]) if versions else (None, None)
    comments = unwrap(_string(data, "comments"))
    update_date = _string(data, "update_date").strip()
    return ArxivRecord(
        arxiv_id=arxiv_id,
        title=readable(title_raw),
        title_raw=title_raw,
        abstract=fix_mojibake(unwrap(abstract_raw)),
        abstract_raw=abstract_raw,
        authors=_authors(data),
        categories=_string(data, "categories").split(),
        versions=versions,
        latest_version=latest.number if latest else None,
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


def _version(index: int, entry: object) -> Version:
    if not isinstance(entry, dict):
        raise ValueError(
            f"versions[{index}] is {_json_type(entry)}, expected an object with "
            '"version" ("v1") and "created" (an RFC 2822 date)'
        )
    label = str(entry.get("version", ""))
    if not (label.startswith("v") and label[1:].isdigit()):
        raise ValueError(f'versions[{index}] has a bad "version" {label!r}, expected "v1", "v2"…')
    created = entry.get("created")
    if created is not None and not isinstance(created, str):
        raise ValueError(f'versions[{index}] "created" is {_json_type(created)}, expected a date')
    try:
        submitted = parse_rfc2822(created) if created else None
    except ValueError:
        raise ValueError(
            f'versions[{index}] "created" {created!r} is not an RFC 2822 date '
            '("Mon, 2 Apr 2007 19:18:42 GMT")'
        ) from None
    return Version(number=int(label[1:]), submitted=submitted)


def _json_type(value: object) -> str:
    """What a JSON value is, for messages: ``a string ('x')``, ``a number (3)``, ``null``."""
    if value is None:
        return "null"
    kinds = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    kinds |= {dict: "an object", list: "a list"}
    kind = kinds.get(type(value), type(value).__name__)
    return f"{kind} ({value!r:.40})" if kind in ("a string", "a number") else kind


def _authors(data: dict[str, Any]) -> list[AuthorName]:
    line = _string(data, "authors")
    parsed = data.get("authors_parsed")
    if not parsed:
        return split_author_line(line)
    if not isinstance(parsed, list):
        raise ValueError(
            f"authors_parsed is {_json_type(parsed)}, expected a list of "
            "[keyname, forenames, suffix] lists"
        )
    authors = []
    for index, entry in enumerate(parsed):
        if not isinstance(entry, list):
            raise ValueError(
                f"authors_parsed[{index}] is {_json_type(entry)}, expected a list "
                "[keyname, forenames, suffix, affiliation ...]"
            )
        keyname, forenames, suffix = (*map(str, entry[:3]), "", "", "")[:3]
        # Kaggle's split writes "C.-P." as "C. -P.": the author line has it right.
        forenames = _SPLIT_HYPHEN.sub("-", forenames)
        authors.append(
            author_name(
                keyname=keyname,
                forenames=forenames,
                suffix=suffix,
                affiliations=[
                    text for text in _flatten(entry[3:]) if not _AFFILIATION_NUMBERS.match(text)
                ],
            )
        )
    if "(" in line:
        from_line = split_author_line(line)
        if _same_authors(authors, from_line):
            authors = [
                dataclasses.replace(author, affiliations=other.affiliations)
                for author, other in zip(authors, from_line, strict=True)
            ]
    return authors


# "C. -P." in authors_parsed for "C.-P." in the author line (0704.0001, C.-P. Yuan).
_SPLIT_HYPHEN = re.compile(r"(?<=\.)\s+-(?=\w)")
# "1", "1,2", "1 and 3": references into a numbered list, not affiliations.
_AFFILIATION_NUMBERS = re.compile(r"^\s*\d+(?:\s*(?:,|&|and)\s*\d+)*\s*$", re.IGNORECASE)


def _same_authors(parsed: list[AuthorName], from_line: list[AuthorName]) -> bool:
    """True when the split ``authors`` line names the ``authors_parsed`` authors, in order."""
    return len(parsed) == len(from_line) and all(
        _fold(author.keyname) in _fold(other.name)
        for author, other in zip(parsed, from_line, strict=True)
    )


def _fold(text: str) -> str:
    return "".join(text.split()).casefold()


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
    if type(value) is str:
        return value
    return "" if value is None else str(value)


def snapshot_line(record: ArxivRecord) -> str:
    """One Kaggle snapshot line (a JSON object, no newline) for ``record``.

    The inverse of :func:`parse_snapshot_line` for what the format can hold: ``title`` and
    ``abstract`` are the raw texts, ``authors`` is an arXiv author line (each author's
    affiliation in parentheses, or numbered ones when an author has several),
    ``authors_parsed`` gives ``[keyname, forenames, suffix, affiliation…]`` (the whole name as
    keyname when the record does not split it), versions keep their numbers and dates (sizes
    and source types are not in the format), and ``update_date`` is ``datestamp``. Used to
    build test and benchmark input from other sources' records, and for exports.
    """
    authors_line = _author_line(record.authors)
    data = {
        "id": record.arxiv_id,
        "submitter": record.submitter or None,
        "authors": authors_line,
        "title": record.title_raw or record.title,
        "comments": record.comments or None,
        "journal-ref": record.journal_ref or None,
        "doi": record.doi or None,
        "report-no": record.report_no or None,
        "categories": " ".join(record.categories),
        "license": record.license or None,
        "abstract": record.abstract_raw or record.abstract,
        "versions": [
            {
                "version": f"v{version.number}",
                "created": format_datetime(version.submitted, usegmt=True)
                if version.submitted
                else None,
            }
            for version in record.versions
        ],
        "update_date": record.datestamp.isoformat() if record.datestamp else None,
        "authors_parsed": [
            [
                author.keyname or author.name,
                author.forenames if author.keyname else "",
                author.suffix,
                *author.affiliations,
            ]
            for author in record.authors
        ],
    }
    return json.dumps(data, ensure_ascii=False)


def _author_line(authors: list[AuthorName]) -> str:
    """``"A (X), B (Y)"``, or ``"A (1, 2), B (1) ((1) X, (2) Y)"`` when someone has several."""
    if all(len(author.affiliations) <= 1 for author in authors):
        return ", ".join(
            author.name + "".join(f" ({affiliation})" for affiliation in author.affiliations)
            for author in authors
        )
    numbers: dict[str, int] = {}
    for author in authors:
        for affiliation in author.affiliations:
            numbers.setdefault(affiliation, len(numbers) + 1)
    names = ", ".join(
        author.name
        + (
            f" ({', '.join(str(numbers[a]) for a in author.affiliations)})"
            if author.affiliations
            else ""
        )
        for author in authors
    )
    listed = ", ".join(f"({number}) {affiliation}" for affiliation, number in numbers.items())
    return f"{names} ({listed})"
