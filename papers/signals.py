"""Signals ``papers`` sends; other apps connect to them (``papers`` knows nothing of topics).

``papers_stored``: sent once per committed ingestion batch, after the transaction commits, with
``paper_ids`` (list of int primary keys of papers created or changed in that batch).

``papers_live_changed``: sent after the transaction commits, with ``paper_ids`` (sorted list of
int primary keys) of papers that started or stopped counting (``papers.querysets.LIVE``):
withdrawn or no longer, marked deleted. What is counted about them should be counted again.

``papers_embedded``: sent after the transaction that wrote their vectors commits, with
``paper_ids`` (list of int primary keys) of papers that got a new or changed vector
(``PaperEmbedding``; ``papers.embeddings.store.embed_papers``). Whatever reads vectors (tagging
by meaning) should read them again; the nearest-neighbour index already holds them.
"""

from django.dispatch import Signal

papers_stored = Signal()
papers_live_changed = Signal()
papers_embedded = Signal()
