"""arXiv identifiers: parse any spelling into the canonical id and version (the one parser every
entry point uses: commands, sources, the paper page, the API); build abs URLs and the ids sent
to OAI-PMH and the API.

The identifier scheme is documented at https://info.arxiv.org/help/arxiv_identifier.html:

- new style (since April 2007): ``YYMM.NNNN`` up to ``1412``, ``YYMM.NNNNN`` from ``1501`` on;
- old style (1991 to March 2007): ``archive/YYMMNNN``, sometimes written with the subject class
  (``math.GT/0309136``), which is not part of the identifier;
- either may carry a version suffix ``vN`` (N >= 1).

arXiv DOIs (``10.48550/arXiv.<id>``, registered with DataCite since 2022) are described at
https://info.arxiv.org/help/doi.html.

Plain Python, no Django: parsers and the ingestion service share it.
"""

from __future__ import annotations

import re

from papers.taxonomy import UnknownCategory, get_category

__all__ = [
    "InvalidArxivId",
    "api_identifier",
    "arxiv_abs_url",
    "oai_identifier",
    "parse_arxiv_id",
]

ABS_URL_BASE = "https://arxiv.org/abs/"
OAI_PREFIX = "oai:arXiv.org:"

# Archives that issued old-style identifiers (every archive that opened before the new scheme
# began in April 2007, from arXiv's taxonomy definitions). A typo such as ``hepth/9901001`` must
# not pass as an identifier.
OLD_STYLE_ARCHIVES = frozenset(
    {
        "acc-phys",
        "adap-org",
        "alg-geom",
        "ao-sci",
        "astro-ph",
        "atom-ph",
        "bayes-an",
        "chao-dyn",
        "chem-ph",
        "cmp-lg",
        "comp-gas",
        "cond-mat",
        "cs",
        "dg-ga",
        "funct-an",
        "gr-qc",
        "hep-ex",
        "hep-lat",
        "hep-ph",
        "hep-th",
        "math",
        "math-ph",
        "mtrl-th",
        "nlin",
        "nucl-ex",
        "nucl-th",
        "patt-sol",
        "physics",
        "plasm-ph",
        "q-alg",
        "q-bio",
        "quant-ph",
        "solv-int",
        "supr-con",
        "test",
    }
)

# [0-9], not \d: \d also matches Arabic-Indic or fullwidth digits, which would make a second
# paper for an id that arXiv writes in ASCII.
_NEW_STYLE = re.compile(r"(?P<yymm>[0-9]{4})\.(?P<number>[0-9]{4,5})(?:v(?P<version>[0-9]+))?")
_OLD_STYLE = re.compile(
    r"(?P<archive>[a-z]+(?:-[a-z]+)?)(?:\.(?P<subject>[A-Za-z][A-Za-z-]*))?"
    r"/(?P<yymm>[0-9]{4})(?P<number>[0-9]{3})(?:v(?P<version>[0-9]+))?"
)
# Longer than any spelling below (a URL with a query string included): refused before any
# pattern runs, so a pasted page or file line costs nothing.
MAX_LENGTH = 300

# The spellings besides the bare id, each with the id in group "id" (checked by the schemes
# above): abs, pdf and html pages on arxiv.org and its mirrors (a reverse proxy that merges
# slashes turns the "//" of a URL given in a page path into "/"); the arXiv DOI, bare or as a
# doi.org URL (DataCite writes it in capitals: 10.48550/ARXIV.2104.12255); the OAI identifier;
# the "arXiv:" prefix of citations.
_URL = re.compile(
    r"(?:https?:/{1,2})?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/"
    r"(?P<id>[^?#\s]+?)(?:\.pdf)?/?(?:[?#][^\s]*)?",
    re.IGNORECASE,
)
_DOI = re.compile(
    r"(?:(?:https?://)?(?:dx\.)?doi\.org/|doi: ?)?10\.48550/arxiv\.(?P<id>[^\s]+)",
    re.IGNORECASE,
)
_PREFIX = re.compile(r"(?:oai:arxiv\.org:|arxiv: ?)(?P<id>[^\s]+)", re.IGNORECASE)
# The stamp arXiv prints down the side of a PDF, "arXiv:0706.0001v1 [q-bio.CB] 1 Jun 2007", and
# the citation form "arXiv:1234.5678 [hep-th]": an id, a category in brackets, maybe a date.
_STAMP = re.compile(
    r"(?P<id>[^\s\[\]]+) \[(?P<category>[A-Za-z.-]{2,40})\]"
    r"(?: [0-9]{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4})?"
)


class InvalidArxivId(ValueError):
    """``text`` is not an arXiv identifier; ``str(error)`` quotes the text (its start, when
    longer than 100 characters) and says why."""

    def __init__(self, text: object, reason: str):
        self.text = text
        self.reason = reason
        shown = repr(text) if len(repr(text)) <= 100 else repr(str(text)[:80]) + "..."
        super().__init__(f"not an arXiv identifier: {shown} ({reason})")


def parse_arxiv_id(text: str) -> tuple[str, int | None]:
    """Return ``(canonical_id, version)`` for any common spelling of an arXiv identifier.

    The one parser of identifiers a person, a file or a source gives. Accepts:

    - bare ids, new and old style (``2409.01234``, ``hep-th/9901001``), with a version
      (``2409.01234v2``), old style with a subject class (``math.GT/0309136`` ->
      ``math/0309136``; the class must be one of that archive's categories);
    - the prefixes ``arXiv:`` (any case) and ``oai:arXiv.org:``;
    - abs, pdf and html URLs of ``arxiv.org``, ``www.arxiv.org`` and ``export.arxiv.org``
      (``https://arxiv.org/pdf/2409.01234v3.pdf``), http or https or no scheme, with a
      trailing slash, query string or fragment;
    - the arXiv DOI ``10.48550/arXiv.2409.01234`` (any case, ``doi:`` or a doi.org URL);
    - the stamp ``arXiv:0706.0001v1 [q-bio.CB] 1 Jun 2007`` (the date optional; the
      bracketed category must be an arXiv category);
    - surrounding whitespace, and a ``.pdf`` file name (``2409.01234v3.pdf``).

    ``canonical_id`` carries no version; ``version`` is the ``vN`` number or ``None``.

    Raises :class:`InvalidArxivId` when the text is not an identifier, including text longer
    than ``MAX_LENGTH`` characters, non-ASCII digits, new-style ids whose number has the wrong
    length for their month (``0808.05394``: five digits before 2015), impossible months
    (``0000.0000``), unknown archives and subject classes, and ``v0``.
    """
    if not isinstance(text, str):
        raise InvalidArxivId(text, "not a string")
    candidate = text.strip()
    if len(candidate) > MAX_LENGTH:
        raise InvalidArxivId(text, f"longer than {MAX_LENGTH} characters")
    if stamp := _STAMP.fullmatch(candidate):
        category = stamp["category"]
        if not _is_category(category):
            raise InvalidArxivId(text, f"{category!r} is not an arXiv category")
        candidate = stamp["id"]
    for form in (_URL, _DOI, _PREFIX):
        if match := form.fullmatch(candidate):
            candidate = match["id"]
            break
    if candidate.endswith(".pdf"):
        candidate = candidate[: -len(".pdf")]

    if match := _NEW_STYLE.fullmatch(candidate):
        yymm, number = match["yymm"], match["number"]
        _check_month(text, yymm, first="0704")
        expected_digits = 4 if yymm < "1501" else 5
        if len(number) != expected_digits:
            raise InvalidArxivId(text, f"{yymm} identifiers have a {expected_digits}-digit number")
        canonical = f"{yymm}.{number}"
    elif match := _OLD_STYLE.fullmatch(candidate):
        archive, yymm = match["archive"], match["yymm"]
        if archive not in OLD_STYLE_ARCHIVES:
            raise InvalidArxivId(text, f"unknown archive {archive!r}")
        subject = match["subject"]
        if subject is not None and not _is_category(f"{archive}.{subject}", archive=archive):
            raise InvalidArxivId(text, f"{archive}.{subject} is not a subject class of {archive}")
        _check_old_style_month(text, yymm)
        canonical = f"{archive}/{yymm}{match['number']}"
    else:
        raise InvalidArxivId(text, "does not match the new or old identifier scheme")

    version = int(match["version"]) if match["version"] is not None else None
    if version == 0:
        raise InvalidArxivId(text, "versions start at v1")
    return canonical, version


def oai_identifier(text: str) -> str:
    """The OAI-PMH identifier of the paper ``text`` names (any spelling :func:`parse_arxiv_id`
    accepts): ``oai:arXiv.org:<canonical id>``. No version: an OAI record is the whole paper,
    and arXiv answers ``idDoesNotExist`` to ``oai:arXiv.org:1305.0014v1``. Raises
    :class:`InvalidArxivId`."""
    canonical, _version = parse_arxiv_id(text)
    return f"{OAI_PREFIX}{canonical}"


def api_identifier(text: str) -> str:
    """The id to put in the arXiv API's ``id_list`` for ``text`` (any spelling
    :func:`parse_arxiv_id` accepts): the canonical id, with the version kept when one was
    given (``arXiv:2104.12255v1`` -> ``2104.12255v1``: the API then returns that version).
    Raises :class:`InvalidArxivId`."""
    canonical, version = parse_arxiv_id(text)
    return canonical if version is None else f"{canonical}v{version}"


def arxiv_abs_url(canonical_id: str, version: int | None = None) -> str:
    """Return the abstract-page URL, ``https://arxiv.org/abs/<id>`` (with ``v<version>`` if given).

    ``canonical_id`` may be any spelling :func:`parse_arxiv_id` accepts; a version inside it is
    dropped unless ``version`` is passed. Raises :class:`InvalidArxivId` for a bad id.
    """
    canonical, _ = parse_arxiv_id(canonical_id)
    suffix = f"v{version}" if version is not None else ""
    return f"{ABS_URL_BASE}{canonical}{suffix}"


def _check_month(text: str, yymm: str, *, first: str) -> None:
    if not 1 <= int(yymm[2:]) <= 12:
        raise InvalidArxivId(text, f"{yymm} is not a year and month")
    if yymm < first:
        raise InvalidArxivId(text, f"new-style identifiers start at {first}")


def _check_old_style_month(text: str, yymm: str) -> None:
    if not 1 <= int(yymm[2:]) <= 12:
        raise InvalidArxivId(text, f"{yymm} is not a year and month")
    # Old-style numbering ran from August 1991 (9108) to March 2007 (0703).
    if "0703" < yymm < "9108":
        raise InvalidArxivId(text, f"old-style identifiers run from 9108 to 0703, not {yymm}")


def _is_category(code: str, *, archive: str | None = None) -> bool:
    """``code`` is an arXiv category (of ``archive``, when given)."""
    try:
        info = get_category(code)
    except UnknownCategory:
        return False
    return archive is None or info.archive == archive
