"""Where arXiv records come from: transports that answer requests, and sources that page over them.

A **transport** answers ``GET url?params`` with a :class:`Fetched` body. There are two:

- :class:`HttpTransport` talks to arXiv (requests + urllib3 ``Retry``: a descriptive
  User-Agent, connect/read timeouts, bounded retries with exponential backoff, ``Retry-After``
  honoured on 503 and 429, a response size cap, then a loud :class:`HarvestError`);
- :class:`RecordedTransport` answers from files on disk listed in a ``manifest.json``, so the
  demo and the tests run the very same sources with no network.

A **source** turns requests into :class:`Chunk` objects (parsed records plus record-level
errors, one chunk per response page or per run of snapshot lines):

- :class:`OaiPmhSource`: OAI-PMH 2.0 ``ListRecords`` (or ``GetRecord``), following the
  ``resumptionToken`` page after page (http://www.openarchives.org/OAI/openarchivesprotocol.html);
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
values and turning every value into a string); ``status`` is the recorded HTTP status
(default 200); ``file`` is relative to the directory and may not leave it.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

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
    "SnapshotSource",
    "Source",
    "SourceError",
    "Transport",
    "load_manifest",
    "recorded_sources",
    "sources_for",
]

logger = logging.getLogger(__name__)

DEFAULT_RECORDED_DIR = Path(__file__).resolve().parent / "recorded"
MANIFEST_NAME = "manifest.json"
# arXivRaw pages of 1000 records are about 2 MB; anything near this cap is not a normal answer.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# The arXiv API terms ask for no more than one request every three seconds.
ARXIV_API_MIN_INTERVAL = 3.0
# arXiv's OAI service sends Retry-After on 503 while it is busy; a longer wait than this is an
# outage better handled by the task's own retry than by a blocked worker.
DEFAULT_RETRY_AFTER_MAX = 300
SNAPSHOT_CHUNK_SIZE = 1000
KINDS = ("oai", "atom", "snapshot", "recorded")


class HarvestError(Exception):
    """A request failed for good: network error or timeout after the bounded retries, an HTTP
    status still 429/503 after them, another unexpected HTTP status, or a body over the size
    cap. ``url`` is the full request URL (or the recorded file); ``str(error)`` starts with it.
    Worth retrying later (the task does); nothing was parsed from the failed request.
    """

    def __init__(self, message: str, *, url: str):
        self.url = url
        self.message = message
        super().__init__(f"{url}: {message}")


class SourceError(Exception):
    """The source answered but refused the request: an OAI-PMH ``<error>`` other than
    ``noRecordsMatch`` (``badResumptionToken``, ``badArgument``, ``idDoesNotExist`` ...) or an
    arXiv API error entry. Asking again gives the same answer, so it is reported, not retried.
    ``source`` names the URL or recorded file.
    """

    def __init__(self, message: str, *, source: str):
        self.source = source
        self.message = message
        super().__init__(f"{source}: {message}")


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
    - ``errors``: records the parser rejected (each names source and record or line);
    - ``deleted``: canonical ids OAI reported as deleted;
    - ``resumption_token``: OAI token for the page after this one (``None`` on the last page);
      the harvest keeps it as its checkpoint once the chunk is stored.
    """

    source: str
    records: list[ArxivRecord] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    resumption_token: str | None = None


class Transport(Protocol):
    """Answers ``GET url?params``; raises :class:`HarvestError` for a status not in
    ``ok_statuses`` or a request that failed for good."""

    def get(
        self, url: str, params: Mapping[str, str], *, ok_statuses: Iterable[int] = (200,)
    ) -> Fetched: ...


class Source(Protocol):
    """Yields :class:`Chunk` objects; raises :class:`ParseError` for a page that cannot be
    parsed, :class:`SourceError` for a refused request, :class:`HarvestError` for a failed one."""

    kind: str

    def chunks(self) -> Iterator[Chunk]: ...


class HttpTransport:
    """GET over HTTP with requests, retried by urllib3's ``Retry`` mounted on an ``HTTPAdapter``.

    - ``user_agent``: sent on every request (default ``settings.ARXIV_USER_AGENT``);
    - ``timeout``: connect and read timeout in seconds (default ``settings.ARXIV_HTTP_TIMEOUT``);
    - ``retries``: retries after the first attempt, for connection errors, read timeouts and
      HTTP 429/503 (default ``settings.ARXIV_HTTP_RETRIES``); waits ``backoff_factor * 2**n``
      seconds between them, or what ``Retry-After`` says (at most ``retry_after_max`` seconds);
    - ``max_bytes``: a body longer than this is refused;
    - ``min_interval``: seconds between the starts of two requests from this transport (the
      arXiv API asks for 3; per process, not across workers).

    :meth:`get` raises :class:`HarvestError` naming the URL once retries are spent, for an
    HTTP status not in ``ok_statuses``, and for an oversized body.
    """

    def __init__(
        self,
        *,
        user_agent: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff_factor: float = 2.0,
        retry_after_max: int = DEFAULT_RETRY_AFTER_MAX,
        max_bytes: int = DEFAULT_MAX_BYTES,
        min_interval: float = 0.0,
    ):
        self.user_agent = user_agent or settings.ARXIV_USER_AGENT
        self.timeout = timeout if timeout is not None else settings.ARXIV_HTTP_TIMEOUT
        self.retries = retries if retries is not None else settings.ARXIV_HTTP_RETRIES
        self.max_bytes = max_bytes
        self.min_interval = min_interval
        self._last_request = 0.0
        self._lock = threading.Lock()
        retry = Retry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            other=0,
            allowed_methods=frozenset({"GET"}),
            status_forcelist=(429, 503),
            backoff_factor=backoff_factor,
            respect_retry_after_header=True,
            retry_after_max=retry_after_max,
            raise_on_status=True,
        )
        self.session = requests.Session()
        self.session.headers["User-Agent"] = self.user_agent
        adapter = HTTPAdapter(max_retries=retry)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def get(
        self, url: str, params: Mapping[str, str], *, ok_statuses: Iterable[int] = (200,)
    ) -> Fetched:
        """GET ``url`` with query ``params``; returns the body (at most ``max_bytes``).

        Raises :class:`HarvestError` naming the full URL when retries are spent, for a status
        not in ``ok_statuses`` and for an oversized body.
        """
        full_url = f"{url}?{urlencode(params)}" if params else url
        self._wait_turn()
        logger.info("GET %s", full_url)
        try:
            with self.session.get(
                url, params=dict(params), timeout=(self.timeout, self.timeout), stream=True
            ) as response:
                status = response.status_code
                body = self._read_capped(response, full_url)
        except requests.RequestException as error:
            raise HarvestError(
                f"request failed after {self.retries} retries: {error}", url=full_url
            ) from error
        if status not in tuple(ok_statuses):
            raise HarvestError(f"unexpected HTTP status {status}", url=full_url)
        return Fetched(body=body, status=status, source=full_url)

    def _wait_turn(self) -> None:
        if self.min_interval <= 0:
            return
        with self._lock:
            wait = self._last_request + self.min_interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_request = time.monotonic()

    def _read_capped(self, response: requests.Response, full_url: str) -> bytes:
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
            parts.append(part)
        return b"".join(parts)


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

    Raises :class:`ManifestError` naming the manifest for a missing or malformed manifest, an
    unknown kind, a missing file or a file outside the directory.
    """
    root = Path(directory).resolve()
    manifest_path = root / MANIFEST_NAME
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
        raw_entries = data["entries"]
    except FileNotFoundError:
        raise ManifestError(f"{manifest_path}: no manifest in the recorded directory") from None
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ManifestError(f"{manifest_path}: not a manifest ({error})") from error
    entries = []
    for index, raw in enumerate(raw_entries, start=1):
        where = f"{manifest_path}, entry {index}"
        try:
            kind, file_name = raw["kind"], raw["file"]
        except (KeyError, TypeError):
            raise ManifestError(f"{where}: needs 'kind' and 'file'") from None
        if kind not in ("oai", "atom", "snapshot"):
            raise ManifestError(f"{where}: unknown kind {kind!r}")
        path = (root / file_name).resolve()
        if not path.is_relative_to(root):
            raise ManifestError(f"{where}: {file_name!r} is outside {root}")
        if not path.is_file():
            raise ManifestError(f"{where}: no file {path}")
        params = raw.get("params") or {}
        if kind != "snapshot" and not params:
            raise ManifestError(f"{where}: an {kind} entry needs the request 'params'")
        entries.append(
            ManifestEntry(
                kind=kind,
                path=path,
                params=_normalised(params),
                status=int(raw.get("status", 200)),
            )
        )
    return entries


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
    """OAI-PMH 2.0 harvesting from arXiv: ``ListRecords`` page after page, or one ``GetRecord``.

    - ``metadata_prefix``: ``arXivRaw`` (default, has every version), ``arXiv`` or ``oai_dc``;
    - ``set_spec``: an arXiv set (``cs``, ``physics:hep-th``); ``from_date``/``until_date``:
      datestamp bounds (``datetime.date`` or ``YYYY-MM-DD``), record-modification dates;
    - ``resumption_token``: start from this token instead (the other arguments are then not
      sent, as the protocol requires);
    - ``identifier``: fetch this one record with ``GetRecord`` (``2409.01234`` or
      ``oai:arXiv.org:2409.01234``);
    - ``max_pages``: stop after this many pages (``None``: follow every token).

    :meth:`chunks` yields one :class:`Chunk` per page; ``noRecordsMatch`` yields one empty chunk.
    Raises :class:`ParseError` for a page that is not a parseable OAI-PMH response,
    :class:`SourceError` for any other OAI error, and :class:`HarvestError` from the transport.
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
        identifier: str | None = None,
        max_pages: int | None = None,
    ):
        self.transport = transport
        self.base_url = base_url or settings.ARXIV_OAI_BASE_URL
        self.metadata_prefix = metadata_prefix
        self.set_spec = set_spec or None
        self.from_date = _iso_date(from_date, "from")
        self.until_date = _iso_date(until_date, "until")
        self.resumption_token = resumption_token or None
        self.identifier = identifier or None
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
            identifier=params.get("identifier") if verb == "GetRecord" else None,
            max_pages=max_pages,
        )

    def first_params(self) -> dict[str, str]:
        """Query parameters of the first request."""
        if self.identifier:
            identifier = self.identifier
            if not identifier.startswith("oai:"):
                identifier = f"oai:arXiv.org:{identifier}"
            return {
                "verb": "GetRecord",
                "identifier": identifier,
                "metadataPrefix": self.metadata_prefix,
            }
        if self.resumption_token:
            return {"verb": "ListRecords", "resumptionToken": self.resumption_token}
        params = {"verb": "ListRecords", "metadataPrefix": self.metadata_prefix}
        for name, value in (
            ("set", self.set_spec),
            ("from", self.from_date),
            ("until", self.until_date),
        ):
            if value:
                params[name] = value
        return params

    def chunks(self) -> Iterator[Chunk]:
        """One chunk per OAI page, following resumption tokens (errors: see the class)."""
        params = self.first_params()
        pages = 0
        while True:
            fetched = self.transport.get(self.base_url, params)
            page = parse_oai_page(fetched.body, source=fetched.source)
            pages += 1
            if page.oai_error is not None:
                if page.oai_error.code == "noRecordsMatch":
                    # The protocol's way of saying "nothing in that range": not a failure.
                    yield Chunk(source=fetched.source)
                    return
                raise SourceError(
                    f"OAI-PMH error {page.oai_error.code}: {page.oai_error.message}",
                    source=fetched.source,
                )
            token = page.resumption_token if page.verb == "ListRecords" else None
            yield Chunk(
                source=fetched.source,
                records=page.records,
                errors=page.errors,
                deleted=page.deleted,
                resumption_token=token,
            )
            if not token or (self.max_pages is not None and pages >= self.max_pages):
                return
            params = {"verb": "ListRecords", "resumptionToken": token}


class AtomApiSource:
    """The arXiv API (``/api/query``): papers by ``id_list`` or by ``search_query``, paged.

    - ``id_list``: identifiers (any spelling arXiv accepts, versioned or not);
    - ``search_query``: arXiv's query syntax (``cat:cs.CL AND ti:agent``);
    - ``start``: 0-based offset of the first result; ``page_size``: results per request;
    - ``max_results``: results wanted in total (``None``: as many as the query matches);
    - ``sort_by`` / ``sort_order``: as the API takes them.

    :meth:`chunks` yields one :class:`Chunk` per response and stops when ``max_results`` are
    read, the feed's ``totalResults`` is reached or a page comes back empty. Error entries never
    become records: they raise :class:`SourceError` (as does an HTTP 400 without one).
    Raises :class:`ParseError` for an unparseable feed and :class:`HarvestError` from the
    transport.
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
    ):
        if isinstance(id_list, str):
            id_list = [part for part in id_list.split(",")]
        self.id_list = [part.strip() for part in id_list if part.strip()]
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

    @classmethod
    def from_request(cls, params: Mapping[str, str], *, transport: Transport) -> AtomApiSource:
        """The source that sends exactly the API request ``params`` (``id_list``,
        ``search_query``, ``start``, ``max_results``, ``sortBy``, ``sortOrder``) and stops
        after that one page."""
        size = int(params.get("max_results", 10))
        return cls(
            transport=transport,
            id_list=params.get("id_list", ""),
            search_query=params.get("search_query", ""),
            start=int(params.get("start", 0)),
            max_results=size,
            page_size=size,
            sort_by=params.get("sortBy", "relevance"),
            sort_order=params.get("sortOrder", "descending"),
        )

    def chunks(self) -> Iterator[Chunk]:
        """One chunk per API response, ``start`` advancing by the entries read."""
        start = self.start
        read = 0
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
            yield Chunk(source=fetched.source, records=page.records, errors=page.errors)
            entries = len(page.records) + len(page.errors)
            read += entries
            start += entries
            total = page.total_results
            if entries == 0 or (total is not None and start >= total):
                return


class SnapshotSource:
    """A Kaggle-format snapshot file (JSON lines, plain or gzip-compressed), streamed.

    :meth:`chunks` yields chunks of up to ``chunk_size`` records; a bad line becomes a
    :class:`ParseError` naming the file and ``line N`` in the chunk's ``errors`` and reading
    goes on. Raises ``OSError`` for a file that cannot be opened.
    """

    kind = "snapshot"

    def __init__(self, path: str | Path, *, chunk_size: int = SNAPSHOT_CHUNK_SIZE):
        self.path = Path(path)
        self.chunk_size = chunk_size

    def chunks(self) -> Iterator[Chunk]:
        """Chunks of up to ``chunk_size`` records, read lazily; bad lines in ``errors``."""
        source = str(self.path)
        records: list[ArxivRecord] = []
        errors: list[ParseError] = []
        with self._open() as stream:
            for record in iter_snapshot(stream, source=source, on_error=errors.append):
                records.append(record)
                if len(records) >= self.chunk_size:
                    yield Chunk(source=source, records=records, errors=list(errors))
                    records = []
                    errors.clear()
        if records or errors:
            yield Chunk(source=source, records=records, errors=list(errors))

    def _open(self):
        with self.path.open("rb") as probe:
            is_gzip = probe.read(2) == b"\x1f\x8b"
        return gzip.open(self.path, "rb") if is_gzip else self.path.open("rb")


def recorded_sources(directory: str | Path = DEFAULT_RECORDED_DIR) -> list[Source]:
    """One source per manifest entry, over a :class:`RecordedTransport`, in manifest order.

    Each OAI or API entry replays exactly its recorded response: resumption tokens and further
    pages are not followed, since the pages after a recorded one were not recorded.
    Raises :class:`ManifestError` for a bad manifest.
    """
    transport = RecordedTransport(directory)
    sources: list[Source] = []
    for entry in transport.entries:
        if entry.kind == "oai":
            sources.append(
                OaiPmhSource.from_request(entry.params, transport=transport, max_pages=1)
            )
        elif entry.kind == "atom":
            sources.append(AtomApiSource.from_request(entry.params, transport=transport))
        else:
            sources.append(SnapshotSource(entry.path))
    return sources


def sources_for(kind: str, params: Mapping[str, Any]) -> list[Source]:
    """Build the sources of a harvest from plain JSON parameters (what the task receives).

    - ``recorded``: ``{"directory": path}`` (default ``papers/recorded/``);
    - ``oai``: ``{"metadata_prefix", "set", "from", "until", "resumption_token",
      "identifier", "base_url"}``, all optional;
    - ``atom``: ``{"id_list": [..] or "a,b", "search_query", "start", "max_results",
      "page_size", "base_url"}``; ``max_results`` defaults to the number of ids, or 100 for a
      search;
    - ``snapshot``: ``{"path": file}``.

    OAI and API sources go over :class:`HttpTransport` (the API one throttled to one request
    every 3 s). Raises ``ValueError`` for an unknown kind or parameter and
    :class:`ManifestError` for a bad recorded directory.
    """
    allowed = {
        "recorded": {"directory"},
        "oai": {
            "metadata_prefix",
            "set",
            "from",
            "until",
            "resumption_token",
            "identifier",
            "base_url",
        },
        "atom": {"id_list", "search_query", "start", "max_results", "page_size", "base_url"},
        "snapshot": {"path"},
    }
    if kind not in allowed:
        raise ValueError(f"unknown harvest kind {kind!r}; expected one of {', '.join(KINDS)}")
    unknown = set(params) - allowed[kind]
    if unknown:
        raise ValueError(f"unknown {kind} parameters: {', '.join(sorted(unknown))}")
    if kind == "recorded":
        return recorded_sources(params.get("directory") or DEFAULT_RECORDED_DIR)
    if kind == "snapshot":
        if not params.get("path"):
            raise ValueError("a snapshot harvest needs a 'path'")
        return [SnapshotSource(params["path"])]
    if kind == "oai":
        return [
            OaiPmhSource(
                transport=HttpTransport(),
                base_url=params.get("base_url"),
                metadata_prefix=params.get("metadata_prefix") or "arXivRaw",
                set_spec=params.get("set"),
                from_date=params.get("from"),
                until_date=params.get("until"),
                resumption_token=params.get("resumption_token"),
                identifier=params.get("identifier"),
            )
        ]
    id_list = params.get("id_list") or ()
    if isinstance(id_list, str):
        id_list = [part for part in id_list.split(",") if part.strip()]
    # Unbounded searches would page through hundreds of thousands of results: default to 100.
    max_results = params.get("max_results")
    if max_results is None:
        max_results = len(id_list) if id_list else 100
    return [
        AtomApiSource(
            transport=HttpTransport(min_interval=ARXIV_API_MIN_INTERVAL),
            base_url=params.get("base_url"),
            id_list=id_list,
            search_query=params.get("search_query") or "",
            start=int(params.get("start") or 0),
            max_results=int(max_results),
            page_size=int(params.get("page_size") or 100),
        )
    ]


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
