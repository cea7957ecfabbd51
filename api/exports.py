"""Streamed exports of papers: BibTeX, CSV and JSON lines.

Each ``*_lines`` function takes papers from ``api.selectors.papers_for_api`` (any iterable;
the views pass ``queryset.iterator(chunk_size=EXPORT_CHUNK)``, which keeps the prefetches per
chunk, so memory stays flat and queries grow with the number of chunks, not papers) and yields
``str`` pieces for a ``StreamingHttpResponse``.

- BibTeX: one ``@misc`` entry per paper, the entry a paper page's "Cite" gives
  (:mod:`papers.citations`: arXiv's own fields, the TeX of titles kept, authors "Last,
  First"), naming the authors the API lists (``and others`` after them);
- CSV (RFC 4180, UTF-8, header row): cells starting with ``= + - @``, tab or carriage return
  are prefixed with ``'`` so spreadsheets do not run them as formulas (CSV injection);
- JSON lines: one paper per line as the API shows it (``PaperSerializer``);
- the site-wide JSON lines (:func:`bulk_jsonl_lines`): every paper matching the filters in the
  order they were stored, fetched in keyset batches (each a short query of its own, so a
  download of a million papers holds no transaction open), resumable after any paper.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator

from papers import citations
from papers.models import Paper

from .selectors import api_paper_id, rows_of

__all__ = [
    "BIBTEX_CONTENT_TYPE",
    "CSV_COLUMNS",
    "CSV_CONTENT_TYPE",
    "BULK_BATCH",
    "EXPORT_CHUNK",
    "JSONL_CONTENT_TYPE",
    "bibtex_entry",
    "bibtex_lines",
    "bulk_jsonl_lines",
    "csv_cell",
    "csv_lines",
    "jsonl_lines",
]

EXPORT_CHUNK = 500
# Papers per query of the site-wide export (api.selectors.paper_rows: one query per batch).
BULK_BATCH = 1000
BIBTEX_CONTENT_TYPE = citations.BIBTEX_CONTENT_TYPE
CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
JSONL_CONTENT_TYPE = "application/jsonl; charset=utf-8"


def bibtex_entry(paper: Paper) -> str:
    """One ``@misc{…}`` entry for ``paper`` (from :func:`api.selectors.papers_for_api`),
    ending with a blank line: :func:`papers.citations.bibtex_entry` of its listed
    authors."""
    authors = [authorship.author for authorship in paper.api_authorships]
    return citations.bibtex_entry(citations.Citation(paper=paper, authors=authors)) + "\n"


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


def bulk_jsonl_lines(
    rows, *, after: int | None, serializer_class, context: dict, batch: int = BULK_BATCH
) -> Iterator[str]:
    """One JSON object per line (``serializer_class`` of each row) for every paper of ``rows``
    (a filtered :func:`api.selectors.paper_rows` queryset) whose stored id is above ``after``
    (``None``: from the first), in stored-id order, ``batch`` papers per query.

    Papers stored while the download runs come at its end; a paper deleted meanwhile is left
    out. Queries run as the lines are consumed, so an interrupted download stops querying.
    """
    ordered = rows.order_by("id")
    last = after
    while True:
        page = ordered if last is None else ordered.filter(id__gt=last)
        chunk = rows_of(page[:batch])
        for data in serializer_class(chunk, many=True, context=context).data:
            yield json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
        if len(chunk) < batch:
            return
        last = chunk[-1]["id"]
