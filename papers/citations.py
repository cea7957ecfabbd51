"""Citations of papers: BibTeX (written with ``bibtexparser`` 2) and RIS (written with
``rispy``), one entry per paper, for the paper page's "Cite" block, its ``cite.bib`` /
``cite.ris`` downloads, the reader's library export and the API's BibTeX.

BibTeX keeps the TeX that arXiv titles and abstracts carry (arXiv asks submitters for TeX in
metadata): ``SrTiO$_3$`` stays ``SrTiO$_3$``. Only what would break the file or a LaTeX run
is escaped (:func:`bibtex_text`): ``& % #`` everywhere, ``_ ^`` outside math, a ``$`` with no
partner, and braces without a partner (BibTeX counts every brace, escaped or not, so an
unbalanced one would end the field early). Titles are wrapped in a second pair of braces so
that BibTeX styles keep their capitalisation (``{{BERT} ...}``).

Authors are written "Last, First" (``von Last, Jr, First``): from the arXiv record's
keyname / forenames / suffix where stored, otherwise split as BibTeX splits a "First Last"
name (``bibtexparser``'s name parser). All stored authors are listed; when the source
counted more than it named, ``and others`` ends the list.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import rispy
from bibtexparser import BibtexFormat, write_string
from bibtexparser.library import Library
from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts
from bibtexparser.model import Entry, Field
from django.conf import settings

from .models import Author, Authorship, Paper

__all__ = [
    "BIBTEX_CONTENT_TYPE",
    "RIS_CONTENT_TYPE",
    "Citation",
    "bibtex_document",
    "bibtex_entry",
    "bibtex_key",
    "bibtex_name",
    "bibtex_text",
    "citation_authors",
    "citations_of",
    "paper_pdf_url",
    "ris_document",
    "ris_entry",
    "ris_name",
]

BIBTEX_CONTENT_TYPE = "application/x-bibtex; charset=utf-8"
RIS_CONTENT_TYPE = "application/x-research-info-systems; charset=utf-8"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def paper_pdf_url(paper: Paper) -> str:
    """The PDF on arXiv of the version the stored metadata describes
    (``https://arxiv.org/pdf/2409.01234v2``; without ``vN`` when no source said which
    version); ``""`` for a withdrawn or deleted paper and for papers not on arXiv (see
    ``Paper.pdf_url``)."""
    url = paper.pdf_url
    if url and paper.latest_version:
        url += f"v{paper.latest_version}"
    return url


@dataclass(frozen=True)
class Citation:
    """What a citation says of one paper: ``paper`` (a :class:`~papers.models.Paper` with
    ``primary_category`` loaded) and ``authors`` (its stored :class:`~papers.models.Author`
    rows in author order; ``paper.author_count`` may be larger)."""

    paper: Paper
    authors: Sequence[Author]

    @property
    def more_authors(self) -> bool:
        """The source counted authors it did not name (BibTeX's ``and others``)."""
        return self.paper.author_count > len(self.authors)

    @property
    def url(self) -> str:
        """The abstract page on arXiv, or this site's page for papers not on arXiv."""
        paper = self.paper
        return paper.arxiv_url or settings.SITE_URL + paper.get_absolute_url()

    @property
    def doi(self) -> str:
        """One DOI (BibTeX's and RIS's field holds one), or ``""``."""
        dois = self.paper.doi_links
        return dois[0] if dois else ""


def citation_authors(paper_ids: Iterable[int]) -> dict[int, list[Author]]:
    """``{paper id: [Author, ...]}`` in author order, for every paper of ``paper_ids`` (an
    empty list for a paper with none). One query."""
    ids = list(paper_ids)
    authors: dict[int, list[Author]] = defaultdict(list)
    rows = (
        Authorship.objects.filter(paper_id__in=ids)
        .select_related("author")
        .only(
            "paper_id",
            "position",
            "author__name",
            "author__keyname",
            "author__forenames",
            "author__suffix",
        )
        .order_by("paper_id", "position")
    )
    for authorship in rows:
        authors[authorship.paper_id].append(authorship.author)
    return {paper_id: authors[paper_id] for paper_id in ids}


def citations_of(papers: Iterable[Paper]) -> list[Citation]:
    """:class:`Citation` of each of ``papers`` (with ``primary_category`` loaded), in order,
    with all their stored authors: one query for the authors."""
    papers = list(papers)
    authors = citation_authors(paper.pk for paper in papers)
    return [Citation(paper=paper, authors=authors[paper.pk]) for paper in papers]


# --- BibTeX --------------------------------------------------------------------------------

_ALWAYS = {"&": r"\&", "%": r"\%", "#": r"\#"}
_TEXT_ONLY = {"_": r"\_", "^": r"\^{}"}


def _unpaired_braces(text: str) -> set[int]:
    """Positions of the braces in ``text`` that have no partner (escaped ones counted too:
    BibTeX does)."""
    opened: list[int] = []
    unpaired: set[int] = set()
    for index, char in enumerate(text):
        if char == "{":
            opened.append(index)
        elif char == "}":
            if opened:
                opened.pop()
            else:
                unpaired.add(index)
    return unpaired | set(opened)


def bibtex_text(text: str) -> str:
    """``text`` (TeX as arXiv metadata carries it) made safe as a braced BibTeX value, its
    TeX kept: whitespace runs become one space; ``& % #`` are escaped unless already escaped;
    ``_`` and ``^`` outside ``$…$`` are escaped; when the unescaped ``$`` do not pair up they
    are all taken for dollar signs (``\\$``); a brace without a partner becomes
    ``\\textbraceleft{}`` / ``\\textbraceright{}``."""
    text = " ".join(text.split())
    unpaired = _unpaired_braces(text)
    dollars = [m.start() for m in re.finditer(r"(?<!\\)\$", text)]
    math_ok = len(dollars) % 2 == 0
    out: list[str] = []
    in_math = False
    escaped = False  # the previous character was an unescaped backslash
    for index, char in enumerate(text):
        if index in unpaired:
            if escaped:  # "\{" without a partner: drop the backslash already written
                out.pop()
            out.append(r"\textbraceleft{}" if char == "{" else r"\textbraceright{}")
            escaped = False
            continue
        if escaped:
            out.append(char)
            escaped = False
            continue
        if char == "\\":
            out.append(char)
            escaped = True
        elif char == "$":
            if math_ok:
                in_math = not in_math
                out.append(char)
            else:
                out.append(r"\$")
        elif char in _ALWAYS:
            out.append(_ALWAYS[char])
        elif char in _TEXT_ONLY and not in_math:
            out.append(_TEXT_ONLY[char])
        else:
            out.append(char)
    if escaped:  # a final lone backslash would escape the closing brace for LaTeX
        out[-1] = r"\textbackslash{}"
    return "".join(out)


def bibtex_name(author: Author) -> str:
    """``author`` as BibTeX's "von Last, Jr, First" (``"van Beethoven, Ludwig"``), from the
    stored keyname / forenames / suffix where the source gave them, else split from the
    display name as BibTeX would; a single word (``"Madonna"``) stays as it is."""
    if author.keyname:
        parts = [author.keyname]
        if author.suffix:
            parts.append(author.suffix)
        if author.forenames:
            parts.append(author.forenames)
        return bibtex_text(", ".join(parts))
    name = bibtex_text(author.name)
    if "," in name:  # already "Last, First" (or a name BibTeX must not split again)
        return name
    try:
        parts = parse_single_name_into_parts(name, strict=False)
    except InvalidNameError:
        return name
    return parts.merge_last_name_first or name


def bibtex_key(paper: Paper) -> str:
    """The entry key: ``arXiv_2409.01234`` (``/`` of old-style ids and other characters
    BibTeX tools take for separators become ``_``), ``topicsite_local_<pk>`` off arXiv."""
    if not paper.arxiv_id:
        return f"topicsite_local_{paper.pk}"
    return "arXiv_" + re.sub(r"[^A-Za-z0-9.-]", "_", paper.arxiv_id)


def _bibtex_block(citation: Citation) -> Entry:
    paper = citation.paper
    fields = [("title", "{{" + bibtex_text(paper.title) + "}}")]
    names = [bibtex_name(author) for author in citation.authors]
    if names and citation.more_authors:
        names.append("others")
    if names:
        fields.append(("author", "{" + " and ".join(names) + "}"))
    fields.append(("year", "{" + str(paper.submitted.year) + "}"))
    # ``month`` is a BibTeX macro (jan, feb…), written without braces.
    fields.append(("month", _MONTHS[paper.submitted.month - 1]))
    if paper.arxiv_id:
        fields += [
            ("eprint", "{" + paper.arxiv_id + "}"),
            ("archivePrefix", "{arXiv}"),
            ("primaryClass", "{" + paper.primary_category.code + "}"),
        ]
    fields.append(("url", "{" + bibtex_text(citation.url) + "}"))
    if citation.doi:
        fields.append(("doi", "{" + bibtex_text(citation.doi) + "}"))
    notes = []
    if paper.withdrawn:
        notes.append("Withdrawn")
    if paper.journal_ref:
        notes.append(bibtex_text(paper.journal_ref))
    if notes:
        fields.append(("note", "{" + ". ".join(notes) + "}"))
    return Entry("misc", bibtex_key(paper), [Field(name, value) for name, value in fields])


# Bidi embedding, override and isolate controls and the direction marks: invisible, they
# carry nothing a reference needs, and in a .bib or .ris file (or the page's Cite block) they
# would reorder how the text around them reads. Right-to-left letters stay. So too the C0 and
# C1 control characters but the line break and tab (an ESC would drive the terminal that
# shows a downloaded file). A line break inside a RIS value is folded first (``_ris_line``);
# inside a BibTeX value it is only whitespace.
_CONTROLS = dict.fromkeys(
    [
        *map(ord, "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"),
        *(code for code in range(0x20) if chr(code) not in "\n\t"),
        *range(0x7F, 0xA0),
    ]
)


def _without_controls(text: str) -> str:
    return text.translate(_CONTROLS)


def _bibtex_write(blocks: list[Entry]) -> str:
    style = BibtexFormat()
    style.indent = "  "
    # No middleware: the values above carry their own braces (and ``month`` none).
    text = write_string(Library(blocks), unparse_stack=[], bibtex_format=style)
    return _without_controls(text.rstrip("\n") + "\n") if text else ""


def bibtex_entry(citation: Citation) -> str:
    """One ``@misc{…}`` entry (fields: title, author, year, month, eprint, archivePrefix,
    primaryClass, url, doi where known, note for withdrawn papers and journal references),
    ending with a newline; bidi and other control characters left out (right-to-left
    letters kept)."""
    return _bibtex_write([_bibtex_block(citation)])


def bibtex_document(citations: Iterable[Citation]) -> str:
    """The entries of ``citations``, separated by blank lines (a whole ``.bib`` file; ``""``
    for none)."""
    return _bibtex_write([_bibtex_block(citation) for citation in citations])


# --- RIS -----------------------------------------------------------------------------------


def _ris_line(text: str) -> str:
    # RIS is line-based with no escaping: a line break inside a value would start a new tag.
    return " ".join(text.split())


def _ris_reference(citation: Citation) -> dict:
    paper = citation.paper
    reference = {
        # RIS has no preprint type; UNPB ("unpublished work") is what reference managers map
        # arXiv preprints to and from.
        "type_of_reference": "UNPB",
        "title": _ris_line(paper.title),
        "authors": [_ris_line(ris_name(author)) for author in citation.authors],
        "year": str(paper.submitted.year),
        "date": paper.submitted.strftime("%Y/%m/%d"),
        "urls": [citation.url],
        "name_of_database": "arXiv" if paper.arxiv_id else "topicsite",
    }
    if paper.abstract:
        reference["abstract"] = _ris_line(paper.abstract)
    if paper.arxiv_id:
        reference["accession_number"] = paper.arxiv_id
        reference["publisher"] = "arXiv"
        reference["keywords"] = [paper.primary_category.code]
    pdf = paper_pdf_url(paper)
    if pdf:
        reference["file_attachments1"] = pdf
    if citation.doi:
        reference["doi"] = citation.doi
    notes = []
    if paper.arxiv_id:
        notes.append(f"arXiv:{paper.arxiv_id} [{paper.primary_category.code}]")
    if paper.withdrawn:
        notes.append("Withdrawn")
    if paper.journal_ref:
        notes.append(_ris_line(paper.journal_ref))
    if notes:
        reference["notes"] = notes
    return reference


def ris_name(author: Author) -> str:
    """``author`` as "Last, First" without TeX escaping (for RIS, whose ``AU`` lines take
    that form)."""
    if author.keyname:
        return ", ".join(p for p in (author.keyname, author.suffix, author.forenames) if p)
    if "," in author.name:
        return author.name
    try:
        parts = parse_single_name_into_parts(author.name, strict=False)
    except InvalidNameError:
        return author.name
    return parts.merge_last_name_first or author.name


class _RisWriter(rispy.RisWriter):
    """rispy's writer without its "1." counter line before each reference (not RIS)."""

    def set_header(self, count: int) -> str:
        return ""


def ris_entry(citation: Citation) -> str:
    """One RIS reference (``TY  - UNPB`` … ``ER  -``): title, every author as ``AU`` "Last,
    First", year and date, abstract, arXiv URL, PDF link (``L1``), DOI, the arXiv identifier
    (``AN``), notes (arXiv id, withdrawn, journal reference); each value on one line."""
    text = rispy.dumps([_ris_reference(citation)], implementation=_RisWriter).lstrip("\n")
    return _without_controls(text)


def ris_document(citations: Iterable[Citation]) -> str:
    """The references of ``citations`` (a whole ``.ris`` file)."""
    return "\n".join(ris_entry(citation) for citation in citations)
