"""Admin for curators, one module per model family: the topic tree (``topics``), assignments
and the review queue (``assignments``), classifier versions (``classifier``), emerging clusters
(``emerging``) and the paper page of ``papers.admin`` extended with the paper's assignments
(``papers``). Shared pieces: list ``filters``, the ``tree`` order and choice field, ``history``
tables and action pages (``actions``).

List pages never count or scan a whole big table: counts per topic are correlated subqueries on
the (topic, state) index for the rows shown only.
"""

from . import assignments, classifier, emerging, papers, topics  # noqa: F401
