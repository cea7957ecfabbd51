"""arXiv identifiers: parse any spelling into the canonical id and version, build abs URLs.

The identifier scheme is documented at https://info.arxiv.org/help/arxiv_identifier.html:

- new style (since April 2007): ``YYMM.NNNN`` up to ``1412``, ``YYMM.NNNNN`` from ``1501`` on;
- old style (1991 to March 2007): ``archive/YYMMNNN``, sometimes written with the subject class
  (``math.GT/0309136``), which is not part of the identifier;
- either may carry a version suffix ``vN`` (N >= 1).

Plain Python, no Django: parsers and the ingestion service share it.
"""

from __future__ import annotations

import re

__all__ = ["InvalidArxivId", "arxiv_abs_url", "parse_arxiv_id"]

ABS_URL_BASE = "https://arxiv.org/abs/"

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
    r"(?P<archive>[a-z]+(?:-[a-z]+)?)(?:\.[A-Za-z][A-Za-z-]*)?"
    r"/(?P<yymm>[0-9]{4})(?P<number>[0-9]{3})(?:v(?P<version>[0-9]+))?"
)
# Prefixes and URL forms seen in OAI headers, Atom ids, citations and links.
_PREFIXES = re.compile(
    r"^(?:oai:arxiv\.org:|arxiv:|https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)",
    re.IGNORECASE,
)


class InvalidArxivId(ValueError):
    """``text`` is not an arXiv identifier; ``str(error)`` quotes the text and says why."""

    def __init__(self, text: object, reason: str):
        self.text = text
        self.reason = reason
        super().__init__(f"not an arXiv identifier: {text!r} ({reason})")


def parse_arxiv_id(text: str) -> tuple[str, int | None]:
    """Return ``(canonical_id, version)`` for any common spelling of an arXiv identifier.

    Accepts bare ids (``2409.01234``, ``hep-th/9901001``), versioned ids (``2409.01234v2``),
    old-style ids with a subject class (``math.GT/0309136`` -> ``math/0309136``), and the
    prefixed forms ``arXiv:…``, ``oai:arXiv.org:…`` and ``http(s)://arxiv.org/abs/…`` (or
    ``/pdf/``). ``canonical_id`` carries no version; ``version`` is the ``vN`` number or ``None``.

    Raises :class:`InvalidArxivId` when the text is not an identifier, including new-style ids
    whose number has the wrong length for their month (``0808.05394``: five digits before 2015)
    and impossible months (``0000.0000``).
    """
    if not isinstance(text, str):
        raise InvalidArxivId(text, "not a string")
    candidate = _PREFIXES.sub("", text.strip())
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
        _check_old_style_month(text, yymm)
        canonical = f"{archive}/{yymm}{match['number']}"
    else:
        raise InvalidArxivId(text, "does not match the new or old identifier scheme")

    version = int(match["version"]) if match["version"] is not None else None
    if version == 0:
        raise InvalidArxivId(text, "versions start at v1")
    return canonical, version


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
