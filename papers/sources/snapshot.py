"""The snapshot source: :class:`SnapshotSource` streams a Kaggle snapshot file
(``arxiv-metadata-oai-snapshot.json``, plain or gzip) in chunks of records;
:class:`SnapshotTruncated` when the file ends early."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from papers.parsers.snapshot import iter_snapshot
from papers.records import ArxivRecord, ParseError

from .base import Chunk, SourceError

__all__ = [
    "SNAPSHOT_CHUNK_SIZE",
    "SnapshotSource",
    "SnapshotTruncated",
]

SNAPSHOT_CHUNK_SIZE = 1000


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
