"""Merging two reports of one paper: the state stored and a new record's, into the state to store.

A :class:`PaperState` is everything stored about one paper, in a form both a validated record
(``papers.ingest.checks.record_prepare``) and the database (``papers.ingest.write``) give.
How two reports are merged (so that the order sources arrive in does not matter and a second
import of the same data changes nothing):

- the report with the higher ``(latest_version, updated)`` leads: its title, abstract, dates,
  categories and authors are kept; an older or equal report never overwrites them;
- details a poorer source lacks never wipe what a richer one stored: versions are merged by
  number (known dates, sizes and source types kept), blank fields (DOI, journal reference,
  comments ...) are filled from the other report of the same or an older version, and
  affiliations are kept when the new report lists the same authors without any.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

__all__ = [
    "ROW_FIELDS",
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
    """One author of a paper: display name and affiliations, in the order the source gave."""

    name: str
    affiliations: tuple[str, ...]


@dataclass
class PaperState:
    """Everything stored about one paper, in a form both a record and the database give."""

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
    latest_version: int
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
    newer = (new.latest_version, new.updated or dt.date.min) > (
        old.latest_version,
        old.updated or dt.date.min,
    )
    same_version = new.latest_version == old.latest_version
    lead, other = (new, old) if newer else (old, new)
    merged = dataclasses.replace(lead)
    if newer or same_version:
        for name in _FILLABLE:
            if not getattr(merged, name) and getattr(other, name):
                setattr(merged, name, getattr(other, name))
    merged.submitted = min(old.submitted, new.submitted)
    merged.updated = lead.updated or other.updated
    merged.datestamp = max((d for d in (old.datestamp, new.datestamp) if d), default=None)
    if new.latest_version > old.latest_version:
        merged.withdrawn = new.withdrawn
    elif same_version:
        # Some formats cannot see a withdrawal (oai_dc has no version stubs): either report
        # of the same version noticing it is enough.
        merged.withdrawn = old.withdrawn or new.withdrawn
    else:
        merged.withdrawn = old.withdrawn
    merged.versions = _merge_versions(lead.versions, other.versions)
    merged.latest_version = max(old.latest_version, new.latest_version, *merged.versions, 1)
    merged.authors = _merge_authors(old.authors, new.authors, newer=newer)
    return merged


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
