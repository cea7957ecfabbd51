"""The OAI-PMH source: :class:`OaiPmhSource`, ``ListRecords`` of a set following resumption tokens,
or ``GetRecord`` for a list of identifiers (http://www.openarchives.org/OAI/openarchivesprotocol.html)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings

from papers.identifiers import oai_identifier, parse_arxiv_id
from papers.parsers.oai import parse_oai_page
from papers.records import ParseError

from .base import Chunk, SourceError, Transport, identifiers_from

__all__ = [
    "OAI_MAX_RESTARTS",
    "OaiPmhSource",
]

logger = logging.getLogger(__name__)

# A list restarted this many times after badResumptionToken is not going to complete.
OAI_MAX_RESTARTS = 3


class OaiPmhSource:
    """OAI-PMH 2.0 harvesting from arXiv: ``ListRecords`` of one set page after page, or
    ``GetRecord`` for each of a list of identifiers.

    - ``metadata_prefix``: ``arXivRaw`` (default, has every version), ``arXiv`` or ``oai_dc``;
    - ``set_spec``: an arXiv set (``cs``, ``physics:hep-th``); ``from_date``/``until_date``:
      datestamp bounds (``datetime.date`` or ``YYYY-MM-DD``), record-modification dates;
    - ``resumption_token``: start from this token instead (the other arguments are then not
      sent, as the protocol requires);
    - ``identifiers``: fetch these records one by one with ``GetRecord``, instead of a list:
      any spelling ``papers.identifiers.parse_arxiv_id`` accepts (``2409.01234v2``,
      ``arXiv:2409.01234``, an abs URL, ``oai:arXiv.org:2409.01234``), each paper once, asked
      for by its bare id (OAI has no versions: ``oai:arXiv.org:2409.01234v2`` does not
      exist); raises :class:`~papers.identifiers.InvalidArxivId` (a ``ValueError``) naming
      the first that is no identifier;
    - ``max_pages``: stop after this many pages (``None``: follow every token).

    :meth:`chunks` yields one :class:`Chunk` per page, with ``position``
    ``{"resumption_token": token, "restarts": n}`` (``{"next": i}`` for identifiers). The
    protocol's errors:

    - ``noRecordsMatch``: one empty chunk, the list is done (nothing in that range);
    - ``badResumptionToken`` (tokens expire): the list is asked for again from its ``from``
      datestamp, at most ``OAI_MAX_RESTARTS`` times; records already stored come back and are
      stored unchanged. Not from the newest datestamp seen: arXiv lists records in identifier
      order, not datestamp order (a real page goes 2008-01-25, 2008-11-26, ... 2008-01-28), so
      a later ``from`` would skip records of the list not yet delivered. A source started from
      a bare token does not know its list and raises :class:`SourceError` instead;
    - ``idDoesNotExist`` for ``GetRecord``: a chunk whose ``gaps`` name that identifier; the
      other identifiers are still fetched;
    - any other: :class:`SourceError`.

    Raises :class:`ParseError` for a page that is not a parseable OAI-PMH response and
    :class:`HarvestError` from the transport.
    """

    kind = "oai"

    def __init__(
        self,
        *,
        transport: Transport,
        base_url: str | None = None,
        metadata_prefix: str = "arXivRaw",
        set_spec: str | None = None,
        from_date: dt.date | str | None = None,
        until_date: dt.date | str | None = None,
        resumption_token: str | None = None,
        identifiers: Iterable[str] | str = (),
        max_pages: int | None = None,
    ):
        self.transport = transport
        self.base_url = base_url or settings.ARXIV_OAI_BASE_URL
        self.metadata_prefix = metadata_prefix
        self.set_spec = set_spec or None
        self.from_date = _iso_date(from_date, "from")
        self.until_date = _iso_date(until_date, "until")
        self.resumption_token = resumption_token or None
        # Canonical ids, each once: what chunk gaps name and what _get_record_params sends.
        self.identifiers = list(
            dict.fromkeys(parse_arxiv_id(text)[0] for text in identifiers_from(identifiers))
        )
        self.max_pages = max_pages

    @classmethod
    def from_request(
        cls, params: Mapping[str, str], *, transport: Transport, max_pages: int | None = None
    ) -> OaiPmhSource:
        """The source that sends exactly the OAI request ``params`` (``verb``, ``metadataPrefix``,
        ``set``, ``from``, ``until``, ``resumptionToken``, ``identifier``) as its first request.
        Raises ``ValueError`` for a verb other than ListRecords/GetRecord."""
        verb = params.get("verb", "ListRecords")
        if verb not in ("ListRecords", "GetRecord"):
            raise ValueError(f"cannot harvest with OAI verb {verb!r}")
        return cls(
            transport=transport,
            metadata_prefix=params.get("metadataPrefix", "arXivRaw"),
            set_spec=params.get("set"),
            from_date=params.get("from"),
            until_date=params.get("until"),
            resumption_token=params.get("resumptionToken"),
            identifiers=[params.get("identifier", "")] if verb == "GetRecord" else (),
            max_pages=max_pages,
        )

    def first_params(self) -> dict[str, str]:
        """Query parameters of the first request."""
        if self.identifiers:
            return self._get_record_params(self.identifiers[0])
        if self.resumption_token:
            return {"verb": "ListRecords", "resumptionToken": self.resumption_token}
        return self._list_params()

    def _list_params(self) -> dict[str, str]:
        params = {"verb": "ListRecords", "metadataPrefix": self.metadata_prefix}
        for name, value in (
            ("set", self.set_spec),
            ("from", self.from_date),
            ("until", self.until_date),
        ):
            if value:
                params[name] = value
        return params

    def _get_record_params(self, identifier: str) -> dict[str, str]:
        return {
            "verb": "GetRecord",
            "identifier": oai_identifier(identifier),
            "metadataPrefix": self.metadata_prefix,
        }

    def chunks(self, position: Mapping[str, Any] | None = None) -> Iterator[Chunk]:
        """One chunk per OAI page, following resumption tokens, from the start or from a
        chunk's ``position`` (errors: see the class)."""
        if self.identifiers:
            yield from self._get_records(int((position or {}).get("next", 0)))
            return
        restarts = int((position or {}).get("restarts", 0))
        if position and position.get("resumption_token"):
            params = {"verb": "ListRecords", "resumptionToken": str(position["resumption_token"])}
        else:
            params = self.first_params()
        pages = 0
        while True:
            fetched = self.transport.get(self.base_url, params)
            page = parse_oai_page(fetched.body, source=fetched.source)
            pages += 1
            if page.oai_error is not None:
                code = page.oai_error.code
                if code == "noRecordsMatch":
                    # The protocol's way of saying "nothing in that range": not a failure.
                    yield Chunk(source=fetched.source)
                    return
                if (
                    code == "badResumptionToken"
                    and "resumptionToken" in params
                    and not self.resumption_token
                    and restarts < OAI_MAX_RESTARTS
                ):
                    restarts += 1
                    params = self._list_params()
                    logger.warning(
                        "%s: badResumptionToken (%s); asking for the list again from %s "
                        "(restart %d of at most %d)",
                        fetched.source,
                        page.oai_error.message,
                        self.from_date or "its beginning",
                        restarts,
                        OAI_MAX_RESTARTS,
                    )
                    continue
                raise SourceError(
                    f"OAI-PMH error {code}: {page.oai_error.message}", source=fetched.source
                )
            token = page.resumption_token if page.verb == "ListRecords" else None
            if token and token == params.get("resumptionToken"):
                # Following it would fetch this page for ever (a broken proxy or cache can do it).
                raise SourceError(
                    f"the repository answered resumption token {token!r} with the same token "
                    "again; stopping instead of looping",
                    source=fetched.source,
                )
            more = bool(token) and (self.max_pages is None or pages < self.max_pages)
            yield Chunk(
                source=fetched.source,
                records=page.records,
                errors=page.errors,
                deleted=page.deleted,
                resumption_token=token,
                position={"resumption_token": token, "restarts": restarts} if more else None,
            )
            if not more:
                return
            params = {"verb": "ListRecords", "resumptionToken": token}

    def _get_records(self, first: int) -> Iterator[Chunk]:
        for index in range(first, len(self.identifiers)):
            identifier = self.identifiers[index]
            fetched = self.transport.get(self.base_url, self._get_record_params(identifier))
            page = parse_oai_page(fetched.body, source=fetched.source)
            position = {"next": index + 1} if index + 1 < len(self.identifiers) else None
            if page.oai_error is not None:
                if page.oai_error.code != "idDoesNotExist":
                    raise SourceError(
                        f"OAI-PMH error {page.oai_error.code}: {page.oai_error.message}",
                        source=fetched.source,
                    )
                error = ParseError(
                    f"OAI-PMH idDoesNotExist: {page.oai_error.message}",
                    source=fetched.source,
                    record=identifier,
                )
                yield Chunk(source=fetched.source, gaps=[error], position=position)
                continue
            yield Chunk(
                source=fetched.source,
                records=page.records,
                errors=page.errors,
                deleted=page.deleted,
                position=position,
            )


def _iso_date(value: dt.date | str | None, name: str) -> str | None:
    """``YYYY-MM-DD`` for an OAI date bound; raises ``ValueError`` naming the bound otherwise."""
    if value in (None, ""):
        return None
    if isinstance(value, dt.date):
        return value.isoformat()
    try:
        return dt.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ValueError(f"OAI '{name}' must be a date YYYY-MM-DD, not {value!r}") from None
