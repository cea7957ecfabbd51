"""Recorded replay: :class:`RecordedTransport` answers requests from files on disk that a
``manifest.json`` lists, so the demo and the tests run the very same sources with no network;
:func:`recorded_sources` replays everything a manifest lists.

Manifest format (``<directory>/manifest.json``)::

    {"entries": [
        {"kind": "oai", "file": "oai/page.xml",
         "params": {"verb": "ListRecords", "resumptionToken": "496549|46001"}},
        {"kind": "atom", "file": "atom/one.xml", "status": 200,
         "params": {"id_list": "astro-ph/0601001", "start": "0", "max_results": "100", ...}},
        {"kind": "atom", "params": {...},
         "responses": [{"status": 503, "headers": {"Retry-After": "2"}, "file": "atom/busy.txt"},
                       {"status": 200, "file": "atom/two.xml"}]},
        {"kind": "snapshot", "file": "snapshot/head.jsonl"}
    ]}

``params`` are the query parameters of the recorded request (matched after dropping empty
values and turning every value into a string; no two entries may record the same request).
A request's answer is either one response, ``file`` with ``status`` (default 200) and
``headers`` (default none) in the entry itself, or ``responses``: the answers it got, in order,
each with ``status`` (default 200), ``headers`` and ``file`` (optional: an empty body). The
n-th attempt at the request gets the n-th response and every later attempt the last one, so
a recorded ``503`` with ``Retry-After`` followed by a ``200`` goes through the same retries
and waits as over HTTP. ``file`` is relative to the directory and may not leave it;
``description`` (optional) is free text. Anything else is refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atom import AtomApiSource
from .base import Source
from .oai import OaiPmhSource
from .snapshot import SnapshotSource
from .transports import RETRY_STATUSES, Attempt, RetryingTransport, retry_after_seconds

__all__ = [
    "DEFAULT_RECORDED_DIR",
    "MANIFEST_NAME",
    "ManifestEntry",
    "ManifestError",
    "NotRecorded",
    "RecordedResponse",
    "RecordedTransport",
    "load_manifest",
    "recorded_sources",
]

DEFAULT_RECORDED_DIR = Path(__file__).resolve().parent.parent / "recorded"
MANIFEST_NAME = "manifest.json"


class NotRecorded(LookupError):
    """:class:`RecordedTransport` was asked for a request its manifest does not list."""


class ManifestError(ValueError):
    """A recorded directory's ``manifest.json`` is missing, malformed or names a bad file."""


@dataclass(frozen=True)
class RecordedResponse:
    """One recorded answer: HTTP ``status``, ``headers`` (as sent) and the absolute ``path`` of
    its body (``None``: an empty body)."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    path: Path | None = None

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), ``None`` when not recorded."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@dataclass(frozen=True)
class ManifestEntry:
    """One recorded request (or snapshot file): ``kind`` (oai, atom, snapshot), request
    ``params`` (empty for snapshots), and ``responses``, the answers in the order they came
    (one for a snapshot: its file). ``path`` and ``status`` are the last response's."""

    kind: str
    params: dict[str, str]
    responses: tuple[RecordedResponse, ...]

    @property
    def path(self) -> Path | None:
        return self.responses[-1].path

    @property
    def status(self) -> int:
        return self.responses[-1].status


def load_manifest(directory: str | Path) -> list[ManifestEntry]:
    """Read ``<directory>/manifest.json`` (format in the module docstring), in listed order.

    Raises :class:`ManifestError` naming the manifest, and the entry by its 1-based index, for
    a missing or unreadable manifest, one that is not ``{"entries": [...]}``, an entry that is
    not an object or has keys other than ``kind``, ``file``, ``params``, ``status``,
    ``headers``, ``responses`` and ``description``, an unknown kind, a ``file`` that is not a
    relative path to a file inside the directory, ``params`` that are not an object of plain
    values (or are missing for an OAI or API entry), a ``status`` that is not an HTTP status
    code (100 to 599), ``headers`` that are not an object of strings, ``responses`` that are
    not a non-empty list of responses (or come with ``file`` or ``status``), and two entries
    with the same request ``params``: one of the two would never be replayed (both are named;
    a request's successive answers belong in one entry's ``responses``).
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
            name = raw.get("file", "its responses")
            if key in recorded:
                first_index, first_file = recorded[key]
                raise ManifestError(
                    f"{where}: {name!r} records the same request params as entry "
                    f"{first_index} ({first_file!r}): list a request's successive answers "
                    f"in one entry's 'responses'"
                )
            recorded[key] = (index, name)
        entries.append(entry)
    return entries


_ENTRY_KEYS = {"kind", "file", "params", "status", "headers", "responses", "description"}
_RESPONSE_KEYS = {"file", "status", "headers"}


def _manifest_entry(raw: Any, *, root: Path, where: str) -> ManifestEntry:
    """One manifest entry, checked; raises :class:`ManifestError` starting with ``where``."""
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: an entry is an object with 'kind' and 'file', not {raw!r}")
    unknown = sorted(raw.keys() - _ENTRY_KEYS)
    if unknown:
        raise ManifestError(f"{where}: unknown keys {', '.join(map(repr, unknown))}")
    kind = raw.get("kind")
    if kind is None or ("file" not in raw and "responses" not in raw):
        raise ManifestError(f"{where}: needs 'kind' and 'file' (or 'responses')")
    if kind not in ("oai", "atom", "snapshot"):
        raise ManifestError(f"{where}: unknown kind {kind!r}")
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
    if "responses" in raw:
        if kind == "snapshot" or raw.keys() & {"file", "status", "headers"}:
            raise ManifestError(
                f"{where}: 'responses' lists an OAI or API request's answers, and replaces "
                f"the entry's own 'file', 'status' and 'headers'"
            )
        listed = raw["responses"]
        if not isinstance(listed, list) or not listed:
            raise ManifestError(
                f"{where}: 'responses' must be a non-empty list of responses, not {listed!r}"
            )
        responses = []
        for number, item in enumerate(listed, start=1):
            at = f"{where}, response {number}"
            if not isinstance(item, dict) or item.keys() - _RESPONSE_KEYS:
                raise ManifestError(
                    f"{at}: a response is an object with 'status', 'headers' and 'file', "
                    f"not {item!r}"
                )
            responses.append(_response(item, root=root, where=at, needs_file=False))
    else:
        responses = [_response(raw, root=root, where=where, needs_file=True)]
    return ManifestEntry(kind=kind, params=_normalised(params), responses=tuple(responses))


def _response(raw: dict, *, root: Path, where: str, needs_file: bool) -> RecordedResponse:
    """The ``file``, ``status`` and ``headers`` of ``raw``, checked."""
    file_name = raw.get("file")
    path = None
    if file_name is not None or needs_file:
        path = _recorded_file(file_name, root=root, where=where)
    status = raw.get("status", 200)
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        raise ManifestError(
            f"{where}: 'status' must be an HTTP status code (100 to 599), not {status!r}"
        )
    headers = raw.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ManifestError(
            f"{where}: 'headers' must be an object of header names and string values, "
            f"not {headers!r}"
        )
    return RecordedResponse(status=status, headers=tuple(headers.items()), path=path)


def _recorded_file(file_name: Any, *, root: Path, where: str) -> Path:
    """The absolute path of ``file_name``, a file inside ``root``."""
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
    return path


def _normalised(params: Mapping[str, Any]) -> dict[str, str]:
    """Request parameters as compared by the recorded transport: strings, empty ones dropped."""
    return {str(key): str(value) for key, value in params.items() if value not in (None, "")}


class RecordedTransport(RetryingTransport):
    """Answers requests from the files a recorded directory's manifest lists (no network).

    A request matches an entry when its parameters equal the entry's ``params`` (after
    normalisation: values as strings, empty values dropped); the URL's base is ignored, so the
    same sources run unchanged. Each attempt at a request gets the entry's next recorded
    response (the last one once they are used up), and goes through the very retry loop of
    :class:`~papers.sources.transports.HttpTransport` (:class:`RetryingTransport`): a recorded
    429/503 is retried, after its ``Retry-After`` or the backoff, with ``retries``,
    ``backoff_factor`` and ``retry_after_max`` defaulting to the same settings
    (``ARXIV_HTTP_RETRIES``, ``ARXIV_HTTP_BACKOFF_SECONDS``, ``ARXIV_RETRY_AFTER_MAX``).
    No request limiter: nothing reaches arXiv. ``sleep``: how waits are done (seconds).

    Raises :class:`ManifestError` at construction for a bad manifest, :class:`NotRecorded` from
    :meth:`get` for a request no entry matches, and :class:`HarvestError` as the HTTP
    transport does (a recorded status not in ``ok_statuses``, retries spent).
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        retries: int | None = None,
        backoff_factor: float | None = None,
        retry_after_max: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        super().__init__(
            retries=retries,
            backoff_factor=backoff_factor,
            retry_after_max=retry_after_max,
            sleep=sleep,
        )
        self.directory = Path(directory).resolve()
        self.entries = load_manifest(self.directory)
        self._responses = {
            tuple(sorted(entry.params.items())): entry
            for entry in self.entries
            if entry.kind != "snapshot"
        }
        # Attempts answered so far, per request.
        self._answered: dict[tuple[tuple[str, str], ...], int] = {}

    def attempt(self, url: str, params: Mapping[str, str], full_url: str) -> Attempt:
        """The next recorded response for ``params``; raises :class:`NotRecorded` when no entry
        matches (``url`` only appears in the message)."""
        key = tuple(sorted(_normalised(params).items()))
        entry = self._responses.get(key)
        if entry is None:
            raise NotRecorded(
                f"no recorded response for {full_url} in {self.directory / MANIFEST_NAME}"
            )
        number = self._answered.get(key, 0)
        self._answered[key] = number + 1
        response = entry.responses[min(number, len(entry.responses) - 1)]
        retry_after = None
        if response.status in RETRY_STATUSES and response.header("Retry-After"):
            retry_after = retry_after_seconds(response.header("Retry-After"))
        return Attempt(
            status=response.status,
            body=response.path.read_bytes() if response.path else b"",
            source=str(response.path or self.directory / MANIFEST_NAME),
            retry_after=retry_after,
        )


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
