"""Where arXiv records come from: transports that answer requests, and sources that page over them.

A **transport** answers ``GET url?params`` with a :class:`Fetched` body. There are two:

- :class:`HttpTransport` talks to arXiv: a descriptive User-Agent, connect/read timeouts and a
  deadline for the whole response, bounded retries with exponential backoff on connection
  errors, timeouts and connections dropped mid-body, ``Retry-After`` honoured on 503 and 429, a
  response size cap, every attempt spaced by the shared :class:`RequestLimiter`, then a loud
  :class:`HarvestError`;
- :class:`RecordedTransport` answers from files on disk listed in a ``manifest.json``, so the
  demo and the tests run the very same sources with no network.

A **source** turns requests into :class:`Chunk` objects (parsed records plus record-level
errors, one chunk per response page or per run of snapshot lines). Each chunk carries the
``position`` to resume from after it, so a harvest that stores a chunk together with its
position (``papers.services``) resumes exactly where it stopped:

- :class:`OaiPmhSource`: OAI-PMH 2.0 ``ListRecords`` of one set, following the
  ``resumptionToken`` page after page, or ``GetRecord`` for a list of identifiers
  (http://www.openarchives.org/OAI/openarchivesprotocol.html);
- :class:`AtomApiSource`: the arXiv API ``/api/query`` by ``id_list`` or ``search_query``,
  paged with ``start``/``max_results`` (https://info.arxiv.org/help/api/user-manual.html);
- :class:`SnapshotSource`: a Kaggle ``arxiv-metadata-oai-snapshot.json`` file (plain or gzip),
  streamed line by line.

:func:`sources_for` builds the sources for a harvest from plain JSON parameters; the ``recorded``
kind replays everything a manifest lists (:func:`recorded_sources`).

Manifest format (``<directory>/manifest.json``)::

    {"entries": [
        {"kind": "oai", "file": "oai/page.xml",
         "params": {"verb": "ListRecords", "resumptionToken": "496549|46001"}},
        {"kind": "atom", "file": "atom/one.xml", "status": 200,
         "params": {"id_list": "astro-ph/0601001", "start": "0", "max_results": "100", ...}},
        {"kind": "snapshot", "file": "snapshot/head.jsonl"}
    ]}

``params`` are the query parameters of the recorded request (matched after dropping empty
values and turning every value into a string; no two entries may record the same request);
``status`` is the recorded HTTP status (default 200); ``file`` is relative to the directory
and may not leave it; ``description`` (optional) is free text. Anything else is refused.
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import json
import logging
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode

import redis
import requests
from django.conf import settings
from django.core.cache import cache
from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

from .identifiers import InvalidArxivId, parse_arxiv_id
from .parsers.atom import parse_atom_feed
from .parsers.oai import parse_oai_page
from .parsers.snapshot import iter_snapshot
from .records import ArxivRecord, ParseError

__all__ = [
    "AtomApiSource",
    "Chunk",
    "DEFAULT_RECORDED_DIR",
    "Fetched",
    "HarvestError",
    "HttpTransport",
    "ManifestEntry",
    "ManifestError",
    "NotRecorded",
    "OaiPmhSource",
    "RecordedTransport",
    "RequestLimiter",
    "SnapshotSource",
    "Source",
    "SourceError",
    "Transport",
    "load_manifest",
    "oai_sets",
    "recorded_sources",
    "sources_for",
]

logger = logging.getLogger(__name__)

DEFAULT_RECORDED_DIR = Path(__file__).resolve().parent / "recorded"
MANIFEST_NAME = "manifest.json"
SNAPSHOT_CHUNK_SIZE = 1000
KINDS = ("oai", "atom", "snapshot", "recorded")
# A list restarted this many times after badResumptionToken is not going to complete.
OAI_MAX_RESTARTS = 3
# Statuses arXiv uses to ask a client to come back later (with Retry-After).
RETRY_STATUSES = (429, 503)


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


class NotRecorded(LookupError):
    """:class:`RecordedTransport` was asked for a request its manifest does not list."""


class ManifestError(ValueError):
    """A recorded directory's ``manifest.json`` is missing, malformed or names a bad file."""


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
      do not exist, pages the API kept empty (each names the source and the id or page);
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


# --- politeness -----------------------------------------------------------------------------


@functools.cache
def _redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


class RequestLimiter:
    """At most one request every ``interval_ms`` milliseconds among every process that shares
    the store: all workers on all hosts when ``REDIS_URL`` is set, this process otherwise.

    :meth:`wait` claims the next slot: ``SET key NX PX interval`` in Redis (the key living
    exactly one interval after a request starts), retried after the key's remaining life until
    the claim succeeds. Without Redis (the embedded default) the same claim is a
    ``cache.add`` on the local cache. ``interval_ms`` defaults to
    ``settings.ARXIV_REQUEST_INTERVAL_MS`` (arXiv asks for 3000); 0 turns the limiter off.
    ``sleep`` is how waiting is done (seconds; tests pass their own).
    """

    KEY = "topicsite:papers:arxiv-request-slot"

    def __init__(
        self,
        *,
        interval_ms: int | None = None,
        key: str = KEY,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if interval_ms is None:
            interval_ms = settings.ARXIV_REQUEST_INTERVAL_MS
        if interval_ms < 0:
            raise ValueError(f"interval_ms must be >= 0, not {interval_ms}")
        self.interval_ms = int(interval_ms)
        self.key = key
        self.sleep = sleep

    def try_acquire(self) -> bool:
        """Claim the slot if it is free; True when claimed (then nobody else gets one for
        ``interval_ms``)."""
        if self.interval_ms <= 0:
            return True
        token = uuid.uuid4().hex
        if settings.REDIS_URL:
            client = _redis_client(settings.REDIS_URL)
            return bool(client.set(self.key, token, nx=True, px=self.interval_ms))
        return cache.add(self.key, token, timeout=self.interval_ms / 1000)

    def wait(self) -> float:
        """Block until this process holds the slot; returns the seconds spent waiting."""
        waited = 0.0
        while not self.try_acquire():
            pause = self._remaining_seconds()
            self.sleep(pause)
            waited += pause
        return waited

    def _remaining_seconds(self) -> float:
        if settings.REDIS_URL:
            remaining_ms = _redis_client(settings.REDIS_URL).pttl(self.key)
            if remaining_ms > 0:
                return remaining_ms / 1000
        # Key gone meanwhile (or no TTL to read on the local cache): poll again soon.
        return max(self.interval_ms / 10_000, 0.001)


# --- HTTP -----------------------------------------------------------------------------------


class _TooSlow(requests.Timeout):
    """The whole response took longer than the transport's deadline."""


# What a later attempt may cure: the network, not the request.
_RETRYABLE = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)


class HttpTransport:
    """GET over HTTP with requests, retried by our own loop.

    The loop is ours, not urllib3's ``Retry``, because a connection dropped mid-body and a body
    that trickles in past the deadline happen after urllib3 is done, and because every attempt,
    retries included, must wait its turn at the shared :class:`RequestLimiter`.

    - ``user_agent``: sent on every request (default ``settings.ARXIV_USER_AGENT``);
    - ``timeout``: seconds to connect, between two reads, and for the whole response
      (default ``settings.ARXIV_HTTP_TIMEOUT``);
    - ``retries``: retries after the first attempt (default ``settings.ARXIV_HTTP_RETRIES``),
      for connection errors, timeouts, connections dropped mid-body and HTTP 429/503;
    - ``backoff_factor``: waits ``backoff_factor * 2**n`` seconds before retry ``n + 1``
      (default ``settings.ARXIV_HTTP_BACKOFF_SECONDS``), or what ``Retry-After`` says on a
      429/503; a ``Retry-After`` longer than ``retry_after_max`` seconds (default
      ``settings.ARXIV_RETRY_AFTER_MAX``) ends the request at once: an outage is better
      left to the task's own, later retry than to a blocked worker;
    - ``max_bytes``: a body longer than this is refused (default ``settings.ARXIV_HTTP_MAX_BYTES``);
    - ``limiter``: the :class:`RequestLimiter` every attempt waits for (default: the shared one);
    - ``sleep``: how backoff waits are done (seconds).

    :meth:`get` raises :class:`HarvestError` naming the URL once retries are spent, for an
    HTTP status not in ``ok_statuses`` (not retried), and for an oversized body (not retried).
    """

    def __init__(
        self,
        *,
        user_agent: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff_factor: float | None = None,
        retry_after_max: float | None = None,
        max_bytes: int | None = None,
        limiter: RequestLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.user_agent = user_agent or settings.ARXIV_USER_AGENT
        self.timeout = timeout if timeout is not None else settings.ARXIV_HTTP_TIMEOUT
        self.retries = retries if retries is not None else settings.ARXIV_HTTP_RETRIES
        self.backoff_factor = (
            backoff_factor if backoff_factor is not None else settings.ARXIV_HTTP_BACKOFF_SECONDS
        )
        self.retry_after_max = (
            retry_after_max if retry_after_max is not None else settings.ARXIV_RETRY_AFTER_MAX
        )
        self.max_bytes = max_bytes if max_bytes is not None else settings.ARXIV_HTTP_MAX_BYTES
        self.limiter = limiter if limiter is not None else RequestLimiter()
        self.sleep = sleep
        if self.retries < 0 or self.timeout <= 0 or self.max_bytes < 1:
            raise ValueError("retries must be >= 0, timeout > 0 and max_bytes >= 1")
        self.session = requests.Session()
        self.session.headers["User-Agent"] = self.user_agent

    def get(
        self, url: str, params: Mapping[str, str], *, ok_statuses: Iterable[int] = (200,)
    ) -> Fetched:
        """GET ``url`` with query ``params``; returns the body (at most ``max_bytes``).

        Raises :class:`HarvestError` naming the full URL when retries are spent, for a status
        not in ``ok_statuses`` and for an oversized body.
        """
        ok_statuses = tuple(ok_statuses)
        full_url = f"{url}?{urlencode(params)}" if params else url
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            self.limiter.wait()
            logger.info("GET %s (attempt %d of %d)", full_url, attempt, attempts)
            try:
                status, retry_after, body = self._fetch(url, params, full_url)
            except _RETRYABLE as error:
                problem, delay, cause = f"{type(error).__name__}: {error}", None, error
            else:
                if status in ok_statuses:
                    return Fetched(body=body, status=status, source=full_url)
                if status not in RETRY_STATUSES:
                    raise HarvestError(f"unexpected HTTP status {status}", url=full_url)
                problem, delay, cause = f"HTTP {status}", retry_after, None
                if delay is not None and delay > self.retry_after_max:
                    raise HarvestError(
                        f"HTTP {status} with Retry-After {delay:g} s, more than the "
                        f"{self.retry_after_max:g} s a harvest waits; try again later",
                        url=full_url,
                    )
            if attempt == attempts:
                raise HarvestError(
                    f"gave up after {attempts} attempts; last: {problem}", url=full_url
                ) from cause
            if delay is None:
                delay, why = self.backoff_factor * 2 ** (attempt - 1), "backoff"
            else:
                why = "Retry-After"
            logger.warning(
                "%s: %s; retrying in %g s (%s), attempt %d of %d",
                full_url,
                problem,
                delay,
                why,
                attempt + 1,
                attempts,
            )
            self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _fetch(
        self, url: str, params: Mapping[str, str], full_url: str
    ) -> tuple[int, float | None, bytes]:
        """One attempt: (status, Retry-After seconds or None, body)."""
        started = time.monotonic()
        with self.session.get(
            url, params=dict(params), timeout=(self.timeout, self.timeout), stream=True
        ) as response:
            status = response.status_code
            retry_after = None
            if status in RETRY_STATUSES and response.headers.get("Retry-After"):
                retry_after = _retry_after_seconds(response.headers["Retry-After"])
            body = self._read_capped(response, full_url, started)
        return status, retry_after, body

    def _read_capped(self, response: requests.Response, full_url: str, started: float) -> bytes:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise HarvestError(
                f"response of {declared} bytes exceeds the {self.max_bytes}-byte cap", url=full_url
            )
        parts: list[bytes] = []
        size = 0
        for part in response.iter_content(chunk_size=64 * 1024):
            size += len(part)
            if size > self.max_bytes:
                raise HarvestError(f"response exceeds the {self.max_bytes}-byte cap", url=full_url)
            if time.monotonic() - started > self.timeout:
                raise _TooSlow(f"response took longer than {self.timeout:g} s")
            parts.append(part)
        return b"".join(parts)


def _retry_after_seconds(value: str) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), None when
    unreadable (then the transport's own backoff applies)."""
    try:
        return Retry().parse_retry_after(value)
    except InvalidHeader:
        return None


@dataclass(frozen=True)
class ManifestEntry:
    """One recorded response (or snapshot file): ``kind`` (oai, atom, snapshot), absolute
    ``path``, request ``params`` (empty for snapshots) and recorded HTTP ``status``."""

    kind: str
    path: Path
    params: dict[str, str]
    status: int = 200


def load_manifest(directory: str | Path) -> list[ManifestEntry]:
    """Read ``<directory>/manifest.json`` (format in the module docstring), in listed order.

    Raises :class:`ManifestError` naming the manifest, and the entry by its 1-based index, for
    a missing or unreadable manifest, one that is not ``{"entries": [...]}``, an entry that is
    not an object or has keys other than ``kind``, ``file``, ``params``, ``status`` and
    ``description``, an unknown kind, a ``file`` that is not a relative path to a file inside
    the directory, ``params`` that are not an object of plain values (or are missing for an
    OAI or API entry), a ``status`` that is not an HTTP status code (100 to 599), and two
    entries with the same request ``params``: a request has one recorded response, so one of
    the two files would never be replayed (both files are named).
    """
    root = Path(directory).resolve()
    manifest_path = root / MANIFEST_NAME
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{manifest_path}: no manifest in the recorded directory") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ManifestError(f"{manifest_path}: not a manifest ({error})") from error
    raw_entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(raw_entries, list):
        raise ManifestError(
            f'{manifest_path}: not a manifest: expected an object {{"entries": [...]}} with a '
            f"list of entries"
        )
    entries = []
    # Normalised request params -> (entry index, file) of the entry that records them.
    recorded: dict[tuple[tuple[str, str], ...], tuple[int, str]] = {}
    for index, raw in enumerate(raw_entries, start=1):
        where = f"{manifest_path}, entry {index}"
        entry = _manifest_entry(raw, root=root, where=where)
        if entry.kind != "snapshot":
            key = tuple(sorted(entry.params.items()))
            if key in recorded:
                first_index, first_file = recorded[key]
                raise ManifestError(
                    f"{where}: {raw['file']!r} records the same request params as entry "
                    f"{first_index} ({first_file!r}): a request has one recorded response"
                )
            recorded[key] = (index, raw["file"])
        entries.append(entry)
    return entries


_ENTRY_KEYS = {"kind", "file", "params", "status", "description"}


def _manifest_entry(raw: Any, *, root: Path, where: str) -> ManifestEntry:
    """One manifest entry, checked; raises :class:`ManifestError` starting with ``where``."""
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: an entry is an object with 'kind' and 'file', not {raw!r}")
    unknown = sorted(raw.keys() - _ENTRY_KEYS)
    if unknown:
        raise ManifestError(f"{where}: unknown keys {', '.join(map(repr, unknown))}")
    kind, file_name = raw.get("kind"), raw.get("file")
    if kind is None or file_name is None:
        raise ManifestError(f"{where}: needs 'kind' and 'file'")
    if kind not in ("oai", "atom", "snapshot"):
        raise ManifestError(f"{where}: unknown kind {kind!r}")
    if not isinstance(file_name, str) or not file_name:
        raise ManifestError(
            f"{where}: 'file' must be a path inside the directory, not {file_name!r}"
        )
    try:
        path = (root / file_name).resolve()
        if not path.is_relative_to(root):
            raise ManifestError(f"{where}: {file_name!r} is outside {root}")
        if not path.is_file():
            raise ManifestError(f"{where}: no file {path}")
    except (OSError, ValueError) as error:
        if isinstance(error, ManifestError):
            raise
        raise ManifestError(f"{where}: cannot read {file_name!r} ({error})") from error
    params = raw.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict) or any(
        isinstance(value, dict | list) for value in params.values()
    ):
        raise ManifestError(
            f"{where}: 'params' must be an object of query parameters with plain values, "
            f"not {params!r}"
        )
    if kind != "snapshot" and not params:
        raise ManifestError(f"{where}: an {kind} entry needs the request 'params'")
    status = raw.get("status", 200)
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        raise ManifestError(
            f"{where}: 'status' must be an HTTP status code (100 to 599), not {status!r}"
        )
    return ManifestEntry(kind=kind, path=path, params=_normalised(params), status=status)


def _normalised(params: Mapping[str, Any]) -> dict[str, str]:
    """Request parameters as compared by the recorded transport: strings, empty ones dropped."""
    return {str(key): str(value) for key, value in params.items() if value not in (None, "")}


class RecordedTransport:
    """Answers requests from the files a recorded directory's manifest lists (no network).

    A request matches an entry when its parameters equal the entry's ``params`` (after
    normalisation: values as strings, empty values dropped); the URL's base is ignored, so the
    same sources run unchanged. Raises :class:`ManifestError` at construction for a bad manifest,
    :class:`NotRecorded` from :meth:`get` for a request no entry matches, and
    :class:`HarvestError` naming the file when the recorded status is not in ``ok_statuses``.
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory).resolve()
        self.entries = load_manifest(self.directory)
        self._responses = {
            tuple(sorted(entry.params.items())): entry
            for entry in self.entries
            if entry.kind != "snapshot"
        }

    def get(
        self, url: str, params: Mapping[str, str], *, ok_statuses: Iterable[int] = (200,)
    ) -> Fetched:
        """The recorded response for ``params`` (``url`` only appears in error messages).

        Raises :class:`NotRecorded` when no entry matches and :class:`HarvestError` when the
        recorded status is not in ``ok_statuses``.
        """
        key = tuple(sorted(_normalised(params).items()))
        entry = self._responses.get(key)
        if entry is None:
            raise NotRecorded(
                f"no recorded response for {url}?{urlencode(params)} in "
                f"{self.directory / MANIFEST_NAME}"
            )
        if entry.status not in tuple(ok_statuses):
            raise HarvestError(f"recorded HTTP status {entry.status}", url=str(entry.path))
        return Fetched(body=entry.path.read_bytes(), status=entry.status, source=str(entry.path))


class OaiPmhSource:
    """OAI-PMH 2.0 harvesting from arXiv: ``ListRecords`` of one set page after page, or
    ``GetRecord`` for each of a list of identifiers.

    - ``metadata_prefix``: ``arXivRaw`` (default, has every version), ``arXiv`` or ``oai_dc``;
    - ``set_spec``: an arXiv set (``cs``, ``physics:hep-th``); ``from_date``/``until_date``:
      datestamp bounds (``datetime.date`` or ``YYYY-MM-DD``), record-modification dates;
    - ``resumption_token``: start from this token instead (the other arguments are then not
      sent, as the protocol requires);
    - ``identifiers``: fetch these records one by one with ``GetRecord`` (``2409.01234`` or
      ``oai:arXiv.org:2409.01234``), instead of a list;
    - ``max_pages``: stop after this many pages (``None``: follow every token).

    :meth:`chunks` yields one :class:`Chunk` per page, with ``position``
    ``{"resumption_token": token, "restarts": n}`` (``{"next": i}`` for identifiers). The
    protocol's errors:

    - ``noRecordsMatch``: one empty chunk, the list is done (nothing in that range);
    - ``badResumptionToken`` (tokens expire): the list is asked for again from its ``from``
      datestamp, at most ``OAI_MAX_RESTARTS`` times; records already stored come back and are
      stored unchanged. Not from the newest datestamp seen: arXiv lists records in identifier
      order, not datestamp order (a real page goes 2008-01-25, 2008-11-26, ... 2008-01-28), so
      a later ``from`` would skip records of the list not yet delivered. A source started from
      a bare token does not know its list and raises :class:`SourceError` instead;
    - ``idDoesNotExist`` for ``GetRecord``: a chunk whose ``gaps`` name that identifier; the
      other identifiers are still fetched;
    - any other: :class:`SourceError`.

    Raises :class:`ParseError` for a page that is not a parseable OAI-PMH response and
    :class:`HarvestError` from the transport.
    """

    kind = "oai"

    def __init__(
        self,
        *,
        transport: Transport,
        base_url: str | None = None,
        metadata_prefix: str = "arXivRaw",
        set_spec: str | None = None,
        from_date: dt.date | str | None = None,
        until_date: dt.date | str | None = None,
        resumption_token: str | None = None,
        identifiers: Iterable[str] | str = (),
        max_pages: int | None = None,
    ):
        self.transport = transport
        self.base_url = base_url or settings.ARXIV_OAI_BASE_URL
        self.metadata_prefix = metadata_prefix
        self.set_spec = set_spec or None
        self.from_date = _iso_date(from_date, "from")
        self.until_date = _iso_date(until_date, "until")
        self.resumption_token = resumption_token or None
        self.identifiers = _id_list(identifiers)
        self.max_pages = max_pages

    @classmethod
    def from_request(
        cls, params: Mapping[str, str], *, transport: Transport, max_pages: int | None = None
    ) -> OaiPmhSource:
        """The source that sends exactly the OAI request ``params`` (``verb``, ``metadataPrefix``,
        ``set``, ``from``, ``until``, ``resumptionToken``, ``identifier``) as its first request.
        Raises ``ValueError`` for a verb other than ListRecords/GetRecord."""
        verb = params.get("verb", "ListRecords")
        if verb not in ("ListRecords", "GetRecord"):
            raise ValueError(f"cannot harvest with OAI verb {verb!r}")
        return cls(
            transport=transport,
            metadata_prefix=params.get("metadataPrefix", "arXivRaw"),
            set_spec=params.get("set"),
            from_date=params.get("from"),
            until_date=params.get("until"),
            resumption_token=params.get("resumptionToken"),
            identifiers=[params.get("identifier", "")] if verb == "GetRecord" else (),
            max_pages=max_pages,
        )

    def first_params(self) -> dict[str, str]:
        """Query parameters of the first request."""
        if self.identifiers:
            return self._get_record_params(self.identifiers[0])
        if self.resumption_token:
            return {"verb": "ListRecords", "resumptionToken": self.resumption_token}
        return self._list_params()

    def _list_params(self) -> dict[str, str]:
        params = {"verb": "ListRecords", "metadataPrefix": self.metadata_prefix}
        for name, value in (
            ("set", self.set_spec),
            ("from", self.from_date),
            ("until", self.until_date),
        ):
            if value:
                params[name] = value
        return params

    def _get_record_params(self, identifier: str) -> dict[str, str]:
        if not identifier.startswith("oai:"):
            identifier = f"oai:arXiv.org:{identifier}"
        return {
            "verb": "GetRecord",
            "identifier": identifier,
            "metadataPrefix": self.metadata_prefix,
        }

    def chunks(self, position: Mapping[str, Any] | None = None) -> Iterator[Chunk]:
        """One chunk per OAI page, following resumption tokens, from the start or from a
        chunk's ``position`` (errors: see the class)."""
        if self.identifiers:
            yield from self._get_records(int((position or {}).get("next", 0)))
            return
        restarts = int((position or {}).get("restarts", 0))
        if position and position.get("resumption_token"):
            params = {"verb": "ListRecords", "resumptionToken": str(position["resumption_token"])}
        else:
            params = self.first_params()
        pages = 0
        while True:
            fetched = self.transport.get(self.base_url, params)
            page = parse_oai_page(fetched.body, source=fetched.source)
            pages += 1
            if page.oai_error is not None:
                code = page.oai_error.code
                if code == "noRecordsMatch":
                    # The protocol's way of saying "nothing in that range": not a failure.
                    yield Chunk(source=fetched.source)
                    return
                if (
                    code == "badResumptionToken"
                    and "resumptionToken" in params
                    and not self.resumption_token
                    and restarts < OAI_MAX_RESTARTS
                ):
                    restarts += 1
                    params = self._list_params()
                    logger.warning(
                        "%s: badResumptionToken (%s); asking for the list again from %s "
                        "(restart %d of at most %d)",
                        fetched.source,
                        page.oai_error.message,
                        self.from_date or "its beginning",
                        restarts,
                        OAI_MAX_RESTARTS,
                    )
                    continue
                raise SourceError(
                    f"OAI-PMH error {code}: {page.oai_error.message}", source=fetched.source
                )
            token = page.resumption_token if page.verb == "ListRecords" else None
            if token and token == params.get("resumptionToken"):
                # Following it would fetch this page for ever (a broken proxy or cache can do it).
                raise SourceError(
                    f"the repository answered resumption token {token!r} with the same token "
                    "again; stopping instead of looping",
                    source=fetched.source,
                )
            more = bool(token) and (self.max_pages is None or pages < self.max_pages)
            yield Chunk(
                source=fetched.source,
                records=page.records,
                errors=page.errors,
                deleted=page.deleted,
                resumption_token=token,
                position={"resumption_token": token, "restarts": restarts} if more else None,
            )
            if not more:
                return
            params = {"verb": "ListRecords", "resumptionToken": token}

    def _get_records(self, first: int) -> Iterator[Chunk]:
        for index in range(first, len(self.identifiers)):
            identifier = self.identifiers[index]
            fetched = self.transport.get(self.base_url, self._get_record_params(identifier))
            page = parse_oai_page(fetched.body, source=fetched.source)
            position = {"next": index + 1} if index + 1 < len(self.identifiers) else None
            if page.oai_error is not None:
                if page.oai_error.code != "idDoesNotExist":
                    raise SourceError(
                        f"OAI-PMH error {page.oai_error.code}: {page.oai_error.message}",
                        source=fetched.source,
                    )
                error = ParseError(
                    f"OAI-PMH idDoesNotExist: {page.oai_error.message}",
                    source=fetched.source,
                    record=identifier,
                )
                yield Chunk(source=fetched.source, gaps=[error], position=position)
                continue
            yield Chunk(
                source=fetched.source,
                records=page.records,
                errors=page.errors,
                deleted=page.deleted,
                position=position,
            )


class AtomApiSource:
    """The arXiv API (``/api/query``): papers by ``id_list`` or by ``search_query``, paged.

    - ``id_list``: identifiers (any spelling arXiv accepts, versioned or not);
    - ``search_query``: arXiv's query syntax (``cat:cs.CL AND ti:agent``);
    - ``start``: 0-based offset of the first result; ``page_size``: results per request;
    - ``max_results``: results wanted in total (``None``: as many as the query matches);
    - ``sort_by`` / ``sort_order``: as the API takes them;
    - ``empty_page_retries``: how often a page that comes back empty in the middle of a result
      set is asked for again (default ``settings.ARXIV_API_EMPTY_PAGE_RETRIES``);
    - ``report_missing``: report ids of ``id_list`` the API did not return.

    :meth:`chunks` yields one :class:`Chunk` per response, with ``position``
    ``{"start": next offset, "returned": [ids returned so far]}``, and stops when
    ``max_results`` are read or the feed's ``totalResults`` is reached. A page with no entries
    while ``start < totalResults`` (a known arXiv API behaviour) is asked for again; still
    empty, it is skipped with a gap naming its range. The last chunk's ``gaps`` name each id
    of ``id_list`` that was asked for and not returned. Error entries never become records:
    they raise :class:`SourceError` (as does an HTTP 400 without one). Raises
    :class:`ParseError` for an unparseable feed and :class:`HarvestError` from the transport.
    """

    kind = "atom"

    def __init__(
        self,
        *,
        transport: Transport,
        base_url: str | None = None,
        id_list: Iterable[str] | str = (),
        search_query: str = "",
        start: int = 0,
        max_results: int | None = None,
        page_size: int = 100,
        sort_by: str = "relevance",
        sort_order: str = "descending",
        empty_page_retries: int | None = None,
        report_missing: bool = True,
    ):
        self.id_list = _id_list(id_list)
        self.search_query = search_query or ""
        if not self.id_list and not self.search_query:
            raise ValueError("the arXiv API needs an id_list or a search_query")
        if start < 0 or page_size < 1 or (max_results is not None and max_results < 0):
            raise ValueError("start must be >= 0, page_size >= 1 and max_results >= 0")
        self.transport = transport
        self.base_url = base_url or settings.ARXIV_API_BASE_URL
        self.start = start
        self.max_results = max_results
        self.page_size = page_size
        self.sort_by = sort_by
        self.sort_order = sort_order
        self.empty_page_retries = (
            empty_page_retries
            if empty_page_retries is not None
            else settings.ARXIV_API_EMPTY_PAGE_RETRIES
        )
        self.report_missing = report_missing and bool(self.id_list)

    @classmethod
    def from_request(cls, params: Mapping[str, str], *, transport: Transport) -> AtomApiSource:
        """The source that sends exactly the API request ``params`` (``id_list``,
        ``search_query``, ``start``, ``max_results``, ``sortBy``, ``sortOrder``) and stops
        after that one page. A replay of one recorded response: missing ids are not reported.
        Raises ``ValueError`` naming the parameter for a ``start`` or ``max_results`` that is not
        a whole number >= 0."""
        size = _int_param(params, "max_results", 10)
        return cls(
            transport=transport,
            id_list=params.get("id_list", ""),
            search_query=params.get("search_query", ""),
            start=_int_param(params, "start", 0),
            max_results=size,
            page_size=size,
            sort_by=params.get("sortBy", "relevance"),
            sort_order=params.get("sortOrder", "descending"),
            report_missing=False,
        )

    def chunks(self, position: Mapping[str, Any] | None = None) -> Iterator[Chunk]:
        """One chunk per API response, ``start`` advancing by the entries read, from the start
        or from a chunk's ``position``."""
        position = position or {}
        start = int(position.get("start", self.start))
        returned: set[str] = set(position.get("returned", ()))
        read = start - self.start
        empty_tries = 0
        while self.max_results is None or read < self.max_results:
            size = self.page_size
            if self.max_results is not None:
                size = min(size, self.max_results - read)
            params = {
                "search_query": self.search_query,
                "id_list": ",".join(self.id_list),
                "sortBy": self.sort_by,
                "sortOrder": self.sort_order,
                "start": str(start),
                "max_results": str(size),
            }
            # The API answers a bad query with HTTP 400 and an error entry worth reading.
            fetched = self.transport.get(self.base_url, params, ok_statuses=(200, 400))
            page = parse_atom_feed(fetched.body, source=fetched.source)
            if page.api_errors:
                raise SourceError(
                    "arXiv API error: " + "; ".join(page.api_errors), source=fetched.source
                )
            if fetched.status != 200:
                raise SourceError(
                    f"HTTP {fetched.status} without an error entry", source=fetched.source
                )
            entries = len(page.records) + len(page.errors)
            total = page.total_results
            chunk = Chunk(source=fetched.source, records=page.records, errors=page.errors)
            if entries == 0 and total is not None and start < total:
                if empty_tries < self.empty_page_retries:
                    empty_tries += 1
                    logger.warning(
                        "%s: no entries at start=%d of %d results; asking again (%d of %d)",
                        fetched.source,
                        start,
                        total,
                        empty_tries,
                        self.empty_page_retries,
                    )
                    continue
                chunk.gaps = [
                    ParseError(
                        f"no entries at start={start} of {total} results after "
                        f"{empty_tries + 1} requests; page skipped",
                        source=fetched.source,
                        record=f"results {start} to {start + size - 1}",
                    )
                ]
                entries = size
            empty_tries = 0
            returned.update(record.arxiv_id for record in page.records)
            read += entries
            start += entries
            done = (
                entries == 0
                or (total is not None and start >= total)
                or (self.max_results is not None and read >= self.max_results)
            )
            if done:
                chunk.gaps.extend(self._missing(returned, fetched.source))
            else:
                chunk.position = {"start": start}
                if self.report_missing:
                    chunk.position["returned"] = sorted(returned)
            yield chunk
            if done:
                return

    def _missing(self, returned: set[str], source: str) -> list[ParseError]:
        """One error per id of ``id_list`` that no returned record carries."""
        if not self.report_missing:
            return []
        missing = []
        for asked in self.id_list:
            try:
                canonical, _ = parse_arxiv_id(asked)
            except InvalidArxivId:
                canonical = asked
            if canonical not in returned:
                missing.append(
                    ParseError(
                        "asked for but not returned by the arXiv API", source=source, record=asked
                    )
                )
        return missing


class SnapshotTruncated(SourceError):
    """A snapshot file ends early or its gzip stream is corrupt. Raised after the records read
    before the break have been yielded (and so stored): the harvest run fails with this error,
    its checkpoint at the last whole chunk, and resuming it re-reads from there."""


def _until_truncated(records: Iterator[ArxivRecord], broken: list, source: str):
    """Yield ``records`` until the file ends; a truncated or corrupt gzip stream stops the
    reading with a :class:`SnapshotTruncated` appended to ``broken`` instead of losing the
    records read before it."""
    count = 0
    try:
        for record in records:
            count += 1
            yield record
    except (EOFError, OSError, zlib.error) as error:
        broken.append(
            SnapshotTruncated(
                f"file ends early or is corrupt after record {count}: {error}", source=source
            )
        )


class SnapshotSource:
    """A Kaggle-format snapshot file (JSON lines, plain or gzip-compressed), streamed.

    :meth:`chunks` yields chunks of up to ``chunk_size`` records, with ``position``
    ``{"chunks": chunks read}``; resuming from a position reads past the chunks already
    stored without yielding them. A bad line becomes a :class:`ParseError` naming the file and
    ``line N`` in the chunk's ``errors`` and reading goes on. Raises ``OSError`` for a file
    that cannot be opened, and :class:`SnapshotTruncated` (naming the file and the last record
    read) for a file that ends early or a corrupt gzip stream, after yielding the records read
    before the break in a chunk whose ``position`` is that of the last whole chunk.
    """

    kind = "snapshot"

    def __init__(self, path: str | Path, *, chunk_size: int = SNAPSHOT_CHUNK_SIZE):
        self.path = Path(path)
        self.chunk_size = chunk_size

    def chunks(self, position: Mapping[str, Any] | None = None) -> Iterator[Chunk]:
        """Chunks of up to ``chunk_size`` records, read lazily; bad lines in ``errors``."""
        skip = int((position or {}).get("chunks", 0))
        source = str(self.path)
        records: list[ArxivRecord] = []
        errors: list[ParseError] = []
        broken: list[SnapshotTruncated] = []
        done = 0
        with self._open() as stream:
            for record in _until_truncated(
                iter_snapshot(stream, source=source, on_error=errors.append), broken, source
            ):
                records.append(record)
                if len(records) >= self.chunk_size:
                    done += 1
                    if done > skip:
                        yield Chunk(
                            source=source,
                            records=records,
                            errors=list(errors),
                            position={"chunks": done},
                        )
                    records = []
                    errors.clear()
        if broken:
            if (records or errors) and done + 1 > skip:
                # Stored, but not counted as read: resuming reads this chunk again.
                yield Chunk(
                    source=source,
                    records=records,
                    errors=list(errors),
                    position={"chunks": done},
                )
            raise broken[0]
        if (records or errors) and done + 1 > skip:
            yield Chunk(source=source, records=records, errors=list(errors), position=None)

    def _open(self):
        with self.path.open("rb") as probe:
            is_gzip = probe.read(2) == b"\x1f\x8b"
        return gzip.open(self.path, "rb") if is_gzip else self.path.open("rb")


def recorded_sources(directory: str | Path = DEFAULT_RECORDED_DIR) -> list[Source]:
    """One source per manifest entry, over a :class:`RecordedTransport`, in manifest order.

    Each OAI or API entry replays exactly its recorded response: resumption tokens and further
    pages are not followed, since the pages after a recorded one were not recorded.
    Raises :class:`ManifestError` naming the manifest and the entry for a bad manifest or an
    entry whose ``params`` no source can send (an OAI verb other than ListRecords/GetRecord,
    a malformed date, a ``start`` or ``max_results`` that is not a whole number >= 0).
    """
    transport = RecordedTransport(directory)
    sources: list[Source] = []
    for index, entry in enumerate(transport.entries, start=1):
        try:
            if entry.kind == "oai":
                sources.append(
                    OaiPmhSource.from_request(entry.params, transport=transport, max_pages=1)
                )
            elif entry.kind == "atom":
                sources.append(AtomApiSource.from_request(entry.params, transport=transport))
            else:
                sources.append(SnapshotSource(entry.path))
        except ValueError as error:
            # A request no source can send (a verb, a date, a number): the entry is wrong.
            raise ManifestError(
                f"{transport.directory / MANIFEST_NAME}, entry {index}: {error}"
            ) from error
    return sources


_ALLOWED_PARAMS = {
    "recorded": {"directory"},
    "oai": {
        "metadata_prefix",
        "sets",
        "from",
        "until",
        "resumption_token",
        "identifiers",
        "base_url",
        "incremental",
    },
    "atom": {"id_list", "search_query", "start", "max_results", "page_size", "base_url"},
    "snapshot": {"path"},
}


def sources_for(kind: str, params: Mapping[str, Any]) -> list[Source]:
    """Build the sources of a harvest from plain JSON parameters (what the task receives).

    - ``recorded``: ``{"directory": path}`` (default ``papers/recorded/``);
    - ``oai``: ``{"metadata_prefix", "sets", "from", "until", "resumption_token",
      "identifiers", "base_url", "incremental"}``, all optional: one ``ListRecords`` source per
      set of ``sets`` (a list; default ``settings.ARXIV_OAI_SETS``; an empty list harvests
      the whole repository), or one source from ``resumption_token`` (one set at most), or one
      ``GetRecord`` source for ``identifiers`` (a list or ``"a,b"``); ``incremental`` is read
      by ``papers.services`` (which fills ``from``) and ignored here;
    - ``atom``: ``{"id_list": [..] or "a,b", "search_query", "start", "max_results",
      "page_size", "base_url"}``; ``max_results`` defaults to the number of ids, or 100 for a
      search;
    - ``snapshot``: ``{"path": file}``.

    OAI and API sources share one :class:`HttpTransport`. Raises ``ValueError`` naming what is
    wrong for an unknown kind or parameter or a malformed value, and :class:`ManifestError`
    for a bad recorded directory.
    """
    if kind not in _ALLOWED_PARAMS:
        raise ValueError(f"unknown harvest kind {kind!r}; expected one of {', '.join(KINDS)}")
    unknown = set(params) - _ALLOWED_PARAMS[kind]
    if unknown:
        raise ValueError(f"unknown {kind} parameters: {', '.join(sorted(unknown))}")
    if kind == "recorded":
        return recorded_sources(params.get("directory") or DEFAULT_RECORDED_DIR)
    if kind == "snapshot":
        if not params.get("path"):
            raise ValueError("a snapshot harvest needs a 'path'")
        return [SnapshotSource(params["path"])]
    if kind == "oai":
        return _oai_sources(params)
    id_list = _id_list(params.get("id_list") or ())
    # Unbounded searches would page through hundreds of thousands of results: default to 100.
    max_results = params.get("max_results")
    if max_results is None:
        max_results = len(id_list) if id_list else 100
    return [
        AtomApiSource(
            transport=HttpTransport(),
            base_url=params.get("base_url"),
            id_list=id_list,
            search_query=params.get("search_query") or "",
            start=_int_param(params, "start", 0),
            max_results=_int_param(params, "max_results", max_results),
            page_size=_int_param(params, "page_size", 100),
        )
    ]


def oai_sets(params: Mapping[str, Any]) -> list[str]:
    """The OAI sets ``params`` ask for: its ``sets`` list, else ``settings.ARXIV_OAI_SETS``.
    Raises ``ValueError`` when ``sets`` is not a list of set names."""
    sets = params.get("sets")
    if sets is None:
        return list(settings.ARXIV_OAI_SETS)
    if not isinstance(sets, list) or not all(isinstance(s, str) and s.strip() for s in sets):
        raise ValueError(f"OAI 'sets' must be a list of set names such as ['cs'], not {sets!r}")
    return [s.strip() for s in sets]


def _oai_sources(params: Mapping[str, Any]) -> list[OaiPmhSource]:
    if not isinstance(params.get("incremental", False), bool):
        raise ValueError(f"OAI 'incremental' must be true or false, not {params['incremental']!r}")
    sets = oai_sets(params)
    transport = HttpTransport()
    common = {
        "transport": transport,
        "base_url": params.get("base_url"),
        "metadata_prefix": params.get("metadata_prefix") or "arXivRaw",
        "from_date": params.get("from"),
        "until_date": params.get("until"),
    }
    identifiers = _id_list(params.get("identifiers") or ())
    if identifiers:
        return [OaiPmhSource(identifiers=identifiers, **common)]
    if params.get("resumption_token"):
        if len(sets) > 1:
            raise ValueError("an OAI 'resumption_token' belongs to one list: give one set at most")
        return [
            OaiPmhSource(
                set_spec=sets[0] if sets else None,
                resumption_token=params["resumption_token"],
                **common,
            )
        ]
    return [OaiPmhSource(set_spec=set_spec, **common) for set_spec in sets or [None]]


def _id_list(ids: Iterable[str] | str) -> list[str]:
    """Identifiers from a list or a comma-separated string, blanks dropped."""
    if isinstance(ids, str):
        ids = ids.split(",")
    return [str(part).strip() for part in ids if str(part).strip()]


def _int_param(params: Mapping[str, Any], name: str, default: int) -> int:
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"'{name}' must be a whole number, not {value!r}") from None


def _iso_date(value: dt.date | str | None, name: str) -> str | None:
    """``YYYY-MM-DD`` for an OAI date bound; raises ``ValueError`` naming the bound otherwise."""
    if value in (None, ""):
        return None
    if isinstance(value, dt.date):
        return value.isoformat()
    try:
        return dt.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ValueError(f"OAI '{name}' must be a date YYYY-MM-DD, not {value!r}") from None
