"""Streamed exports of papers: BibTeX, CSV and JSON lines.

Each ``*_lines`` function takes papers from ``api.selectors.papers_for_api`` (any iterable;
the views pass ``queryset.iterator(chunk_size=EXPORT_CHUNK)``, which keeps the prefetches per
chunk, so memory stays flat and queries grow with the number of chunks, not papers) and yields
``str`` pieces for a ``StreamingHttpResponse``.

- BibTeX: one ``@misc`` entry per paper, arXiv's own fields (``eprint``, ``archivePrefix``,
  ``primaryClass``); TeX special characters in values escaped (``& % $ # _ { } ~ ^ \\``), the
  title's case kept by double braces;
- CSV (RFC 4180, UTF-8, header row): cells starting with ``= + - @``, tab or carriage return
  are prefixed with ``'`` so spreadsheets do not run them as formulas (CSV injection);
- JSON lines: one paper per line as the API shows it (``PaperSerializer``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator

from django.conf import settings

from papers.models import Paper

from .selectors import api_paper_id

__all__ = [
    "BIBTEX_CONTENT_TYPE",
    "CSV_COLUMNS",
    "CSV_CONTENT_TYPE",
    "EXPORT_CHUNK",
    "JSONL_CONTENT_TYPE",
    "bibtex_entry",
    "bibtex_escape",
    "bibtex_lines",
    "csv_cell",
    "csv_lines",
    "jsonl_lines",
]

EXPORT_CHUNK = 500
BIBTEX_CONTENT_TYPE = "application/x-bibtex; charset=utf-8"
CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
JSONL_CONTENT_TYPE = "application/jsonl; charset=utf-8"

_TEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_TEX_SPECIAL_RE = re.compile("|".join(re.escape(c) for c in _TEX_SPECIALS))
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def bibtex_escape(text: str) -> str:
    """``text`` with TeX's special characters escaped and whitespace runs made one space."""
    text = " ".join(text.split())
    return _TEX_SPECIAL_RE.sub(lambda m: _TEX_SPECIALS[m.group()], text)


def _bibtex_key(paper: Paper) -> str:
    # Keys may not hold spaces, commas or braces; "/" of old-style ids and ":" are replaced too
    # because some BibTeX tools take them for separators.
    if not paper.arxiv_id:
        return f"topicsite_local_{paper.pk}"
    return "arXiv_" + re.sub(r"[^A-Za-z0-9.-]", "_", paper.arxiv_id)


def bibtex_entry(paper: Paper) -> str:
    """One ``@misc{…}`` entry for ``paper``, ending with a blank line."""
    fields = [("title", "{" + bibtex_escape(paper.title) + "}")]
    authors = [bibtex_escape(a.author.name) for a in paper.api_authorships]
    if authors and paper.author_count > len(authors):
        # Only the first authors are stored (the source listed the rest as a count).
        authors.append("others")
    if authors:
        fields.append(("author", " and ".join(authors)))
    fields.append(("year", str(paper.submitted.year)))
    fields.append(("month", _MONTHS[paper.submitted.month - 1]))
    if paper.arxiv_id:
        fields += [
            ("eprint", paper.arxiv_id),
            ("archivePrefix", "arXiv"),
            ("primaryClass", paper.primary_category.code),
            ("url", paper.arxiv_url),
        ]
    else:
        fields.append(("url", settings.SITE_URL + paper.get_absolute_url()))
    if paper.dois or paper.doi:
        # BibTeX's doi field holds one DOI.
        fields.append(("doi", bibtex_escape(paper.dois[0] if paper.dois else paper.doi)))
    if paper.journal_ref:
        fields.append(("note", bibtex_escape(paper.journal_ref)))
    lines = [f"@misc{{{_bibtex_key(paper)},"]
    for name, value in fields:
        # ``month`` is a BibTeX macro (jan, feb…), written without braces.
        lines.append(f"  {name} = {value}," if name == "month" else f"  {name} = {{{value}}},")
    lines.append("}")
    return "\n".join(lines) + "\n\n"


def bibtex_lines(papers: Iterable[Paper]) -> Iterator[str]:
    """The BibTeX entries of ``papers``, one string each."""
    for paper in papers:
        yield bibtex_entry(paper)


CSV_COLUMNS = (
    "id",
    "version",
    "title",
    "authors",
    "affiliations",
    "primary_category",
    "categories",
    "submitted",
    "updated",
    "withdrawn",
    "doi",
    "journal_ref",
    "topics",
    "abs_url",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell: ``None`` is empty; text starting like a spreadsheet formula
    gets a leading ``'``."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv_row(paper: Paper) -> list[str]:
    values = (
        api_paper_id(paper),
        paper.latest_version,
        paper.title,
        "; ".join(a.author.name for a in paper.api_authorships),
        "; ".join(pa.affiliation.name for pa in paper.api_affiliations),
        paper.primary_category.code,
        " ".join(sorted(c.code for c in paper.cross_lists.all())),
        paper.submitted.isoformat(),
        paper.updated.isoformat() if paper.updated else "",
        "true" if paper.withdrawn else "false",
        paper.doi,
        paper.journal_ref,
        " ".join(a.topic.slug for a in paper.topic_assignments),
        paper.arxiv_url,
    )
    return [csv_cell(v) for v in values]


def csv_lines(papers: Iterable[Paper]) -> Iterator[str]:
    """The header row, then one row per paper (:data:`CSV_COLUMNS`), each a CSV line."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    for paper in papers:
        writer.writerow(_csv_row(paper))
        yield flush()


def jsonl_lines(papers: Iterable[Paper], *, serializer_class, context: dict) -> Iterator[str]:
    """One JSON object per line for each paper, as ``serializer_class`` renders it."""
    for paper in papers:
        data = serializer_class(paper, context=context).data
        yield json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
