"""Admin for papers: arXiv records (``papers``) and harvest runs (``harvest``)."""

from . import papers  # noqa: F401
