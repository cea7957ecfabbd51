"""SnapshotSource: chunks of lines, resuming after a position, and a truncated gzip file."""

from __future__ import annotations

import pytest

from papers.sources.snapshot import SnapshotSource, SnapshotTruncated

from .conftest import (
    SNAPSHOT_HEAD,
)


def test_snapshot_source_chunks_lines_and_resumes_after_a_position():
    chunks = list(SnapshotSource(SNAPSHOT_HEAD, chunk_size=64).chunks())

    assert [len(chunk.records) for chunk in chunks] == [64, 64, 64, 8]
    assert chunks[0].records[0].arxiv_id == "0704.0001"
    assert [chunk.position for chunk in chunks] == [
        {"chunks": 1},
        {"chunks": 2},
        {"chunks": 3},
        None,
    ]

    resumed = list(SnapshotSource(SNAPSHOT_HEAD, chunk_size=64).chunks({"chunks": 2}))

    assert [chunk.records for chunk in resumed] == [chunk.records for chunk in chunks[2:]]


def test_truncated_gzip_snapshot_keeps_what_was_read_and_names_the_problem(tmp_path):
    import gzip

    whole = gzip.compress(SNAPSHOT_HEAD.read_bytes())
    truncated = tmp_path / "head.jsonl.gz"
    truncated.write_bytes(whole[: len(whole) * 2 // 3])

    chunks = []
    with pytest.raises(SnapshotTruncated) as raised:
        for chunk in SnapshotSource(truncated, chunk_size=64).chunks():
            chunks.append(chunk)

    read = [record for chunk in chunks for record in chunk.records]
    assert 64 < len(read) < 200
    assert [record.arxiv_id for record in read] == [
        f"0704.{n:04d}" for n in range(1, len(read) + 1)
    ]
    assert not [error for chunk in chunks for error in chunk.errors]
    assert "file ends early or is corrupt" in str(raised.value)
    assert f"after record {len(read)}" in str(raised.value)
    assert str(truncated) in str(raised.value)
    # The partial last chunk is not counted as read: a resume starts at it again.
    assert chunks[-1].position == {"chunks": len(chunks) - 1}
