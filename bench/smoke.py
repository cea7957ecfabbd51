"""What the benchmarks share at ``--smoke`` size: the name of each one's own database.

``--smoke`` runs a benchmark at a tiny size (seconds, not minutes) through every code path it
measures, so that ``.ci/run`` catches a schema or API change that would break it. A smoke run
never touches the database ``DATABASE_URL`` names, nor the full-size benchmark databases: its
database is named after ``DATABASE_URL``'s with ``_smoke_<purpose>`` appended, on the same
server (``topicsite_ci`` gives ``topicsite_ci_smoke_corpus``), so two checkouts running CI on
one server do not share one; without a PostgreSQL ``DATABASE_URL`` it is the benchmark's own
default name with ``_smoke`` appended.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit


def smoke_database_url(default_url: str, purpose: str) -> str:
    """The PostgreSQL URL of the ``purpose`` smoke database (see the module docstring).

    ``default_url`` is the benchmark's full-size default (``postgres://…/name``); ``purpose``
    a short word (``corpus``, ``api``): benchmarks that share data use the same one.
    """
    configured = os.environ.get("DATABASE_URL", "")
    if configured.startswith(("postgres://", "postgresql://")):
        parts = urlsplit(configured)
        name = parts.path.lstrip("/")
        return urlunsplit(parts._replace(path=f"/{name}_smoke_{purpose}"))
    parts = urlsplit(default_url)
    return urlunsplit(parts._replace(path=f"{parts.path}_smoke"))
