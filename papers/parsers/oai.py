"""Parse arXiv OAI-PMH responses (``ListRecords``, ``GetRecord``) into :class:`ArxivRecord`.

Formats, detected per record from the namespace of the element inside ``<metadata>``:

- ``arXivRaw`` (http://arxiv.org/OAI/arXivRaw/, schema http://arxiv.org/OAI/arXivRaw.xsd):
  every version with its RFC 2822 date, size and source type; authors as one free-text line;
- ``arXiv`` (http://arxiv.org/OAI/arXiv/, schema http://arxiv.org/OAI/arXiv.xsd): structured
  authors with affiliations, ``created``/``updated`` dates, no version list;
- ``oai_dc`` (http://www.openarchives.org/OAI/2.0/oai_dc/): Dublin Core, with subject *names*
  instead of category codes.

The envelope follows the OAI-PMH 2.0 specification
(http://www.openarchives.org/OAI/openarchivesprotocol.html): ``<error code=…>``, ``<header
status="deleted">``, ``<resumptionToken completeListSize=… cursor=…>``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

from papers.identifiers import parse_arxiv_id
from papers.parsers import (
    author_name,
    child_text,
    int_or_none,
    is_withdrawal_stub,
    parse_iso_date,
    parse_iso_datetime,
    parse_rfc2822,
    parse_xml,
    says_withdrawn,
    split_author_line,
)
from papers.records import ArxivRecord, AuthorName, ParseError, Version
from papers.taxonomy import UnknownCategory, category_for_name, get_category
from papers.text import fix_mojibake, readable, unwrap

__all__ = ["OaiError", "OaiPage", "parse_oai_page"]

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
ARXIV_RAW_NS = "http://arxiv.org/OAI/arXivRaw/"
ARXIV_NS = "http://arxiv.org/OAI/arXiv/"
OAI_DC_NS = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC_NS = "http://purl.org/dc/elements/1.1/"

SUPPORTED_VERBS = ("ListRecords", "GetRecord")
OTHER_VERBS = ("Identify", "ListIdentifiers", "ListMetadataFormats", "ListSets")


@dataclass(frozen=True)
class OaiError:
    """An OAI-PMH protocol error the repository answered with instead of records.

    ``code`` is the spec's error code (``noRecordsMatch``, ``badResumptionToken``,
    ``idDoesNotExist``, ``cannotDisseminateFormat``, ``badArgument``, ``badVerb``,
    ``noSetHierarchy``, ``noMetadataFormats``); ``message`` is the repository's text.
    """

    code: str
    message: str


@dataclass
class OaiPage:
    """One OAI-PMH response.

    - ``records``: parsed records, in page order.
    - ``errors``: record-level problems (a record that could not be parsed is skipped and
      named here; the rest of the page is kept).
    - ``deleted``: canonical ids of headers with ``status="deleted"``.
    - ``resumption_token``: the token for the next request, ``None`` on the last page (an
      empty ``<resumptionToken/>`` is reported as ``None``); ``complete_list_size`` and
      ``cursor`` as the repository gave them, else ``None``.
    - ``oai_error``: set when the repository answered with ``<error>`` (then no records).
    - ``response_date``: aware UTC datetime of ``<responseDate>``.
    - ``verb``: ``"ListRecords"`` or ``"GetRecord"`` (``None`` on an error response).
    - ``metadata_prefix``: from the request, else the format of the records (resumption
      requests do not repeat it), else ``None``.
    """

    records: list[ArxivRecord] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    resumption_token: str | None = None
    complete_list_size: int | None = None
    cursor: int | None = None
    oai_error: OaiError | None = None
    response_date: dt.datetime | None = None
    verb: str | None = None
    metadata_prefix: str | None = None


def parse_oai_page(data: bytes, *, source: str) -> OaiPage:
    """Parse one OAI-PMH response body (``ListRecords`` or ``GetRecord``) into an :class:`OaiPage`.

    ``data`` is the raw response body; ``source`` (file name or URL) is used in error messages.

    Raises :class:`ParseError` (naming ``source``, and line and column for malformed XML) when
    the body is not well-formed XML, carries a DTD, is not an OAI-PMH envelope (for example a
    bare ``<error>`` element), or answers another verb (``Identify``, ``ListSets`` …).
    Problems inside one record do not raise: they land in :attr:`OaiPage.errors`.
    """
    root = parse_xml(data, source=source)
    if root.tag != _oai("OAI-PMH"):
        raise ParseError(
            f"not an OAI-PMH response: root element <{etree.QName(root).localname}> at line "
            f"{root.sourceline}, expected <OAI-PMH> in {OAI_NS}",
            source=source,
        )
    page = OaiPage()
    response_date = child_text(root, _oai("responseDate"))
    if response_date:
        try:
            page.response_date = parse_iso_datetime(response_date)
        except ValueError as error:
            raise ParseError(f"bad responseDate {response_date!r}", source=source) from error
    request = root.find(_oai("request"))
    if request is not None:
        page.metadata_prefix = request.get("metadataPrefix")

    error = root.find(_oai("error"))
    if error is not None:
        page.oai_error = OaiError(code=error.get("code", ""), message=unwrap(error.text))
        return page

    body = next(
        (element for verb in SUPPORTED_VERBS if (element := root.find(_oai(verb))) is not None),
        None,
    )
    if body is None:
        other = next((verb for verb in OTHER_VERBS if root.find(_oai(verb)) is not None), None)
        what = f"verb {other}" if other else "no ListRecords or GetRecord element"
        raise ParseError(
            f"unsupported OAI-PMH response ({what}); expected ListRecords or GetRecord",
            source=source,
        )
    page.verb = etree.QName(body).localname

    formats = set()
    for index, record_element in enumerate(body.iterfind(_oai("record")), start=1):
        label = f"record {index} (line {record_element.sourceline})"
        try:
            header = record_element.find(_oai("header"))
            if header is None:
                raise ValueError("record has no <header>")
            identifier = child_text(header, _oai("identifier"))
            if not identifier:
                raise ValueError("header has no <identifier>")
            label = identifier
            arxiv_id, _ = parse_arxiv_id(identifier)
            label = arxiv_id
            if header.get("status") == "deleted":
                page.deleted.append(arxiv_id)
                continue
            metadata_format, record = _parse_record(record_element, header, arxiv_id)
        except (ValueError, TypeError) as problem:
            message = getattr(problem, "message", str(problem))
            page.errors.append(ParseError(message, source=source, record=label))
            continue
        formats.add(metadata_format)
        page.records.append(record)

    token = body.find(_oai("resumptionToken"))
    if token is not None:
        page.resumption_token = (token.text or "").strip() or None
        page.complete_list_size = int_or_none(token.get("completeListSize"))
        page.cursor = int_or_none(token.get("cursor"))
    if page.metadata_prefix is None and len(formats) == 1:
        page.metadata_prefix = formats.pop()
    return page


def _parse_record(
    record_element: etree._Element, header: etree._Element, arxiv_id: str
) -> tuple[str, ArxivRecord]:
    metadata = record_element.find(_oai("metadata"))
    payload = None
    if metadata is not None:
        payload = next((child for child in metadata if isinstance(child.tag, str)), None)
    if payload is None:
        raise ValueError("record is not deleted but has no <metadata>")
    namespace = etree.QName(payload).namespace
    if namespace not in _FORMATS:
        raise ValueError(f"unsupported metadata format {namespace!r}")
    metadata_format, parse = _FORMATS[namespace]
    record = parse(payload)
    if record.arxiv_id != arxiv_id:
        raise ValueError(f"metadata id {record.arxiv_id!r} differs from header id {arxiv_id!r}")
    datestamp = child_text(header, _oai("datestamp"))
    record.datestamp = parse_iso_date(datestamp) if datestamp else None
    return metadata_format, record


def _parse_arxiv_raw(element: etree._Element) -> ArxivRecord:
    """arXivRaw: versions with sizes and source types, authors as one free-text line."""

    def text(tag: str) -> str:
        return child_text(element, f"{{{ARXIV_RAW_NS}}}{tag}")

    arxiv_id, _ = parse_arxiv_id(text("id"))
    versions = sorted(
        (_raw_version(version) for version in element.iterfind(f"{{{ARXIV_RAW_NS}}}version")),
        key=lambda version: version.number,
    )
    if not versions:
        raise ValueError("arXivRaw record has no <version>")
    title_raw, abstract_raw = text("title"), text("abstract")
    comments = unwrap(text("comments"))
    latest = versions[-1]
    return ArxivRecord(
        arxiv_id=arxiv_id,
        title=readable(title_raw),
        title_raw=title_raw,
        abstract=fix_mojibake(unwrap(abstract_raw)),
        abstract_raw=abstract_raw,
        authors=split_author_line(text("authors")),
        categories=text("categories").split(),
        versions=versions,
        latest_version=latest.number,
        submitted=versions[0].submitted.date() if versions[0].submitted else None,
        updated=latest.submitted.date() if latest.submitted else None,
        comments=comments,
        journal_ref=unwrap(text("journal-ref")),
        doi=text("doi").strip(),
        report_no=unwrap(text("report-no")),
        license=text("license").strip(),
        submitter=unwrap(text("submitter")),
        withdrawn=is_withdrawal_stub(latest) or says_withdrawn(comments, abstract_raw),
        source="oai:arXivRaw",
    )


_VERSION_NUMBER = re.compile(r"v(\d+)")
_SIZE_KB = re.compile(r"(\d+)\s*kb", re.IGNORECASE)


def _raw_version(element: etree._Element) -> Version:
    label = element.get("version", "")
    number = _VERSION_NUMBER.fullmatch(label.strip())
    if not number:
        raise ValueError(f"bad version label {label!r}")
    date = child_text(element, f"{{{ARXIV_RAW_NS}}}date")
    size = _SIZE_KB.fullmatch(child_text(element, f"{{{ARXIV_RAW_NS}}}size").strip())
    return Version(
        number=int(number[1]),
        submitted=parse_rfc2822(date) if date.strip() else None,
        size_kb=int(size[1]) if size else None,
        source_type=child_text(element, f"{{{ARXIV_RAW_NS}}}source_type").strip(),
    )


def _parse_arxiv(element: etree._Element) -> ArxivRecord:
    """arXiv format: structured authors, created/updated dates, no version list (so the
    version the record describes is unknown: ``latest_version`` None)."""

    def text(tag: str) -> str:
        return child_text(element, f"{{{ARXIV_NS}}}{tag}")

    arxiv_id, _ = parse_arxiv_id(text("id"))
    title_raw, abstract_raw = text("title"), text("abstract")
    created = text("created").strip()
    updated = text("updated").strip()
    submitted = parse_iso_date(created) if created else None
    comments = unwrap(text("comments"))
    return ArxivRecord(
        arxiv_id=arxiv_id,
        title=readable(title_raw),
        title_raw=title_raw,
        abstract=fix_mojibake(unwrap(abstract_raw)),
        abstract_raw=abstract_raw,
        authors=[
            _structured_author(author)
            for author in element.iterfind(f"{{{ARXIV_NS}}}authors/{{{ARXIV_NS}}}author")
        ],
        categories=text("categories").split(),
        submitted=submitted,
        updated=parse_iso_date(updated) if updated else submitted,
        comments=comments,
        journal_ref=unwrap(text("journal-ref")),
        doi=text("doi").strip(),
        report_no=unwrap(text("report-no")),
        license=text("license").strip(),
        withdrawn=says_withdrawn(comments, abstract_raw),
        source="oai:arXiv",
    )


def _structured_author(element: etree._Element) -> AuthorName:
    def text(tag: str) -> str:
        return child_text(element, f"{{{ARXIV_NS}}}{tag}")

    keyname, forenames, suffix = text("keyname"), text("forenames"), text("suffix")
    return author_name(
        keyname=keyname,
        forenames=forenames,
        suffix=suffix,
        affiliations=[
            affiliation.text or "" for affiliation in element.iterfind(f"{{{ARXIV_NS}}}affiliation")
        ],
    )


_COMMENT_PREFIX = re.compile(r"^\s*Comment:\s*", re.IGNORECASE)
_NAME_SUFFIXES = frozenset({"Jr", "Jr.", "Sr", "Sr.", "II", "III", "IV"})


def _parse_oai_dc(element: etree._Element) -> ArxivRecord:
    """oai_dc: subject names mapped to codes, "Last, First" creators, v1 and latest dates;
    the version only when an identifier carries one (else ``latest_version`` None)."""

    def texts(tag: str) -> list[str]:
        return [child.text or "" for child in element.iterfind(f"{{{DC_NS}}}{tag}")]

    arxiv_id, version, doi, journal_ref = None, None, "", ""
    for identifier in (value.strip() for value in texts("identifier")):
        if identifier.lower().startswith("doi:"):
            doi = doi or identifier[len("doi:") :].strip()
            continue
        try:
            found = parse_arxiv_id(identifier)
        except ValueError:
            # arXiv lists the journal reference as a further identifier.
            if not identifier.startswith(("http://", "https://")):
                journal_ref = journal_ref or unwrap(identifier)
            continue
        if arxiv_id is None:
            arxiv_id, version = found
    if arxiv_id is None:
        raise ValueError("no dc:identifier holds an arXiv identifier")

    titles = texts("title")
    title_raw = titles[0] if titles else ""  # none: stored under a placeholder, flagged

    abstract_raw, comments = "", ""
    for description in texts("description"):
        if _COMMENT_PREFIX.match(description) and not comments:
            comments = unwrap(_COMMENT_PREFIX.sub("", description))
        elif not abstract_raw:
            abstract_raw = description
        elif not comments:
            comments = unwrap(description)

    subjects = [unwrap(subject) for subject in texts("subject")]
    categories = _subject_codes(subjects)
    dates = [parse_iso_date(value) for value in texts("date") if value.strip()]
    return ArxivRecord(
        arxiv_id=arxiv_id,
        title=readable(title_raw),
        title_raw=title_raw,
        abstract=fix_mojibake(unwrap(abstract_raw)),
        abstract_raw=abstract_raw,
        authors=[_dc_creator(creator) for creator in texts("creator") if creator.strip()],
        categories=categories,
        latest_version=version,
        submitted=dates[0] if dates else None,
        updated=dates[-1] if dates else None,
        comments=comments,
        journal_ref=journal_ref,
        doi=doi,
        withdrawn=says_withdrawn(comments, abstract_raw),
        source="oai:oai_dc",
    )


def _subject_codes(subjects: list[str]) -> list[str]:
    """Map subject names to codes in order; subjects that are not categories (MSC or ACM
    classes) are skipped, but at least one must map."""
    codes: list[str] = []
    for subject in subjects:
        try:
            code = category_for_name(subject)
        except UnknownCategory:
            try:
                code = get_category(subject).code
            except UnknownCategory:
                continue
        if code not in codes:
            codes.append(code)
    if not codes:
        raise ValueError(f"no dc:subject names an arXiv category: {subjects!r}")
    return codes


def _dc_creator(creator: str) -> AuthorName:
    """``"Liepins, Vilnis"`` -> ``Vilnis Liepins``; arXiv writes ``"Keyname Suffix, Forenames"``."""
    text = unwrap(creator)
    keyname, comma, forenames = text.partition(",")
    keyname, forenames = keyname.strip(), forenames.strip()
    if not comma:
        return author_name(text, keyname=text)
    suffix = ""
    head, _, last = keyname.rpartition(" ")
    if head and last in _NAME_SUFFIXES:
        keyname, suffix = head, last
    return author_name(keyname=keyname, forenames=forenames, suffix=suffix)


_FORMATS: dict[str, tuple[str, Callable[[etree._Element], ArxivRecord]]] = {
    ARXIV_RAW_NS: ("arXivRaw", _parse_arxiv_raw),
    ARXIV_NS: ("arXiv", _parse_arxiv),
    OAI_DC_NS: ("oai_dc", _parse_oai_dc),
}


def _oai(tag: str) -> str:
    return f"{{{OAI_NS}}}{tag}"
