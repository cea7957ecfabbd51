"""Admin for papers: arXiv records (``papers``), authors with their merges and splits
(``authors``), near-duplicates (``duplicates``) and harvest runs (``harvest``)."""

from . import authors, duplicates, harvest, papers  # noqa: F401
