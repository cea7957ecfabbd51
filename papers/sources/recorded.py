"""Recorded replay: :class:`RecordedTransport` answers requests from files on disk that a
``manifest.json`` lists, so the demo and the tests run the very same sources with no network;
:func:`recorded_sources` replays everything a manifest lists.

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

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from .atom import AtomApiSource
from .base import Fetched, HarvestError, Source
from .oai import OaiPmhSource
from .snapshot import SnapshotSource

__all__ = [
    "DEFAULT_RECORDED_DIR",
    "MANIFEST_NAME",
    "ManifestEntry",
    "ManifestError",
    "NotRecorded",
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
