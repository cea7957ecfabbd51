"""The one plain record type every arXiv source is parsed into.

Parsers (``papers.parsers``) turn OAI-PMH ``arXivRaw`` / ``arXiv`` / ``oai_dc`` pages, Atom API
feeds and Kaggle snapshot lines into :class:`ArxivRecord` objects; the ingestion service
(``papers.ingest``) stores them. Nothing here knows about Django models, so parsers can be
tested and reused alone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


class ParseError(ValueError):
    """A source document or record could not be parsed.

    ``source`` names the file or URL, ``record`` the record (arXiv identifier, line number or
    byte offset) where that is known. ``str(error)`` always names both when they are set.
    """

    def __init__(self, message: str, *, source: str = "", record: str = ""):
        self.message = message
        self.source = source
        self.record = record
        where = ", ".join(part for part in (source, record) if part)
        super().__init__(f"{where}: {message}" if where else message)

    def __reduce__(self):
        # Keyword-only arguments: rebuild explicitly so Celery can pickle and re-raise it.
        return (_rebuild_parse_error, (self.message, self.source, self.record))


def _rebuild_parse_error(message: str, source: str, record: str) -> ParseError:
    return ParseError(message, source=source, record=record)


@dataclass(frozen=True)
class Version:
    """One version of a paper: ``number`` is 1 for ``v1``; ``submitted`` is timezone-aware UTC.

    ``size_kb`` is the size arXiv lists for the version (``None`` when the source omits it);
    ``source_type`` is arXivRaw's one-letter source type (``"I"`` marks a withdrawal stub).
    """

    number: int
    submitted: dt.datetime | None
    size_kb: int | None = None
    source_type: str = ""


@dataclass(frozen=True)
class AuthorName:
    """An author as the source gives it.

    ``name`` is the display form ("Naoum C. Bacalis"); ``keyname``/``forenames``/``suffix`` are
    filled where the source splits names (arXiv format, Kaggle ``authors_parsed``);
    ``affiliations`` are the affiliations given for this author on this paper, in order;
    ``raw`` is the name exactly as the source wrote it, blanks collapsed, before TeX accents
    were read or mojibake repaired (``"Dirk WÃ¼bben"`` beside ``name`` ``"Dirk Wübben"``;
    blank when not known).
    """

    name: str
    keyname: str = ""
    forenames: str = ""
    suffix: str = ""
    affiliations: tuple[str, ...] = ()
    # Provenance, not identity: two names that read the same are the same author.
    raw: str = field(default="", compare=False)


@dataclass
class ArxivRecord:
    """A paper's metadata as one source reported it.

    - ``arxiv_id``: canonical identifier without version (``2409.01234``, ``hep-th/9901001``).
    - ``versions``: ordered by number; ``latest_version`` is the version this report describes
      (the highest number listed, or the one its id carries), ``None`` when the source does
      not say (OAI ``arXiv`` and ``oai_dc`` records list no versions: unknown is not v1).
    - ``submitted``: date of v1; ``updated``: date of the latest version (both ``datetime.date``).
    - ``categories``: codes as the source wrote them, primary first (mapping aliases and legacy
      archives to canonical codes is the ingestion service's job, not the parser's).
    - ``title``/``abstract``: source text with hard line wraps removed and outer whitespace
      stripped; ``title_raw``/``abstract_raw`` keep the text exactly as received. A source
      entry without a title gives ``title`` ``""`` (the ingestion service stores it under a
      placeholder and flags it; parsers do not drop it).
    - ``doi``: the DOI field as received; it may hold several DOIs (``"10.1103/A, 10.1103/B"``),
      which the ingestion service splits and validates.
    - ``withdrawn``: the latest version is a withdrawal stub (from the version record, the
      abstract or the comment).
    - ``datestamp``: OAI record-modification date, not a paper date (``None`` outside OAI).
    - ``source``: short label of the format (``"oai:arXivRaw"``, ``"atom"``, ``"snapshot"`` ...).
    """

    arxiv_id: str
    title: str
    abstract: str = ""
    title_raw: str = ""
    abstract_raw: str = ""
    authors: list[AuthorName] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)
    latest_version: int | None = None
    submitted: dt.date | None = None
    updated: dt.date | None = None
    comments: str = ""
    journal_ref: str = ""
    doi: str = ""
    report_no: str = ""
    license: str = ""
    submitter: str = ""
    withdrawn: bool = False
    datestamp: dt.date | None = None
    source: str = ""

    @property
    def primary_category(self) -> str:
        return self.categories[0] if self.categories else ""

    @property
    def cross_lists(self) -> list[str]:
        return self.categories[1:]
