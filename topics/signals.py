"""Signals ``topics`` sends (``topics`` knows nothing of follows).

``topics_merged``: sent after a merge commits, with ``source_id`` (the merged-away topic's pk)
and ``target_id`` (the topic that absorbed it).
"""

from django.dispatch import Signal

topics_merged = Signal()
