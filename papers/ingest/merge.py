"""Merging two reports of one paper: the state stored and a new record's, into the state to store.

A :class:`PaperState` is everything stored about one paper, in a form both a validated record
(``papers.ingest.checks.record_prepare``) and the database (``papers.ingest.write``) give.
How two reports are merged (so that the order sources arrive in does not matter and a second
import of the same data changes nothing):

- the newer report leads: its title, abstract, dates, categories and authors are kept; an
  older or equal report never overwrites them. Newer means a higher ``(latest_version,
  updated)`` when both reports know their version, else a later ``updated`` (the latest
  version's date): OAI ``arXiv`` and ``oai_dc`` records carry no version, and taking their
  unknown version for v1 would let any later report of v2 replace v4's metadata;
- a version is never invented: the stored ``latest_version`` is the leading report's, or the
  listed version submitted on its ``updated`` date, else None (unknown);
- details a poorer source lacks never wipe what a richer one stored: versions are merged by
  number (known dates, sizes and source types kept), blank fields (DOI, journal reference,
  comments ...) are filled from the other report of the same or an older version, and
  affiliations are kept when the new report lists the same authors without any;
- a placeholder title (``title_missing``) never wins over a real one, whichever report leads.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

__all__ = [
    "ROW_FIELDS",
    "report_order",
    "TEXT_FIELDS",
    "AuthorState",
    "PaperState",
    "VersionState",
    "paper_state_merge",
]

# Plain fields copied from a record to the paper row, compared to decide whether it changed.
TEXT_FIELDS = (
    "title",
    "title_raw",
    "abstract",
    "abstract_raw",
    "comments",
    "journal_ref",
    "doi",
    "report_no",
    "license",
    "submitter",
)
ROW_FIELDS = (
    *TEXT_FIELDS,
    "dois",
    "text_repaired",
    "title_missing",
    "latest_version",
    "submitted",
    "updated",
    "withdrawn",
    "datestamp",
    "source",
)
# Fields a source may simply not carry (oai_dc has no submitter, Atom no report number):
# blank in one report does not mean blank on arXiv.
_FILLABLE = ("comments", "journal_ref", "doi", "report_no", "license", "submitter")


@dataclass(frozen=True)
class VersionState:
    """One version of a paper: when it was submitted (aware datetime), its size in kb and its
    source type as the source gave it, each None or blank where the source did not say."""

    submitted: dt.datetime | None
    size_kb: int | None
    source_type: str


@dataclass(frozen=True)
class AuthorState:
    """One author of a paper: display name and affiliations, in the order the source gave;
    ``name_raw`` is the name as the source wrote it when that differs (TeX, mojibake), else
    blank."""

    name: str
    affiliations: tuple[str, ...]
    name_raw: str = ""


@dataclass
class PaperState:
    """Everything stored about one paper, in a form both a record and the database give.

    ``doi`` is the DOI field as received, ``dois`` the valid DOIs in it; ``latest_version`` is
    None when unknown; ``text_repaired`` and ``title_missing`` are the quality flags of
    :class:`papers.models.Paper`."""

    arxiv_id: str
    title: str
    title_raw: str
    abstract: str
    abstract_raw: str
    comments: str
    journal_ref: str
    doi: str
    report_no: str
    license: str
    submitter: str
    dois: list[str]
    text_repaired: bool
    title_missing: bool
    latest_version: int | None
    submitted: dt.date
    updated: dt.date | None
    withdrawn: bool
    datestamp: dt.date | None
    source: str
    primary: str
    cross_lists: frozenset[str]
    versions: dict[int, VersionState]
    authors: tuple[AuthorState, ...]

    def row_values(self) -> tuple:
        return (*(getattr(self, name) for name in ROW_FIELDS), self.primary)

    def affiliations_in_order(self) -> list[str]:
        """Distinct affiliations in order of first mention."""
        return list(dict.fromkeys(name for author in self.authors for name in author.affiliations))


def paper_state_merge(old: PaperState | None, new: PaperState) -> PaperState:
    """The state to store when ``new`` is reported for a paper stored as ``old`` (None: not
    stored yet); the rules are the module docstring's. Neither argument is changed."""
    if old is None:
        return new
    order = report_order(old, new)
    # Of two reports of one version, the one that knows its version number leads.
    newer = order > 0 or (
        order == 0 and old.latest_version is None and new.latest_version is not None
    )
    lead, other = (new, old) if newer else (old, new)
    merged = dataclasses.replace(lead)
    if order >= 0:
        for name in _FILLABLE:
            if not getattr(merged, name) and getattr(other, name):
                setattr(merged, name, getattr(other, name))
                if name == "doi":
                    merged.dois = other.dois
    if merged.title_missing and not other.title_missing:
        merged.title, merged.title_raw, merged.title_missing = (other.title, other.title_raw, False)
        merged.text_repaired = merged.text_repaired or other.text_repaired
    merged.submitted = min(old.submitted, new.submitted)
    merged.updated = lead.updated or other.updated
    merged.datestamp = max((d for d in (old.datestamp, new.datestamp) if d), default=None)
    if order > 0:
        merged.withdrawn = new.withdrawn
    elif order == 0:
        # Some formats cannot see a withdrawal (oai_dc has no version stubs): either report
        # of the same version noticing it is enough.
        merged.withdrawn = old.withdrawn or new.withdrawn
    else:
        merged.withdrawn = old.withdrawn
    merged.versions = _merge_versions(lead.versions, other.versions)
    merged.latest_version = _latest_version(lead, merged.versions)
    merged.authors = _merge_authors(old.authors, new.authors, newer=newer)
    return merged


def report_order(old: PaperState, new: PaperState) -> int:
    """1 when ``new`` reports a later state of the paper than ``old``, -1 an earlier one, 0 the
    same: by ``(latest_version, updated)`` when both know their version, else by ``updated``
    alone (a missing date counts as the earliest)."""
    if old.latest_version is not None and new.latest_version is not None:
        old_key = (old.latest_version, old.updated or dt.date.min)
        new_key = (new.latest_version, new.updated or dt.date.min)
    else:
        old_key, new_key = old.updated or dt.date.min, new.updated or dt.date.min
    return (new_key > old_key) - (new_key < old_key)


def _latest_version(lead: PaperState, versions: dict[int, VersionState]) -> int | None:
    """The version the stored metadata describes: the leading report's, raised to the highest
    version listed; when the lead does not know it, the listed version submitted on the
    lead's ``updated`` date, if any, else None."""
    if lead.latest_version is not None:
        return max([lead.latest_version, *versions])
    if lead.updated is None:
        return None
    dated = [
        number
        for number, version in versions.items()
        if version.submitted is not None
        and version.submitted.astimezone(dt.UTC).date() == lead.updated
    ]
    return max(dated, default=None)


def _merge_versions(
    lead: dict[int, VersionState], other: dict[int, VersionState]
) -> dict[int, VersionState]:
    merged = {}
    for number in sorted(lead.keys() | other.keys()):
        first, second = lead.get(number), other.get(number)
        if first is None or second is None:
            merged[number] = first or second
            continue
        merged[number] = VersionState(
            submitted=first.submitted or second.submitted,
            size_kb=first.size_kb if first.size_kb is not None else second.size_kb,
            source_type=first.source_type or second.source_type,
        )
    return merged


def _merge_authors(
    old: tuple[AuthorState, ...], new: tuple[AuthorState, ...], *, newer: bool
) -> tuple[AuthorState, ...]:
    if not new:
        return old
    if not old:
        return new
    same_names = [a.name for a in old] == [a.name for a in new]
    old_has_affiliations = any(a.affiliations for a in old)
    new_has_affiliations = any(a.affiliations for a in new)
    if newer:
        # A newer report without affiliations for the same authors (oai_dc, Atom) keeps them.
        return old if same_names and not new_has_affiliations else new
    if same_names and new_has_affiliations and not old_has_affiliations:
        return new
    return old
