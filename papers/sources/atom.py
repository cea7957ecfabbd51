"""The arXiv API source: :class:`AtomApiSource`, ``/api/query`` by ``id_list`` or ``search_query``,
paged with ``start``/``max_results`` (https://info.arxiv.org/help/api/user-manual.html)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings

from papers.identifiers import InvalidArxivId, api_identifier, parse_arxiv_id
from papers.parsers.atom import parse_atom_feed

from .base import Chunk, Gap, SourceError, Transport, identifiers_from, int_param

__all__ = [
    "AtomApiSource",
]

logger = logging.getLogger(__name__)


class AtomApiSource:
    """The arXiv API (``/api/query``): papers by ``id_list`` or by ``search_query``, paged.

    - ``id_list``: identifiers, any spelling ``papers.identifiers.parse_arxiv_id`` accepts
      (``arXiv:2104.12255v1``, an abs or pdf URL, the arXiv DOI), sent as canonical ids with
      the version kept where one was given (``2104.12255v1``), each once; raises
      :class:`~papers.identifiers.InvalidArxivId` (a ``ValueError``) naming the first that is
      no identifier. With ``verbatim``, sent exactly as given instead (a recorded request
      replays what was asked, even an id arXiv answers with an empty feed);
    - ``search_query``: arXiv's query syntax (``cat:cs.CL AND ti:agent``);
    - ``start``: 0-based offset of the first result; ``page_size``: results per request;
    - ``max_results``: results wanted in total (``None``: as many as the query matches);
    - ``sort_by`` / ``sort_order``: as the API takes them;
    - ``empty_page_retries``: how often a page that comes back empty in the middle of a result
      set is asked for again (default ``settings.ARXIV_API_EMPTY_PAGE_RETRIES``);
    - ``report_missing``: report ids of ``id_list`` the API did not return.

    :meth:`chunks` yields one :class:`Chunk` per response, with ``position``
    ``{"start": next offset, "promised": the first page's totalResults, "returned": [ids
    returned so far]}``, and stops when ``max_results`` are read or the ``totalResults`` the
    first page promised is reached. A page with no entries before that (a known arXiv API
    behaviour: an empty page that still reports the full total, or arXiv's empty feed with
    ``totalResults`` 0) is asked for again; still empty, it becomes a :class:`Gap` naming the
    query, the offset and the range: skipped when the page still reports results past its
    offset, else the result set ended early and the source stops there. The last chunk's
    ``gaps`` name each id of ``id_list`` that was asked for and not returned. Error entries
    never become records: they raise :class:`SourceError` (as does an HTTP 400 without one).
    Raises :class:`ParseError` for an unparseable feed and :class:`HarvestError` from the
    transport.
    """

    kind = "atom"

    def __init__(
        self,
        *,
        transport: Transport,
        base_url: str | None = None,
        id_list: Iterable[str] | str = (),
        search_query: str = "",
        start: int = 0,
        max_results: int | None = None,
        page_size: int = 100,
        sort_by: str = "relevance",
        sort_order: str = "descending",
        empty_page_retries: int | None = None,
        report_missing: bool = True,
        verbatim: bool = False,
    ):
        self.id_list = identifiers_from(id_list)
        if not verbatim:
            self.id_list = list(dict.fromkeys(api_identifier(text) for text in self.id_list))
        self.search_query = search_query or ""
        if not self.id_list and not self.search_query:
            raise ValueError("the arXiv API needs an id_list or a search_query")
        if start < 0 or page_size < 1 or (max_results is not None and max_results < 0):
            raise ValueError("start must be >= 0, page_size >= 1 and max_results >= 0")
        self.transport = transport
        self.base_url = base_url or settings.ARXIV_API_BASE_URL
        self.start = start
        self.max_results = max_results
        self.page_size = page_size
        self.sort_by = sort_by
        self.sort_order = sort_order
        self.empty_page_retries = (
            empty_page_retries
            if empty_page_retries is not None
            else settings.ARXIV_API_EMPTY_PAGE_RETRIES
        )
        self.report_missing = report_missing and bool(self.id_list)

    @classmethod
    def from_request(cls, params: Mapping[str, str], *, transport: Transport) -> AtomApiSource:
        """The source that sends exactly the API request ``params`` (``id_list``,
        ``search_query``, ``start``, ``max_results``, ``sortBy``, ``sortOrder``) and stops
        after that one page. A replay of one recorded response: missing ids are not reported.
        Raises ``ValueError`` naming the parameter for a ``start`` or ``max_results`` that is not
        a whole number >= 0."""
        size = int_param(params, "max_results", 10)
        return cls(
            transport=transport,
            id_list=params.get("id_list", ""),
            search_query=params.get("search_query", ""),
            start=int_param(params, "start", 0),
            max_results=size,
            page_size=size,
            sort_by=params.get("sortBy", "relevance"),
            sort_order=params.get("sortOrder", "descending"),
            report_missing=False,
            verbatim=True,
        )

    def chunks(self, position: Mapping[str, Any] | None = None) -> Iterator[Chunk]:
        """One chunk per API response, ``start`` advancing by the entries read, from the start
        or from a chunk's ``position``."""
        position = position or {}
        start = int(position.get("start", self.start))
        returned: set[str] = set(position.get("returned", ()))
        # totalResults of the first page: later pages are held to it, whatever they report.
        promised: int | None = position.get("promised")
        read = start - self.start
        empty_tries = 0
        while self.max_results is None or read < self.max_results:
            size = self.page_size
            if self.max_results is not None:
                size = min(size, self.max_results - read)
            params = {
                "search_query": self.search_query,
                "id_list": ",".join(self.id_list),
                "sortBy": self.sort_by,
                "sortOrder": self.sort_order,
                "start": str(start),
                "max_results": str(size),
            }
            # The API answers a bad query with HTTP 400 and an error entry worth reading.
            fetched = self.transport.get(self.base_url, params, ok_statuses=(200, 400))
            page = parse_atom_feed(fetched.body, source=fetched.source)
            if page.api_errors:
                raise SourceError(
                    "arXiv API error: " + "; ".join(page.api_errors), source=fetched.source
                )
            if fetched.status != 200:
                raise SourceError(
                    f"HTTP {fetched.status} without an error entry", source=fetched.source
                )
            entries = len(page.records) + len(page.errors)
            total = page.total_results
            if promised is None:
                promised = total
            chunk = Chunk(source=fetched.source, records=page.records, errors=page.errors)
            end = self._end(promised)
            ended_early = False
            if entries == 0 and end is not None and start < end:
                # Short of what the first page promised: arXiv sends empty pages mid-way, some
                # with the full totalResults, some as its empty feed with totalResults 0.
                if empty_tries < self.empty_page_retries:
                    empty_tries += 1
                    logger.warning(
                        "%s: no entries at start=%d of %d results (this page reports %s); "
                        "asking again (%d of %d)",
                        fetched.source,
                        start,
                        promised,
                        total,
                        empty_tries,
                        self.empty_page_retries,
                    )
                    continue
                if total is not None and start < total:
                    # The page still counts results past it: skip it, read the next one.
                    chunk.gaps = [
                        self._gap(
                            f"no entries at start={start} of {total} results after "
                            f"{empty_tries + 1} requests; page skipped",
                            source=fetched.source,
                            record=f"results {start} to {start + size - 1}",
                            offset=start,
                        )
                    ]
                    entries = size
                else:
                    # The result set itself says it ended: asking further pages is pointless.
                    chunk.gaps = [
                        self._gap(
                            f"result set ended early: no entries at start={start} after "
                            f"{empty_tries + 1} requests, and the page reports {total} results "
                            f"where the first page promised {promised}; results {start} to "
                            f"{end - 1} not harvested",
                            source=fetched.source,
                            record=f"results {start} to {end - 1}",
                            offset=start,
                        )
                    ]
                    ended_early = True
            empty_tries = 0
            returned.update(record.arxiv_id for record in page.records)
            read += entries
            start += entries
            done = (
                ended_early
                or entries == 0
                or (promised is not None and start >= promised)
                or (self.max_results is not None and read >= self.max_results)
            )
            if done:
                chunk.gaps.extend(self._missing(returned, fetched.source))
            else:
                chunk.position = {"start": start, "promised": promised}
                if self.report_missing:
                    chunk.position["returned"] = sorted(returned)
            yield chunk
            if done:
                return

    def _end(self, promised: int | None) -> int | None:
        """Offset just past the last result this source should read, ``None`` when unknown."""
        if promised is None:
            return None
        if self.max_results is None:
            return promised
        return min(promised, self.start + self.max_results)

    def _query(self) -> str:
        """The request as a person would name it: the search query or the id list."""
        if self.search_query:
            return f"search_query={self.search_query}"
        return "id_list=" + ",".join(self.id_list)

    def _gap(self, message: str, *, source: str, record: str, offset: int | None) -> Gap:
        return Gap(message, source=source, record=record, query=self._query(), offset=offset)

    def _missing(self, returned: set[str], source: str) -> list[Gap]:
        """One error per id of ``id_list`` that no returned record carries."""
        if not self.report_missing:
            return []
        missing = []
        for asked in self.id_list:
            try:
                canonical, _ = parse_arxiv_id(asked)
            except InvalidArxivId:
                canonical = asked
            if canonical not in returned:
                missing.append(
                    self._gap(
                        "asked for but not returned by the arXiv API",
                        source=source,
                        record=asked,
                        offset=None,
                    )
                )
        return missing
