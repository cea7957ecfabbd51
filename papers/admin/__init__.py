"""Admin for papers: arXiv records (``papers``) and harvest runs (``harvest``)."""

from . import harvest, papers  # noqa: F401
