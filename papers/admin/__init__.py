"""Admin for papers: arXiv records (``papers``), near-duplicates (``duplicates``) and harvest
runs (``harvest``)."""

from . import duplicates, harvest, papers  # noqa: F401
