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

``authors_merged``: see below.
"""

from django.dispatch import Signal

papers_stored = Signal()
papers_live_changed = Signal()
papers_embedded = Signal()

# ``authors_merged``: sent inside the merge's transaction (``papers.author_services
# .authors_merge``), with ``source_ids`` (list of int pks of the authors merged away) and
# ``target_id`` (the survivor's pk). Receivers write in the same transaction (``follows``
# moves follows of the merged authors to the survivor); an error rolls the merge back.
authors_merged = Signal()
