"""The nearest-neighbour index of paper vectors: one usearch file per model that the embed
worker keeps in step with PostgreSQL and the web processes memory-map.

PostgreSQL (``PaperEmbedding``) is the source of truth; the file under
``settings.EMBEDDING_INDEX_DIR`` is derived from it and can be rebuilt at any time
(``manage.py embed --rebuild-index``). Labels are paper ids; the metric is the inner product of
L2-normalised vectors, so ``1 - distance`` is the cosine similarity.

Writers (:class:`IndexWriter`, used by ``papers.embeddings.store.embed_papers``) add or replace
the vectors of a committed batch and save the file atomically (a temporary file, then
``os.replace``) while holding a lock: a PostgreSQL advisory lock (a file lock on SQLite), so two
workers never write over each other's additions. A writer keeps the index it last saved in
memory and loads the file again only when another writer has replaced it since; without a
file (or with a damaged one) it starts from every stored vector, not from nothing.

The file converges to the table without an operator. A batch whose vectors committed but
whose save was lost (the worker killed in between, a full disk) is found two ways:
``embed_papers`` asks :meth:`IndexWriter.lacking` which of its own up-to-date papers the file
lacks and adds their stored vectors (no encoding, no query when none), so the task's
redelivery repairs it; and :meth:`IndexWriter.reconcile` (beat, ``manage.py embed``) reads the
rows embedded since a watermark kept beside the file, adds or replaces the vectors that differ,
and removes papers now of another model or without a row.

Readers (:func:`nearest`) open the file with ``view=True``: memory-mapped, read-only, shared
through the page cache by every web process instead of copied into each. They look at the
file's identity (inode, size, mtime) at most every :data:`REOPEN_CHECK_SECONDS` and re-open it
when a writer has replaced it. Withdrawn papers stay in the file and are filtered out through
the database at query time (the search asks for more than ``k``), as are deleted ones until a
reconcile removes them.

Without a file (nothing embedded yet with this model, or a fresh checkout) :func:`nearest`
falls back to exact search with numpy over the vectors in PostgreSQL (cached in the process
until the rows change): what SQLite, a fresh checkout or a model without a file get. Figures
behind these choices: bench/README.md, "Vectors".
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, QuerySet
from django.utils import timezone
from usearch.index import Index

from papers.models import Paper, PaperEmbedding
from topicsite.lookups import Ids

from .vectors import current_model_id, load_vectors, sound_vectors, vector_from_bytes

logger = logging.getLogger(__name__)

# How often a web process looks at the file to see whether a writer replaced it.
REOPEN_CHECK_SECONDS = 1.0
# How the file stores vectors: half precision halves the memory of float32 at no measured
# loss of recall@10 (bench/README.md, "Vectors").
INDEX_DTYPE = "f16"
# HNSW graph degree (M), breadth when adding (efConstruction: usearch's default 128; faiss's
# 40 builds 3x faster but its graph falls apart as the corpus grows: recall@10 0.947 at
# 200,000 clustered vectors and 0.641 at 1M, against 0.998 at 200,000 with 128, whose better
# graph is also searched faster, 1.3 ms against 4.6) and when searching (ef 128: a wider
# search barely helps a good graph; bench/README.md, "Vectors").
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
# Rows read from PostgreSQL at a time when rebuilding or reconciling.
REBUILD_CHUNK = 10_000
# How far behind its start a reconcile sets the watermark: a row's ``embedded_at`` is the
# writing process's clock before its transaction commits, so a row committed just after the
# reconcile read the table can carry an earlier time. Each reconcile reads this window again;
# it covers a batch's transaction and clocks of two hosts that disagree by less.
RECONCILE_SLACK = timedelta(minutes=10)
# A stored float32 vector and the file's half-precision copy of it differ by rounding only
# (at most 2^-11 of a component, and components of a unit vector are below 1): more than this
# is another vector (a re-embedded text whose new vector missed the file).
SAME_VECTOR_TOLERANCE = 2e-3
# A half-precision copy of a unit vector has a squared length within about 1e-3 of 1.
_UNIT_NORM_TOLERANCE = 1e-2


_SAME_DATABASE_ENGINES = {"topicsite.postgresql": "django.db.backends.postgresql"}


def index_path(model: str) -> Path:
    """The index file of ``model`` under ``settings.EMBEDDING_INDEX_DIR``: a readable slug of
    the model id and a short hash of it and of the database the vectors come from (its engine,
    host, port and name), so that two databases sharing one index folder (a demo and a test
    database on one checkout) never read or overwrite each other's file."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[:80]
    database = dict(connection.settings_dict)
    # The same database whichever backend module reads it: files named under Django's own
    # PostgreSQL backend stay this database's under ours (topicsite.postgresql).
    database["ENGINE"] = _SAME_DATABASE_ENGINES.get(database.get("ENGINE"), database.get("ENGINE"))
    source = "\0".join(
        [model, *(str(database.get(key) or "") for key in ("ENGINE", "HOST", "PORT", "NAME"))]
    )
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:10]
    return Path(settings.EMBEDDING_INDEX_DIR) / f"{slug}-{digest}.usearch"


def _new_index(dimension: int) -> Index:
    return Index(
        ndim=dimension,
        metric="ip",
        dtype=INDEX_DTYPE,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        # EMBEDDING_INDEX_DIR unreachable (a file where the folder should be, no permission):
        # no usable file, so readers search exactly; a writer's save then names the problem.
        logger.warning(
            "vector index %s cannot be looked at (%s); treating it as absent", path, error
        )
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


@contextlib.contextmanager
def _write_lock(path: Path):
    """Held by one writer of ``path`` at a time, across processes and hosts sharing the
    database: a session-level PostgreSQL advisory lock (released by PostgreSQL if the process
    dies), or an exclusive file lock beside the index on other databases."""
    if connection.vendor == "postgresql":
        key = int.from_bytes(hashlib.sha256(str(path).encode()).digest()[:8], "big", signed=True)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [key])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class IndexWriter:
    """Keeps the index file of ``model`` (vectors of ``dimension`` floats) in step with
    PostgreSQL. One per process and model (:func:`index_writer`); tests may make more, as a
    second worker would be."""

    def __init__(self, model: str, dimension: int, path: Path | None = None):
        self.model = model
        self.dimension = dimension
        self.path = path or index_path(model)
        self._index: Index | None = None
        self._identity: tuple[int, int, int] | None = None

    def _current(self) -> Index:
        """The index as the file holds it now (called under the lock): the copy in memory
        when this writer saved the file last, else the file loaded again, else (no file) one
        built from the stored vectors."""
        identity = _file_identity(self.path)
        if self._index is not None and identity == self._identity:
            return self._index
        if identity is None:
            # As for a damaged file: a new file holding only the next batch would hide every
            # paper embedded before it (readers search the file once there is one).
            index = self._from_database()
        else:
            try:
                index = Index.restore(str(self.path), view=False)
            except (ValueError, RuntimeError, OSError) as error:
                # A damaged file: start again from the source of truth, not from nothing
                # (a file holding only the next batch would hide every other paper).
                logger.warning("vector index %s is unreadable (%s); rebuilding", self.path, error)
                index = self._from_database()
            if index is None or index.ndim != self.dimension:
                index = _new_index(self.dimension)
            index.expansion_add, index.expansion_search = EXPANSION_ADD, EXPANSION_SEARCH
        self._index, self._identity = index, identity
        return index

    def _save(self, index: Index) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(
            dir=self.path.parent, prefix=self.path.name, suffix=".tmp"
        )
        os.close(handle)
        try:
            index.save(temporary)
            os.chmod(temporary, 0o644)  # mkstemp's 0600 would lock out web processes of other users
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        self._identity = _file_identity(self.path)
        _forget_reader(self.path)

    def update(self, vectors: dict[int, np.ndarray], removed: Iterable[int] = ()) -> int:
        """Add or replace ``vectors`` (``{paper id: float32 array of shape (dimension,)}``),
        drop the ids in ``removed``, and save the file atomically, under the write lock.
        Returns the number of vectors in the file. Raises ValueError on a vector of another
        dimension (nothing is written)."""
        ids = np.fromiter(vectors.keys(), dtype=np.uint64, count=len(vectors))
        matrix = np.zeros((len(ids), self.dimension), dtype=np.float32)
        for row, vector in enumerate(vectors.values()):
            if vector.shape != (self.dimension,):
                raise ValueError(
                    f"vector of shape {vector.shape} for an index of {self.dimension} dimensions"
                )
            matrix[row] = vector
        gone = np.fromiter(removed, dtype=np.uint64)
        with _write_lock(self.path):
            index = self._current()
            stale = np.concatenate([ids, gone])
            if len(stale):
                present = stale[np.asarray(index.contains(stale), dtype=bool).reshape(-1)]
                if len(present):
                    index.remove(present)
            if len(ids):
                index.add(ids, matrix)
            self._save(index)
            return len(index)

    def rebuild(self) -> int:
        """Build the file again from every ``PaperEmbedding`` row of the model (PostgreSQL is
        the source of truth), read :data:`REBUILD_CHUNK` rows at a time, and replace the file
        atomically under the write lock; the watermark (:meth:`reconcile`) moves to the
        rebuild's start. Returns the number of vectors indexed."""
        with _write_lock(self.path):
            started = timezone.now()
            index = self._from_database()
            self._index = index
            self._save(index)
            self._watermark_save(started - RECONCILE_SLACK)
            return len(index)

    def lacking(self, paper_ids: Iterable[int]) -> list[int]:
        """The ids among ``paper_ids`` that the file holds no vector of (all of them without
        a file), in their order: what a caller whose vectors are stored already passes to
        :meth:`update` again (the run that stored them died, or its update failed, before the
        file was saved). Reads the file memory-mapped, as the web processes do, without the
        lock: a file another writer is replacing answers as before it, and an id found
        lacking is only added again. No query."""
        ids = np.fromiter(dict.fromkeys(paper_ids), dtype=np.uint64)
        if not len(ids):
            return []
        index = _open_index(self.path)
        if index is None or index.ndim != self.dimension:
            return [int(key) for key in ids]
        held = np.asarray(index.contains(ids), dtype=bool).reshape(-1)
        return [int(key) for key in ids[~held]]

    def reconcile(self) -> ReconcileSummary:
        """Bring the file in step with PostgreSQL without encoding anything, under the write
        lock, reading only what changed since the last reconcile.

        The file records how far it is known to agree with the table: a watermark beside it
        (``<file>.state.json``), a time such that every row of this model embedded at or
        before it is in the file with its vector. A reconcile reads the rows embedded after
        the watermark (every row when there is none: the first reconcile of a file), adds
        those of this model that the file lacks or holds another vector of, removes the
        papers whose row now holds another model's vector, then compares the file's size
        with the model's row count and, only when the file holds more, removes the keys of
        rows that are gone (deleted papers: their rows went with them). The file is saved
        when something changed; the watermark then moves to the reconcile's start less
        :data:`RECONCILE_SLACK` (never back). Killed in between, the old watermark stays,
        which only means reading more next time.

        Returns a :class:`ReconcileSummary`. Queries: the changed rows (in chunks of
        :data:`REBUILD_CHUNK`), one count, and the model's ids when the file holds more
        than the table. Raises what saving the file raises (OSError); the watermark then
        stays where it was.
        """
        with _write_lock(self.path):
            started = timezone.now()
            index = self._current()
            watermark = self._watermark()
            rows = PaperEmbedding.objects.all()
            if watermark is not None:
                rows = rows.filter(embedded_at__gt=watermark)
            rows = rows.order_by("paper_id").values_list("paper_id", "model", "dimension", "vector")
            checked = added = removed = 0
            chunk: list[tuple] = []
            for row in rows.iterator(chunk_size=REBUILD_CHUNK):
                chunk.append(row)
                if len(chunk) == REBUILD_CHUNK:
                    more, fewer = self._reconcile_rows(index, chunk)
                    checked, added, removed = checked + len(chunk), added + more, removed + fewer
                    chunk = []
            if chunk:
                more, fewer = self._reconcile_rows(index, chunk)
                checked, added, removed = checked + len(chunk), added + more, removed + fewer
            stored = PaperEmbedding.objects.filter(
                model=self.model, dimension=self.dimension
            ).count()
            if len(index) > stored:
                removed += self._remove_gone(index)
            # Without a file, _current() built the index from the table: save it too.
            if added or removed or _file_identity(self.path) is None:
                self._save(index)
            self._watermark_save(started - RECONCILE_SLACK, previous=watermark)
            return ReconcileSummary(
                checked=checked, added=added, removed=removed, vectors=len(index)
            )

    def _reconcile_rows(self, index: Index, rows: list[tuple]) -> tuple[int, int]:
        """Add or replace the vectors among ``rows`` (paper id, model, dimension, bytes) of
        this model that ``index`` lacks or holds another vector of; remove those of other
        models, and damaged ones (:func:`~papers.embeddings.vectors.sound_vectors`).
        Returns (added, removed)."""
        sound = sound_vectors(
            {
                paper_id: vector_from_bytes(data)
                for paper_id, model, dimension, data in rows
                if model == self.model and dimension == self.dimension
            },
            self.dimension,
        )
        ours = list(sound.items())
        others = np.array(
            [paper_id for paper_id, *_ in rows if paper_id not in sound], dtype=np.uint64
        )
        removed = 0
        if len(others):
            held = others[np.asarray(index.contains(others), dtype=bool).reshape(-1)]
            if len(held):
                index.remove(held)
                removed = len(held)
        if not ours:
            return 0, removed
        ids = np.array([paper_id for paper_id, _ in ours], dtype=np.uint64)
        matrix = np.vstack([vector for _, vector in ours])
        differ = ~_holds(index, ids, matrix)
        if differ.any():
            present = differ & np.asarray(index.contains(ids), dtype=bool).reshape(-1)
            if present.any():
                index.remove(ids[present])
            index.add(ids[differ], matrix[differ])
        return int(differ.sum()), removed

    def _remove_gone(self, index: Index) -> int:
        """Remove from ``index`` the keys with no row of this model (one query for the ids)."""
        stored = np.fromiter(
            PaperEmbedding.objects.filter(model=self.model, dimension=self.dimension)
            .values_list("paper_id", flat=True)
            .iterator(chunk_size=REBUILD_CHUNK),
            dtype=np.uint64,
        )
        keys = np.asarray(index.keys[0 : len(index)], dtype=np.uint64)
        gone = np.setdiff1d(keys, stored, assume_unique=True)
        if len(gone):
            index.remove(gone)
        return len(gone)

    def _watermark_path(self) -> Path:
        return self.path.with_suffix(".state.json")

    def _watermark(self) -> datetime | None:
        """The time up to which the file is known to hold every stored vector of the model,
        or None (no reconcile or rebuild recorded one, or the record is unreadable)."""
        try:
            state = json.loads(self._watermark_path().read_text())
            return datetime.fromisoformat(state["watermark"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            logger.warning(
                "vector index state %s is unreadable (%s); the next reconcile reads every row",
                self._watermark_path(),
                error,
            )
            return None

    def _watermark_save(self, watermark: datetime, previous: datetime | None = None) -> None:
        """Record ``watermark`` (never earlier than ``previous``) beside the file, atomically,
        after the file it describes was saved."""
        if previous is not None:
            watermark = max(watermark, previous)
        path = self._watermark_path()
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(handle, "w") as out:
                json.dump({"model": self.model, "watermark": watermark.isoformat()}, out)
            os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise

    def _from_database(self) -> Index:
        """A new index holding every stored vector of the model, damaged ones left out
        (:func:`~papers.embeddings.vectors.sound_vectors`; called under the lock)."""
        index = _new_index(self.dimension)
        rows = (
            PaperEmbedding.objects.filter(model=self.model, dimension=self.dimension)
            .order_by("paper_id")
            .values_list("paper_id", "vector")
        )
        chunk: dict[int, np.ndarray] = {}

        def add() -> None:
            vectors = sound_vectors(chunk, self.dimension)
            if vectors:
                ids = np.fromiter(vectors, dtype=np.uint64, count=len(vectors))
                index.add(ids, np.vstack(list(vectors.values())))

        for paper_id, data in rows.iterator(chunk_size=REBUILD_CHUNK):
            chunk[paper_id] = vector_from_bytes(data)
            if len(chunk) == REBUILD_CHUNK:
                add()
                chunk = {}
        if chunk:
            add()
        return index


def _holds(index: Index, ids: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """For each of ``ids`` (uint64), whether ``index`` holds the vector in the same row of
    ``matrix`` (float32, shape (len(ids), dimension)), up to half-precision rounding."""
    held = np.asarray(index.contains(ids), dtype=bool).reshape(-1)
    same = np.zeros(len(ids), dtype=bool)
    if held.any():
        stored = np.vstack(index.get(ids[held], dtype=np.float32)).reshape(-1, matrix.shape[1])
        same[held] = np.abs(stored - matrix[held]).max(axis=1) <= SAME_VECTOR_TOLERANCE
    return same


@dataclass(frozen=True)
class ReconcileSummary:
    """What :meth:`IndexWriter.reconcile` did: rows ``checked`` (embedded since the
    watermark), vectors ``added`` (lacking or different in the file), keys ``removed``
    (another model's vector now, or no row), and the ``vectors`` the file holds."""

    checked: int
    added: int
    removed: int
    vectors: int


_writers: dict[tuple[str, int, Path], IndexWriter] = {}
_writers_lock = threading.Lock()


def index_writer(model: str, dimension: int) -> IndexWriter:
    """This process's writer of the index file of ``model`` (made on first use)."""
    path = index_path(model)
    with _writers_lock:
        return _writers.setdefault((model, dimension, path), IndexWriter(model, dimension, path))


@dataclass
class _Reader:
    index: Index
    identity: tuple[int, int, int]
    checked: float


_readers: dict[Path, _Reader] = {}
_readers_lock = threading.Lock()


def _forget_reader(path: Path) -> None:
    with _readers_lock:
        _readers.pop(path, None)


def _open_index(path: Path) -> Index | None:
    """The memory-mapped index at ``path``, re-opened when the file was replaced (looked at
    no more often than every REOPEN_CHECK_SECONDS); None when there is no file."""
    now = time.monotonic()
    with _readers_lock:
        reader = _readers.get(path)
        if reader is not None and now - reader.checked < REOPEN_CHECK_SECONDS:
            return reader.index
        identity = _file_identity(path)
        if identity is None:
            _readers.pop(path, None)
            return None
        if reader is not None and reader.identity == identity:
            reader.checked = now
            return reader.index
        try:
            index = Index.restore(str(path), view=True)
        except (ValueError, RuntimeError, OSError) as error:
            index = None
            logger.warning(
                "vector index %s is unreadable (%s); searching exactly until it is rebuilt "
                "(manage.py embed --rebuild-index)",
                path,
                error,
            )
        if index is None or len(index) == 0:
            # No usable file: exact search over the stored vectors answers instead (an empty
            # file, rebuilt before any paper had a vector, would otherwise answer nothing).
            _readers.pop(path, None)
            return None
        index.expansion_search = EXPANSION_SEARCH  # not stored in the file
        _readers[path] = _Reader(index, identity, now)
        return index


def stored_matrix(
    paper_ids: Iterable[int], *, model: str, dimension: int
) -> tuple[list[int], np.ndarray]:
    """``(ids, matrix)``: the papers of ``paper_ids`` that have a sound vector of ``model``
    (``dimension`` finite values), in the order given, and their vectors as a C-contiguous
    float32 matrix of shape ``(len(ids), dimension)``, row ``i`` the vector of ``ids[i]``.

    PostgreSQL says which papers have a vector of ``model`` (one query of their ids: a paper
    whose row went, or holds another model's vector, is left out whatever the file holds).
    The vectors come from the index file of ``model`` where it holds them (memory-mapped:
    3,000 in about 5 ms against 20 ms from PostgreSQL at 1M papers), from PostgreSQL
    (:func:`~papers.embeddings.vectors.load_vectors`, one query more) for the rest, for a
    file's vector that is not of unit length (a damaged file) and for all of them without a
    usable file. The file's copies are half precision (each component within 2^-11 of the
    stored one, :data:`SAME_VECTOR_TOLERANCE`) and can lag a re-embedded paper until the
    next reconcile: for ranking many papers, not for decisions that must repeat exactly
    (tagging reads PostgreSQL). Duplicate ids are read once, at their first place. Raises
    ``TypeError`` or ``ValueError`` for an id that is no 64-bit integer
    (:class:`~topicsite.lookups.Ids`), before any query."""
    checked = Ids(paper_ids)
    checked.ids = ids = list(dict.fromkeys(checked.ids))
    if ids:
        stored = set(
            PaperEmbedding.objects.filter(
                paper_id__any=checked, model=model, dimension=dimension
            ).values_list("paper_id", flat=True)
        )
        ids = [pk for pk in ids if pk in stored]
    matrix = np.zeros((len(ids), dimension), dtype=np.float32)
    found = np.zeros(len(ids), dtype=bool)
    index = _open_index(index_path(model)) if ids else None
    if index is not None and index.ndim == dimension:
        keys = np.asarray(ids, dtype=np.uint64)  # paper keys: positive
        found = np.asarray(index.contains(keys), dtype=bool)
        if found.any():
            # One concatenation of the rows (np.vstack makes each a 2-D array first: 4x slower).
            rows = index.get(keys[found], dtype=np.float32)
            matrix[found] = np.concatenate(rows).reshape(len(rows), dimension)
            # Stored vectors are of unit length: one that is not (a file damaged in place, a
            # NaN) is read from PostgreSQL instead.
            norms = np.einsum("ij,ij->i", matrix, matrix)
            found &= np.abs(norms - 1.0) <= _UNIT_NORM_TOLERANCE
    if not found.all():
        missing = np.flatnonzero(~found).tolist()
        vectors = load_vectors([ids[row] for row in missing], model=model)
        for row in missing:
            vector = vectors.get(ids[row])
            if vector is not None and vector.shape == (dimension,):
                matrix[row] = vector
                found[row] = True
    found &= np.isfinite(matrix).all(axis=1)
    if found.all():
        return ids, matrix
    return [pk for pk, ok in zip(ids, found.tolist(), strict=True) if ok], np.ascontiguousarray(
        matrix[found]
    )


_exact: dict[str, tuple[tuple, np.ndarray, np.ndarray]] = {}


def _exact_candidates(vector: np.ndarray, count: int, model: str) -> list[tuple[int, float]]:
    """Exact search over every stored vector of ``model`` (no index file) that the query can
    be compared with, damaged ones left out (:func:`~papers.embeddings.vectors.sound_vectors`):
    the matrix is cached in the process and read again when the rows' count or latest time
    changes."""
    state = PaperEmbedding.objects.filter(model=model).aggregate(
        n=Count("pk"), t=Max("embedded_at")
    )
    signature = (state["n"], state["t"], len(vector))
    cached = _exact.get(model)
    if cached is None or cached[0] != signature:
        rows = sound_vectors(
            {
                paper_id: vector_from_bytes(data)
                for paper_id, data in PaperEmbedding.objects.filter(model=model).values_list(
                    "paper_id", "vector"
                )
            },
            len(vector),
        )
        ids = np.fromiter(rows, dtype=np.int64, count=len(rows))
        matrix = (
            np.vstack(list(rows.values())) if rows else np.zeros((0, len(vector)), dtype=np.float32)
        )
        cached = _exact[model] = (signature, ids, matrix)
    _, ids, matrix = cached
    if not len(ids) or matrix.shape[1] != len(vector):
        return []
    scores = matrix @ vector
    count = min(count, len(ids))
    top = np.argpartition(-scores, count - 1)[:count]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(ids[i]), float(scores[i])) for i in top]


def _index_candidates(index: Index, vector: np.ndarray, count: int) -> list[tuple[int, float]]:
    matches = index.search(vector, min(count, len(index)))
    return [
        (int(key), 1.0 - float(distance))
        for key, distance in zip(matches.keys, matches.distances, strict=True)
    ]


def nearest(
    vector: np.ndarray, k: int, *, exclude: Iterable[int] = (), model: str | None = None
) -> list[tuple[int, float]]:
    """The ``k`` live papers (neither withdrawn nor deleted) whose vectors of ``model`` (default:
    the current model) are nearest to ``vector`` (float32, shape (dimension,), L2-normalised):
    ``[(paper id, cosine similarity in [-1, 1])]``, best first, without the ids in ``exclude``.
    Fewer when fewer exist. Queries: one for liveness per round (more rounds only when many
    candidates are not live), plus two without an index file.

    Raises ValueError when ``k`` < 1 or ``vector`` is not one-dimensional.
    """

    def live_ids(ids):
        live = Paper.objects.live().filter(pk__any=Ids(ids))
        return {pk: pk for pk in live.values_list("pk", flat=True)}

    return _nearest(vector, k, exclude, model, live_ids)


def nearest_papers(
    vector: np.ndarray,
    k: int,
    *,
    exclude: Iterable[int] = (),
    model: str | None = None,
    papers: QuerySet[Paper] | None = None,
) -> list[tuple[Paper, float]]:
    """As :func:`nearest`, with the papers themselves: ``[(Paper, cosine similarity)]``, best
    first, each loaded from ``papers`` (default ``Paper.objects.all()``; pass one with the
    ``select_related`` the caller shows). Loading the papers is the liveness check, so this
    costs the queries of :func:`nearest` and no more. Raises ValueError as it does."""
    papers = Paper.objects.all() if papers is None else papers
    return _nearest(vector, k, exclude, model, lambda ids: papers.live().in_bulk(ids))


def _nearest(vector, k, exclude, model, fetch) -> list:
    """The ``k`` best of the index's candidates that ``fetch`` (ids -> ``{id: item}`` of the
    live ones, one query) returns, as ``[(item, score)]``; asks the index for more while too
    many candidates are not live."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    vector = np.ascontiguousarray(vector, dtype=np.float32)
    if vector.ndim != 1:
        raise ValueError(f"a query vector is one-dimensional, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        return []  # a damaged stored vector (a paper's own) is near nothing
    model = model or current_model_id()
    excluded = set(exclude)
    index = _open_index(index_path(model))
    if index is not None and index.ndim != len(vector):
        index = None
    total = len(index) if index is not None else None
    count = k + len(excluded) + max(10, k)
    while True:
        if index is not None:
            candidates = _index_candidates(index, vector, count)
        else:
            candidates = _exact_candidates(vector, count, model)
        candidates = [(pid, score) for pid, score in candidates if pid not in excluded]
        live = fetch([pid for pid, _ in candidates])
        # A NaN score (a damaged vector in the file) ranks nothing, and JSON cannot carry it.
        found = [
            (live[pid], score) for pid, score in candidates if pid in live and math.isfinite(score)
        ][:k]
        exhausted = total is not None and count >= total
        if len(found) == k or exhausted or len(candidates) + len(excluded) < count:
            return found
        count *= 4
