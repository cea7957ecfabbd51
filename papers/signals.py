"""Signals ``papers`` sends; other apps connect to them (``papers`` knows nothing of topics).

``papers_stored``: sent once per committed ingestion batch, after the transaction commits, with
``paper_ids`` (list of int primary keys of papers created or changed in that batch).
"""

from django.dispatch import Signal

papers_stored = Signal()
