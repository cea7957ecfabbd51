"""The sources of a harvest, built from the plain JSON parameters a task or command receives:
:func:`sources_for`, and :func:`oai_sets` for the OAI sets a harvest asks for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from .atom import AtomApiSource
from .base import KINDS, Source, identifiers_from, int_param
from .oai import OaiPmhSource
from .recorded import DEFAULT_RECORDED_DIR, recorded_sources
from .snapshot import SnapshotSource
from .transports import HttpTransport

__all__ = [
    "oai_sets",
    "sources_for",
]

_ALLOWED_PARAMS = {
    "recorded": {"directory"},
    "oai": {
        "metadata_prefix",
        "sets",
        "from",
        "until",
        "resumption_token",
        "identifiers",
        "base_url",
        "incremental",
    },
    "atom": {"id_list", "search_query", "start", "max_results", "page_size", "base_url"},
    "snapshot": {"path"},
}


def sources_for(kind: str, params: Mapping[str, Any]) -> list[Source]:
    """Build the sources of a harvest from plain JSON parameters (what the task receives).

    - ``recorded``: ``{"directory": path}`` (default ``papers/recorded/``);
    - ``oai``: ``{"metadata_prefix", "sets", "from", "until", "resumption_token",
      "identifiers", "base_url", "incremental"}``, all optional: one ``ListRecords`` source per
      set of ``sets`` (a list; default ``settings.ARXIV_OAI_SETS``; an empty list harvests
      the whole repository), or one source from ``resumption_token`` (one set at most), or one
      ``GetRecord`` source for ``identifiers`` (a list or ``"a,b"``); ``incremental`` is read
      by ``papers.harvest`` (which fills ``from``) and ignored here;
    - ``atom``: ``{"id_list": [..] or "a,b", "search_query", "start", "max_results",
      "page_size", "base_url"}``; ``max_results`` defaults to the number of ids, or 100 for a
      search;
    - ``snapshot``: ``{"path": file}``.

    OAI and API sources share one :class:`HttpTransport`. Raises ``ValueError`` naming what is
    wrong for an unknown kind or parameter or a malformed value, and :class:`ManifestError`
    for a bad recorded directory.
    """
    if kind not in _ALLOWED_PARAMS:
        raise ValueError(f"unknown harvest kind {kind!r}; expected one of {', '.join(KINDS)}")
    unknown = set(params) - _ALLOWED_PARAMS[kind]
    if unknown:
        raise ValueError(f"unknown {kind} parameters: {', '.join(sorted(unknown))}")
    if kind == "recorded":
        return recorded_sources(params.get("directory") or DEFAULT_RECORDED_DIR)
    if kind == "snapshot":
        if not params.get("path"):
            raise ValueError("a snapshot harvest needs a 'path'")
        return [SnapshotSource(params["path"])]
    if kind == "oai":
        return _oai_sources(params)
    id_list = identifiers_from(params.get("id_list") or ())
    # Unbounded searches would page through hundreds of thousands of results: default to 100.
    max_results = params.get("max_results")
    if max_results is None:
        max_results = len(id_list) if id_list else 100
    return [
        AtomApiSource(
            transport=HttpTransport(),
            base_url=params.get("base_url"),
            id_list=id_list,
            search_query=params.get("search_query") or "",
            start=int_param(params, "start", 0),
            max_results=int_param(params, "max_results", max_results),
            page_size=int_param(params, "page_size", 100),
        )
    ]


def oai_sets(params: Mapping[str, Any]) -> list[str]:
    """The OAI sets ``params`` ask for: its ``sets`` list, else ``settings.ARXIV_OAI_SETS``.
    Raises ``ValueError`` when ``sets`` is not a list of set names."""
    sets = params.get("sets")
    if sets is None:
        return list(settings.ARXIV_OAI_SETS)
    if not isinstance(sets, list) or not all(isinstance(s, str) and s.strip() for s in sets):
        raise ValueError(f"OAI 'sets' must be a list of set names such as ['cs'], not {sets!r}")
    return [s.strip() for s in sets]


def _oai_sources(params: Mapping[str, Any]) -> list[OaiPmhSource]:
    if not isinstance(params.get("incremental", False), bool):
        raise ValueError(f"OAI 'incremental' must be true or false, not {params['incremental']!r}")
    sets = oai_sets(params)
    transport = HttpTransport()
    common = {
        "transport": transport,
        "base_url": params.get("base_url"),
        "metadata_prefix": params.get("metadata_prefix") or "arXivRaw",
        "from_date": params.get("from"),
        "until_date": params.get("until"),
    }
    identifiers = identifiers_from(params.get("identifiers") or ())
    if identifiers:
        return [OaiPmhSource(identifiers=identifiers, **common)]
    if params.get("resumption_token"):
        if len(sets) > 1:
            raise ValueError("an OAI 'resumption_token' belongs to one list: give one set at most")
        return [
            OaiPmhSource(
                set_spec=sets[0] if sets else None,
                resumption_token=params["resumption_token"],
                **common,
            )
        ]
    return [OaiPmhSource(set_spec=set_spec, **common) for set_spec in sets or [None]]
