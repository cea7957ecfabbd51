"""Parsers that turn arXiv sources into :class:`papers.records.ArxivRecord` objects.

- :mod:`papers.parsers.oai`: OAI-PMH pages (``ListRecords`` / ``GetRecord``) in ``arXivRaw``,
  ``arXiv`` and ``oai_dc`` metadata formats;
- :mod:`papers.parsers.atom`: Atom feeds from the arXiv API (``/api/query``);
- :mod:`papers.parsers.snapshot`: Kaggle ``arxiv-metadata-oai-snapshot.json`` lines.

This module holds what they share: safe XML parsing, date parsing, the withdrawal rule, author
names in display form and the splitting of arXiv's free-text author lines. Every parser gives
titles, names and affiliations through :func:`papers.text.readable` (TeX accents read,
mojibake repaired, formulas untouched) and keeps the title and abstract as received in
``title_raw``/``abstract_raw``; abstracts get line unwrapping and mojibake repair only (their
formulas are many, and TeX in them is left for the page to render). Plain Python: nothing here
imports Django.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections.abc import Iterable

from lxml import etree

from papers.records import AuthorName, ParseError, Version
from papers.text import readable

__all__ = [
    "author_name",
    "child_text",
    "int_or_none",
    "is_withdrawal_stub",
    "parse_iso_date",
    "parse_iso_datetime",
    "parse_rfc2822",
    "parse_xml",
    "says_withdrawn",
    "split_author_line",
    "split_dois",
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


# What arXiv writes (``Wed, 23 Jan 2008 21:06:41 GMT``), read without the general parser.
_ARXIV_DATE = re.compile(
    r"(?:[A-Z][a-z]{2}, )?(\d{1,2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) (?:GMT|UTC)"
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
        start=1,
    )
}


def parse_rfc2822(text: str) -> dt.datetime:
    """Parse an RFC 2822 date (``"Wed, 23 Jan 2008 21:06:41 GMT"``) to an aware UTC datetime.

    Used by arXivRaw ``<version><date>`` and the Kaggle snapshot's ``versions[].created``.
    Raises ``ValueError`` for text that is not such a date.
    """
    text = text.strip()
    if (match := _ARXIV_DATE.fullmatch(text)) and match[2] in _MONTHS:
        day, _, year, hour, minute, second = match.groups()
        try:
            return dt.datetime(
                int(year),
                _MONTHS[match[2]],
                int(day),
                int(hour),
                int(minute),
                int(second),
                tzinfo=dt.UTC,
            )
        except ValueError as error:
            raise ValueError(f"not an RFC 2822 date: {text!r}") from error
    try:
        parsed = email.utils.parsedate_to_datetime(text)
        if parsed.tzinfo is None:
            # RFC 2822 "-0000" means UTC with unknown local offset.
            parsed = parsed.replace(tzinfo=dt.UTC)
        # OverflowError: a date at the edge of the calendar (9999-12-31 with a negative offset).
        return parsed.astimezone(dt.UTC)
    except (TypeError, ValueError, IndexError, OverflowError) as error:
        raise ValueError(f"not an RFC 2822 date: {text!r}") from error


def parse_iso_datetime(text: str) -> dt.datetime:
    """Parse an ISO 8601 timestamp (``2006-01-02T14:57:58Z``, ``…-04:00``) to aware UTC.

    A timestamp without an offset is taken as UTC (OAI-PMH and the arXiv API only emit UTC).
    Raises ``ValueError`` for anything else.
    """
    parsed = dt.datetime.fromisoformat(text.strip())
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(f"date out of range: {text.strip()!r}") from None


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
    # The substring test first: the pattern is slow to scan a whole abstract with.
    return any(text and "withdrawn" in text.lower() and _WITHDRAWN.search(text) for text in texts)


def is_withdrawal_stub(version: Version) -> bool:
    """True when ``version`` is a withdrawal stub rather than a real paper version.

    arXiv replaces a withdrawn paper by a new version with no source: arXivRaw marks it with
    ``source_type`` ``I`` (the "withdrawn" source format) and lists it as ``0kb`` or ``1kb``.
    Either marker is enough; ``size_kb`` 1 alone is not, as tiny real sources exist.
    """
    return "I" in version.source_type or version.size_kb == 0


def author_name(
    name: str | None = None,
    *,
    keyname: str = "",
    forenames: str = "",
    suffix: str = "",
    affiliations: Iterable[str] = (),
) -> AuthorName:
    """An :class:`AuthorName` in display form, as every parser builds them.

    Each part goes through :func:`papers.text.readable` (``"C. Bal\\'azs"`` -> ``"C. Balázs"``,
    ``"Dirk WÃ¼bben"`` -> ``"Dirk Wübben"``); without a ``name`` the display name is
    "Forenames Keyname Suffix". ``raw`` keeps the name as given (blanks collapsed), so a
    repair can be seen and undone. A collaboration loses a leading "The" (``"The BABAR
    Collaboration"`` and ``"BABAR Collaboration"`` are one author). Blank and repeated
    affiliations are dropped, the order kept. Never raises.
    """
    if name is None:
        raw = " ".join(" ".join(part for part in (forenames, keyname, suffix) if part).split())
    else:
        raw = " ".join(name.split())
    keyname, forenames, suffix = readable(keyname), readable(forenames), readable(suffix)
    if name is None:
        name = " ".join(part for part in (forenames, keyname, suffix) if part)
    else:
        name = readable(name)
    if name[:4].lower() == "the " and _COLLABORATION.search(name):
        name = name[4:].lstrip()
        if keyname[:4].lower() == "the ":
            keyname = keyname[4:].lstrip()
    return AuthorName(
        name=name,
        keyname=keyname,
        forenames=forenames,
        suffix=suffix,
        affiliations=tuple(dict.fromkeys(text for text in map(readable, affiliations) if text))
        if affiliations
        else (),
        raw=raw,
    )


# A DOI (Crossref's pattern for the DOIs it registers, widened to any suffix without blanks):
# "10." + registrant code + "/" + suffix. https://www.crossref.org/blog/dois-and-matching-regular-expressions/
_DOI = re.compile(r"10\.\d{4,9}/\S+")
# arXiv's doi field lists several DOIs separated by commas, semicolons or blanks; a separator
# counts only before the next "10.", since old (SICI) DOIs hold semicolons themselves.
_DOI_SEPARATOR = re.compile(r"[\s,;]+(?=(?:doi:|https?://(?:dx\.)?doi\.org/)?10\.)", re.I)
_DOI_PREFIX = re.compile(r"^(?:doi:\s*|https?://(?:dx\.)?doi\.org/)", re.I)


def split_dois(text: str | None) -> tuple[list[str], list[str]]:
    """Split a DOI field into ``(dois, invalid)``, both in the order written.

    ``"10.1103/PhysRevD.93.016005, 10.1103/PhysRevD.98.079901;10.1103/PhysRevD.98.079903"``
    gives the three DOIs. ``doi:`` and ``https://doi.org/`` prefixes are dropped, trailing
    punctuation (``.,;``) too; repeats are kept once. Pieces that are not DOIs (``10.1234``
    without a suffix, free text) land in ``invalid``. Never raises.
    """
    dois: list[str] = []
    invalid: list[str] = []
    for piece in _DOI_SEPARATOR.split(text or ""):
        piece = _DOI_PREFIX.sub("", piece.strip()).rstrip(".,;")
        if not piece:
            continue
        if _DOI.fullmatch(piece):
            if piece not in dois:
                dois.append(piece)
        else:
            invalid.append(piece)
    return dois, invalid


# --- arXiv author lines --------------------------------------------------------------------
#
# arXivRaw gives authors as one free-text line, e.g.
#   "Robert H. Brandenberger (McGill), Keshav Dasgupta (McGill) and Anne-Christine Davis
#    (DAMTP, Cambridge)"
#   "Peter Anders (1), Uta Fritze (2) ((1) University Utrecht, (2) University of Hertfordshire)"
#   "T. Yamazaki, Y. Aoki, …, and J. M. Zanotti, for the RBC and UKQCD Collaborations"
# The conventions followed here are arXiv's own (arXiv/arxiv-base ``arxiv/authors``): names
# are separated by commas, colons and "and"/"&" outside parentheses; a parenthesised group
# right after a name is that author's affiliation, or numbers pointing into a final block of
# numbered affiliations; an author without an affiliation takes the one of the next author who
# has one ("A, B (X)" means both at X), except collaboration names; "et al." is dropped.
# "for the X Collaboration" / "on behalf of the X Collaboration" (in the line or in
# parentheses after a name) names one collaboration, never an affiliation.

_NAME_SEPARATOR = re.compile(r"\s*[,:;]\s*(?:(?:and|&)\s+)?|\s+(?:and|&)\s+")
_LEADING_CONJUNCTION = re.compile(r"^(?:and|&)\s+", re.IGNORECASE)
_ET_AL = re.compile(r"(?:^|\s+)et\.?\s+al\.?$|^(?:and\s+)?others$", re.IGNORECASE)
_NAME_SUFFIX = re.compile(r"^(?:Jr\.?|Sr\.?|II|III|IV)$")
_AFFILIATION_NUMBERS = re.compile(r"^\d+(?:\s*(?:,|&|\band\b)\s*\d+)*$", re.IGNORECASE)
_NUMBERED_AFFILIATION = re.compile(r"\(\s*(\d+)\s*\)\.?")
_COLLABORATION_WORD = r"\b(?:collaboration|group|team|consorti(?:um|a))s?\b"
_COLLABORATION = re.compile(_COLLABORATION_WORD, re.IGNORECASE)
_ON_BEHALF = re.compile(
    r"(?:^|(?<=[\s,;:]))(?:for|on\s+behalf\s+of)\s+(?:the\s+)?"
    rf"(?P<name>[^,;:()]*?{_COLLABORATION_WORD})",
    re.IGNORECASE,
)


def split_author_line(line: str) -> list[AuthorName]:
    """Split an arXiv author line into :class:`AuthorName` objects, in order.

    ``name`` and ``affiliations`` are in display form (see :func:`author_name`: TeX accents
    read, whitespace collapsed); ``affiliations`` holds the affiliations the line gives for
    that author, numbered ones resolved. ``keyname``/``forenames`` stay empty: the line does
    not mark them. Collaborations are authors of their own (``"for the JLQCD Collaboration"``
    -> ``"JLQCD Collaboration"``), "et al." and "others" are dropped. Never raises; a badly
    formatted line degrades to fewer or longer names.
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
            elif collaboration := _ON_BEHALF.fullmatch(inner):
                entries.append((collaboration["name"].strip(), []))
            elif entries and last_piece_is_name:
                entries[-1][1].append(inner)
            last_piece_is_name = False
            continue
        for is_collaboration, segment in _collaboration_phrases(content):
            if is_collaboration:
                entries.append((segment, []))
                last_piece_is_name = False
            elif segment.strip(" ,;:"):
                last_piece_is_name = _split_names(segment, entries)

    authors = [(name, _resolve_affiliations(groups, numbered)) for name, groups in entries]
    inherited: tuple[str, ...] = ()
    for index in range(len(authors) - 1, -1, -1):
        name, affiliations = authors[index]
        if affiliations:
            inherited = affiliations
        elif inherited and not _COLLABORATION.search(name):
            authors[index] = (name, inherited)
    return [author_name(name, affiliations=affiliations) for name, affiliations in authors]


def _collaboration_phrases(content: str) -> list[tuple[bool, str]]:
    """Split a run of names around "for the X Collaboration" phrases: (is_collaboration, text)."""
    segments: list[tuple[bool, str]] = []
    done = 0
    for match in _ON_BEHALF.finditer(content):
        segments += [(False, content[done : match.start()]), (True, match["name"].strip())]
        done = match.end()
    segments.append((False, content[done:]))
    return segments


def _split_names(content: str, entries: list[tuple[str, list[str]]]) -> bool:
    """Append the names of a run of text to ``entries``; True when it ends with a name."""
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
    return bool(last_piece) and not _ET_AL.search(last_piece)


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
