"""Parse arXiv API Atom feeds (``export.arxiv.org/api/query``) into :class:`ArxivRecord`.

Format: arXiv API User's Manual, https://info.arxiv.org/help/api/user-manual.html (sections
3.3 "Outline of an Atom feed", 3.4 "Errors", 5.2 "Details of Atom results returned"). Both the
classic format (namespaces declared on each element, titles hard-wrapped) and the current one
(namespaces declared once on ``<feed>``) are the same XML once namespaces are resolved.

An invalid query gets HTTP 400 with a feed holding one ``<entry>`` whose ``<id>`` is
``http://arxiv.org/api/errors#…`` and whose title is ``Error``: that entry is reported in
:attr:`AtomPage.api_errors`, never as a paper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from papers.identifiers import parse_arxiv_id
from papers.parsers import (
    author_name,
    child_text,
    int_or_none,
    parse_iso_datetime,
    parse_xml,
    says_withdrawn,
)
from papers.records import ArxivRecord, AuthorName, ParseError
from papers.text import fix_mojibake, readable, unwrap

__all__ = ["AtomPage", "parse_atom_feed"]

ATOM_NS = "http://www.w3.org/2005/Atom"
OPENSEARCH_NS = "http://a9.com/-/spec/opensearch/1.1/"
ARXIV_NS = "http://arxiv.org/schemas/atom"

_ERROR_ID = re.compile(r"^https?://(?:export\.)?arxiv\.org/api/errors", re.IGNORECASE)


@dataclass
class AtomPage:
    """One page of arXiv API results.

    - ``records``: the papers, in feed order.
    - ``errors``: entries that could not be parsed (skipped and named; the rest are kept).
    - ``api_errors``: the API's own error entries (summary text such as ``"incorrect id format
      for 1234.12345"``); when non-empty the query was refused and ``records`` is empty.
    - ``total_results`` / ``start_index`` / ``items_per_page``: the OpenSearch counts (0-based
      start), ``None`` when absent.
    """

    records: list[ArxivRecord] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    api_errors: list[str] = field(default_factory=list)
    total_results: int | None = None
    start_index: int | None = None
    items_per_page: int | None = None


def parse_atom_feed(data: bytes, *, source: str) -> AtomPage:
    """Parse one arXiv API response body into an :class:`AtomPage`.

    Per entry: ``<id>http://arxiv.org/abs/1605.08386v1</id>`` gives the canonical id and
    ``latest_version`` (the version the feed returned: the latest unless the query named one);
    ``<published>`` (v1) gives ``submitted``, ``<updated>`` (that version) gives ``updated``;
    authors carry their ``arxiv:affiliation`` elements; categories are
    ``arxiv:primary_category`` first, then the other ``<category term>`` values without
    repeats; ``arxiv:comment``, ``arxiv:journal_ref`` and ``arxiv:doi`` fill the matching
    fields. The feed lists no versions, so ``versions`` stays empty. ``withdrawn`` is set when
    the comment or abstract carries arXiv's withdrawal notice.

    Raises :class:`ParseError` (naming ``source``, and line and column for malformed XML) when
    the body is not well-formed XML, carries a DTD or is not an Atom ``<feed>``.
    """
    root = parse_xml(data, source=source)
    if root.tag != _atom("feed"):
        raise ParseError(
            f"not an Atom feed: root element <{etree.QName(root).localname}> at line "
            f"{root.sourceline}, expected <feed> in {ATOM_NS}",
            source=source,
        )
    page = AtomPage(
        total_results=int_or_none(root.findtext(f"{{{OPENSEARCH_NS}}}totalResults")),
        start_index=int_or_none(root.findtext(f"{{{OPENSEARCH_NS}}}startIndex")),
        items_per_page=int_or_none(root.findtext(f"{{{OPENSEARCH_NS}}}itemsPerPage")),
    )
    for index, entry in enumerate(root.iterfind(_atom("entry")), start=1):
        entry_id = child_text(entry, _atom("id")).strip()
        if _ERROR_ID.match(entry_id):
            message = unwrap(child_text(entry, _atom("summary"))) or entry_id
            page.api_errors.append(message)
            continue
        try:
            page.records.append(_parse_entry(entry, entry_id))
        except (ValueError, TypeError) as problem:
            label = entry_id or f"entry {index} (line {entry.sourceline})"
            message = getattr(problem, "message", str(problem))
            page.errors.append(ParseError(message, source=source, record=label))
    return page


def _parse_entry(entry: etree._Element, entry_id: str) -> ArxivRecord:
    if not entry_id:
        raise ValueError("entry has no <id>")
    arxiv_id, version = parse_arxiv_id(entry_id)
    title_raw = child_text(entry, _atom("title"))  # none: stored under a placeholder, flagged
    abstract_raw = child_text(entry, _atom("summary"))
    published = child_text(entry, _atom("published")).strip()
    updated = child_text(entry, _atom("updated")).strip()
    submitted = parse_iso_datetime(published).date() if published else None

    categories: list[str] = []
    primary = entry.find(f"{{{ARXIV_NS}}}primary_category")
    terms = [primary.get("term")] if primary is not None else []
    terms += [category.get("term") for category in entry.iterfind(_atom("category"))]
    for term in terms:
        term = (term or "").strip()
        if term and term not in categories:
            categories.append(term)

    comments = unwrap(child_text(entry, f"{{{ARXIV_NS}}}comment"))
    return ArxivRecord(
        arxiv_id=arxiv_id,
        title=readable(title_raw),
        title_raw=title_raw,
        abstract=fix_mojibake(unwrap(abstract_raw)),
        abstract_raw=abstract_raw,
        authors=[_author(author) for author in entry.iterfind(_atom("author"))],
        categories=categories,
        latest_version=version,
        submitted=submitted,
        updated=parse_iso_datetime(updated).date() if updated else submitted,
        comments=comments,
        journal_ref=unwrap(child_text(entry, f"{{{ARXIV_NS}}}journal_ref")),
        doi=child_text(entry, f"{{{ARXIV_NS}}}doi").strip(),
        withdrawn=says_withdrawn(comments, abstract_raw),
        source="atom",
    )


def _author(element: etree._Element) -> AuthorName:
    return author_name(
        child_text(element, _atom("name")),
        affiliations=[
            "".join(affiliation.itertext())
            for affiliation in element.iterfind(f"{{{ARXIV_NS}}}affiliation")
        ],
    )


def _atom(tag: str) -> str:
    return f"{{{ATOM_NS}}}{tag}"
