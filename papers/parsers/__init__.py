"""Parsers that turn arXiv sources into :class:`papers.records.ArxivRecord` objects.

- :mod:`papers.parsers.oai`: OAI-PMH pages (``ListRecords`` / ``GetRecord``) in ``arXivRaw``,
  ``arXiv`` and ``oai_dc`` metadata formats;
- :mod:`papers.parsers.atom`: Atom feeds from the arXiv API (``/api/query``);
- :mod:`papers.parsers.snapshot`: Kaggle ``arxiv-metadata-oai-snapshot.json`` lines.

This module holds what they share: safe XML parsing, date parsing, the withdrawal rule and the
splitting of arXiv's free-text author lines. Plain Python: nothing here imports Django.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re

from lxml import etree

from papers.records import AuthorName, ParseError, Version

__all__ = [
    "child_text",
    "int_or_none",
    "is_withdrawal_stub",
    "parse_iso_date",
    "parse_iso_datetime",
    "parse_rfc2822",
    "parse_xml",
    "says_withdrawn",
    "split_author_line",
]


_POSITION_SUFFIX = re.compile(r",? line \d+, column \d+$")


def parse_xml(data: bytes, *, source: str) -> etree._Element:
    """Parse an untrusted XML document and return its root element.

    Entities are never resolved, nothing is fetched from the network, lxml's size limits stay
    on, and a document that carries a DTD (``<!DOCTYPE …>``) is refused outright: neither the
    OAI-PMH nor the Atom responses use one, and a DTD is how entity-expansion ("billion laughs")
    and external-entity attacks start.

    Raises :class:`ParseError` naming ``source`` and, for malformed XML, the line and column
    that lxml reports.
    """
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        remove_blank_text=False,
        load_dtd=False,
        dtd_validation=False,
    )
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as error:
        line, column = error.position
        # lxml repeats the position at the end of its message.
        detail = _POSITION_SUFFIX.sub("", error.msg or "")
        raise ParseError(
            f"not well-formed XML at line {line}, column {column}: {detail}", source=source
        ) from error
    except (ValueError, TypeError) as error:
        raise ParseError(f"cannot parse as XML: {error}", source=source) from error
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise ParseError("document type declarations (<!DOCTYPE …>) are not allowed", source=source)
    return root


def child_text(element: etree._Element, tag: str) -> str:
    """All text inside the first ``tag`` child of ``element`` (``tag`` in Clark notation,
    ``{namespace}name``), ``""`` when there is no such child."""
    child = element.find(tag)
    return "" if child is None else "".join(child.itertext())


def int_or_none(value: str | None) -> int | None:
    """``int(value)`` for a decimal string (surrounding blanks allowed), else ``None``."""
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


def parse_rfc2822(text: str) -> dt.datetime:
    """Parse an RFC 2822 date (``"Wed, 23 Jan 2008 21:06:41 GMT"``) to an aware UTC datetime.

    Used by arXivRaw ``<version><date>`` and the Kaggle snapshot's ``versions[].created``.
    Raises ``ValueError`` for text that is not such a date.
    """
    try:
        parsed = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError) as error:
        raise ValueError(f"not an RFC 2822 date: {text!r}") from error
    if parsed.tzinfo is None:
        # RFC 2822 "-0000" means UTC with unknown local offset.
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def parse_iso_datetime(text: str) -> dt.datetime:
    """Parse an ISO 8601 timestamp (``2006-01-02T14:57:58Z``, ``…-04:00``) to aware UTC.

    A timestamp without an offset is taken as UTC (OAI-PMH and the arXiv API only emit UTC).
    Raises ``ValueError`` for anything else.
    """
    parsed = dt.datetime.fromisoformat(text.strip())
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def parse_iso_date(text: str) -> dt.date:
    """Parse ``YYYY-MM-DD`` (or a full ISO timestamp, reduced to its UTC date).

    OAI datestamps come in either granularity. Raises ``ValueError`` for anything else.
    """
    stripped = text.strip()
    if len(stripped) == 10:
        return dt.date.fromisoformat(stripped)
    return parse_iso_datetime(stripped).date()


# arXiv's stock wording ("This paper has been withdrawn by the author(s)", "… withdrawn by
# arXiv administrators"); kept narrow so an abstract about withdrawn drugs does not match.
_WITHDRAWN = re.compile(
    r"\b(?:this\s+(?:paper|article|manuscript|submission|preprint|work)"
    r"\s+(?:has\s+been|is|was)\s+withdrawn"
    r"|withdrawn\s+by\s+(?:the\s+)?(?:authors?\b|author\(s\)|submitter|arxiv\s+admin))",
    re.IGNORECASE,
)


def says_withdrawn(*texts: str | None) -> bool:
    """True when any of ``texts`` (a comment, an abstract) carries arXiv's withdrawal notice."""
    return any(text and _WITHDRAWN.search(text) for text in texts)


def is_withdrawal_stub(version: Version) -> bool:
    """True when ``version`` is a withdrawal stub rather than a real paper version.

    arXiv replaces a withdrawn paper by a new version with no source: arXivRaw marks it with
    ``source_type`` ``I`` (the "withdrawn" source format) and lists it as ``0kb`` or ``1kb``.
    Either marker is enough; ``size_kb`` 1 alone is not, as tiny real sources exist.
    """
    return "I" in version.source_type or version.size_kb == 0


# --- arXiv author lines --------------------------------------------------------------------
#
# arXivRaw gives authors as one free-text line, e.g.
#   "Robert H. Brandenberger (McGill), Keshav Dasgupta (McGill) and Anne-Christine Davis
#    (DAMTP, Cambridge)"
#   "Peter Anders (1), Uta Fritze (2) ((1) University Utrecht, (2) University of Hertfordshire)"
# The conventions followed here are arXiv's own (arXiv/arxiv-base ``arxiv/authors``): names
# are separated by commas, colons and "and"/"&" outside parentheses; a parenthesised group
# right after a name is that author's affiliation, or numbers pointing into a final block of
# numbered affiliations; an author without an affiliation takes the one of the next author who
# has one ("A, B (X)" means both at X), except collaboration names; "et al." is dropped.

_NAME_SEPARATOR = re.compile(r"\s*[,:;]\s*(?:(?:and|&)\s+)?|\s+(?:and|&)\s+")
_LEADING_CONJUNCTION = re.compile(r"^(?:and|&)\s+", re.IGNORECASE)
_ET_AL = re.compile(r"(?:^|\s+)et\.?\s+al\.?$", re.IGNORECASE)
_NAME_SUFFIX = re.compile(r"^(?:Jr\.?|Sr\.?|II|III|IV)$")
_AFFILIATION_NUMBERS = re.compile(r"^\d+(?:\s*(?:,|&|\band\b)\s*\d+)*$", re.IGNORECASE)
_NUMBERED_AFFILIATION = re.compile(r"\(\s*(\d+)\s*\)\.?")
_COLLABORATION = re.compile(r"\b(?:collaboration|group|team|consortium)s?\b", re.IGNORECASE)


def split_author_line(line: str) -> list[AuthorName]:
    """Split an arXiv author line into :class:`AuthorName` objects, in order.

    ``name`` is the name as written (whitespace collapsed, TeX untouched); ``affiliations``
    holds the affiliations the line gives for that author. ``keyname``/``forenames`` stay
    empty: the line does not mark them. Never raises; a badly formatted line degrades to
    fewer or longer names.
    """
    text = " ".join(line.split())
    numbered: dict[str, str] = {}
    # Each entry: (name, raw parenthesised groups that follow it).
    entries: list[tuple[str, list[str]]] = []
    last_piece_is_name = False
    for is_group, content in _split_parenthesised(text):
        if is_group:
            inner = content.strip()
            if inner.startswith("("):
                numbered.update(_numbered_affiliations(inner))
            elif entries and last_piece_is_name:
                entries[-1][1].append(inner)
            last_piece_is_name = False
            continue
        pieces = [
            _LEADING_CONJUNCTION.sub("", piece.strip()) for piece in _NAME_SEPARATOR.split(content)
        ]
        previous_is_name = False
        for piece in pieces:
            if _NAME_SUFFIX.match(piece) and previous_is_name:
                # "S. James Gates, Jr.": the suffix belongs to the name before the comma.
                name, groups = entries[-1]
                entries[-1] = (f"{name}, {piece}", groups)
                continue
            name = _ET_AL.sub("", piece).strip()
            previous_is_name = bool(name)
            if name:
                entries.append((name, []))
        last_piece = pieces[-1] if pieces else ""
        last_piece_is_name = bool(last_piece) and not _ET_AL.search(last_piece)

    authors = [(name, _resolve_affiliations(groups, numbered)) for name, groups in entries]
    inherited: tuple[str, ...] = ()
    for index in range(len(authors) - 1, -1, -1):
        name, affiliations = authors[index]
        if affiliations:
            inherited = affiliations
        elif inherited and not _COLLABORATION.search(name):
            authors[index] = (name, inherited)
    return [AuthorName(name=name, affiliations=affiliations) for name, affiliations in authors]


def _split_parenthesised(text: str) -> list[tuple[bool, str]]:
    """Split ``text`` into (is_group, content) runs; groups are top-level ``( … )`` contents.

    Nested parentheses stay inside their group; an unclosed group runs to the end.
    """
    runs: list[tuple[bool, str]] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            if depth == 0:
                runs.append((False, "".join(current)))
                current = []
            else:
                current.append(char)
            depth += 1
        elif char == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                runs.append((True, "".join(current)))
                current = []
            else:
                current.append(char)
        else:
            current.append(char)
    runs.append((depth > 0, "".join(current)))
    return [(is_group, content) for is_group, content in runs if content or is_group]


def _numbered_affiliations(block: str) -> dict[str, str]:
    """``"(1) Univ A, (2) Univ B"`` -> ``{"1": "Univ A", "2": "Univ B"}``."""
    parts = _NUMBERED_AFFILIATION.split(block)
    numbered = {}
    for number, affiliation in zip(parts[1::2], parts[2::2], strict=True):
        cleaned = affiliation.strip().rstrip(",; ")
        if cleaned:
            numbered[number] = cleaned
    return numbered


def _resolve_affiliations(groups: list[str], numbered: dict[str, str]) -> tuple[str, ...]:
    affiliations: list[str] = []
    for group in groups:
        if _AFFILIATION_NUMBERS.match(group):
            for number in re.findall(r"\d+", group):
                if number in numbered and numbered[number] not in affiliations:
                    affiliations.append(numbered[number])
        elif group and group not in affiliations:
            affiliations.append(group)
    return tuple(affiliations)
