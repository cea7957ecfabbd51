"""What every source and transport shares: the errors, a fetched body, a chunk of records, the
:class:`Transport` and :class:`Source` protocols, and the parsing of list and number parameters."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from papers.records import ArxivRecord, ParseError

__all__ = [
    "Chunk",
    "Fetched",
    "Gap",
    "HarvestError",
    "KINDS",
    "Source",
    "SourceError",
    "Transport",
    "identifiers_from",
    "int_param",
]

KINDS = ("oai", "atom", "snapshot", "recorded")


class HarvestError(Exception):
    """A request failed for good: network error, timeout or dropped connection after the
    bounded retries, an HTTP status still 429/503 after them (or a ``Retry-After`` longer than
    the longest wait allowed), another unexpected HTTP status, or a body over the size cap.
    ``url`` is the full request URL (or the recorded file); ``str(error)`` starts with it.
    Worth retrying later (the task does); nothing was parsed from the failed request.
    """

    def __init__(self, message: str, *, url: str):
        self.url = url
        self.message = message
        super().__init__(f"{url}: {message}")

    def __reduce__(self):
        # Picklable (Celery carries it to retries and results) with its keyword and notes.
        return functools.partial(type(self), url=self.url), (self.message,), self.__dict__


class SourceError(Exception):
    """The source answered but refused the request: an OAI-PMH ``<error>`` the source cannot
    handle itself (``badArgument``, ``cannotDisseminateFormat``, ``badResumptionToken`` once
    the list cannot be restarted ...) or an arXiv API error entry. Asking again gives the same
    answer, so it is reported, not retried. ``source`` names the URL or recorded file.
    """

    def __init__(self, message: str, *, source: str):
        self.source = source
        self.message = message
        super().__init__(f"{source}: {message}")

    def __reduce__(self):
        return functools.partial(type(self), source=self.source), (self.message,), self.__dict__


class Gap(ParseError):
    """Results a source was asked for and did not deliver, as a harvest run records them.

    ``query`` is the request that came up short (an API ``search_query`` or ``id_list``, an
    OAI identifier), ``offset`` the 0-based position in its result set where the missing part
    starts (``None`` when the gap is not a range: an id that was not returned); ``source`` and
    ``record`` as for :class:`ParseError`.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        record: str = "",
        query: str = "",
        offset: int | None = None,
    ):
        super().__init__(message, source=source, record=record)
        self.query = query
        self.offset = offset

    def __reduce__(self):
        return (
            functools.partial(
                type(self),
                source=self.source,
                record=self.record,
                query=self.query,
                offset=self.offset,
            ),
            (self.message,),
        )


@dataclass(frozen=True)
class Fetched:
    """A response body: ``body`` bytes, HTTP ``status``, ``source`` (the URL it came from, or
    the recorded file's path) to name in errors."""

    body: bytes
    status: int
    source: str


@dataclass
class Chunk:
    """One unit of harvested input, stored as one or more ingestion batches.

    - ``source``: URL or file the records came from;
    - ``records``: parsed records, in source order;
    - ``errors``: records the parser rejected (each names the source and the record or line);
    - ``gaps``: what was asked for and not delivered: ids the API did not return, ids OAI says
      do not exist, pages the API kept empty, an API result set that ended before the total its
      first page promised (each names the source and the id or page; a :class:`Gap` also
      names the query and offset);
    - ``deleted``: canonical ids OAI reported as deleted;
    - ``resumption_token``: OAI token for the page after this one (``None`` on the last page);
    - ``position``: JSON-ready dict that, given back to the same source's
      :meth:`Source.chunks`, continues right after this chunk; ``None`` when the source has
      nothing after it. A harvest stores it with the chunk's records as its checkpoint.
    """

    source: str
    records: list[ArxivRecord] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    gaps: list[ParseError] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    resumption_token: str | None = None
    position: dict[str, Any] | None = None


class Transport(Protocol):
    """Answers ``GET url?params``; raises :class:`HarvestError` for a status not in
    ``ok_statuses`` or a request that failed for good."""

    def get(
        self, url: str, params: Mapping[str, str], *, ok_statuses: Iterable[int] = (200,)
    ) -> Fetched: ...


class Source(Protocol):
    """Yields :class:`Chunk` objects, from the start or from a chunk's ``position``; raises
    :class:`ParseError` for a page that cannot be parsed, :class:`SourceError` for a refused
    request, :class:`HarvestError` for a failed one."""

    kind: str

    def chunks(self, position: Mapping[str, Any] | None = None) -> Iterator[Chunk]: ...


def identifiers_from(ids: Iterable[str] | str) -> list[str]:
    """Identifiers from a list or a comma-separated string, blanks dropped."""
    if isinstance(ids, str):
        ids = ids.split(",")
    return [str(part).strip() for part in ids if str(part).strip()]


def int_param(params: Mapping[str, Any], name: str, default: int) -> int:
    """``params[name]`` as an int, ``default`` when missing or blank; raises ``ValueError``
    naming the parameter for anything that is not a whole number."""
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"'{name}' must be a whole number, not {value!r}") from None
