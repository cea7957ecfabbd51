"""Where arXiv records come from: transports that answer requests, and sources that page over them.

A **transport** answers ``GET url?params`` with a :class:`~papers.sources.base.Fetched` body:
``transports.HttpTransport`` talks to arXiv (politely: ``transports.RequestLimiter``),
``recorded.RecordedTransport`` answers from files a ``manifest.json`` lists, so the demo and
the tests run the very same sources with no network.

A **source** turns requests into :class:`~papers.sources.base.Chunk` objects (parsed records
plus record-level errors, one chunk per response page or per run of snapshot lines). Each chunk
carries the ``position`` to resume from after it, so a harvest that stores a chunk together
with its position (``papers.harvest``) resumes exactly where it stopped. One module per source:
``oai.OaiPmhSource`` (OAI-PMH 2.0), ``atom.AtomApiSource`` (the arXiv API),
``snapshot.SnapshotSource`` (a Kaggle snapshot file).

:func:`sources_for` builds the sources for a harvest from plain JSON parameters (the
``recorded`` kind replays everything a manifest lists: ``recorded.recorded_sources``);
:func:`oai_sets` reads the OAI sets a harvest asks for.
"""

from .registry import oai_sets, sources_for

__all__ = ["oai_sets", "sources_for"]
