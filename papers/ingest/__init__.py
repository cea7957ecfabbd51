"""Ingestion of arXiv records as papers: checks, merge, the batched writes and the bulk backfill.

- ``checks``: a record validated and turned into a paper state (or rejected, named);
- ``merge``: a stored paper state and a new report merged into the state to store;
- ``write``: :func:`papers_upsert`, batches written with bulk queries (the public entry);
- ``backfill``: ``snapshot_import``, a Kaggle snapshot at bulk speed, with ``postgres``'s
  ``COPY`` writer on PostgreSQL.
"""

from .write import IngestResult, papers_upsert

__all__ = ["IngestResult", "papers_upsert"]
