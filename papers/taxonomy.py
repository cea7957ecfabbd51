"""arXiv's category taxonomy: codes, names, aliases and legacy archives.

Data: ``papers/data/arxiv_categories.csv``, a flattening of arXiv's own
``arxiv/taxonomy/definitions.py`` (arXiv/arxiv-base, see ``papers/data/SOURCES.md``). The file is
read once per process. arXiv's internal ``test`` and ``bad`` groups are left out.

Two kinds of non-canonical codes exist, and :func:`canonical_category` maps both:

- **aliases**: one category listed under two archives (``math.MP`` = ``math-ph``,
  ``cs.SY`` = ``eess.SY``); the CSV's ``canonical_if_alias`` column names the canonical side;
- **subsumed legacy archives**: archives closed in the 1990s whose papers now belong to a
  category (``cmp-lg`` -> ``cs.CL``, ``chao-dyn`` -> ``nlin.CD``); in the CSV they are the
  inactive rows whose ``alt_name`` names the successor.

Plain Python, no Django.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CategoryInfo",
    "UnknownCategory",
    "all_categories",
    "canonical_category",
    "category_for_name",
    "get_category",
]

CATEGORIES_CSV = Path(__file__).resolve().parent / "data" / "arxiv_categories.csv"
EXCLUDED_GROUPS = frozenset({"grp_test", "grp_bad"})
# Marks a subject name shared by unrelated categories in the name index.
_AMBIGUOUS = ""


class UnknownCategory(ValueError):
    """``code`` (or a subject name) is not an arXiv category; ``str(error)`` quotes it."""

    def __init__(self, code: object, reason: str = "not an arXiv category"):
        self.code = code
        super().__init__(f"{reason}: {code!r}")


@dataclass(frozen=True)
class CategoryInfo:
    """One arXiv category as listed in arXiv's taxonomy.

    - ``code``: as arXiv writes it (``cs.CL``, ``hep-th``, legacy ``cmp-lg``).
    - ``name`` / ``archive`` / ``archive_name`` / ``group`` / ``group_name``: the taxonomy
      levels (``"Computation and Language"``, ``cs``, ``"Computer Science"``, ``grp_cs``,
      ``"Computer Science"``).
    - ``is_active``: arXiv still accepts new submissions in it.
    - ``canonical``: the code to store (itself unless an alias or a subsumed archive).
    - ``description``: arXiv's one-paragraph scope note ("" where arXiv gives none).
    """

    code: str
    name: str
    archive: str
    archive_name: str
    group: str
    group_name: str
    is_active: bool
    canonical: str
    description: str = ""

    @property
    def full_name(self) -> str:
        """Name as arXiv's legacy OAI ``oai_dc`` subjects write it.

        ``"Computer Science - Computation and Language"`` for a category inside a larger
        archive, the plain archive name (``"High Energy Physics - Theory"``) for an archive
        that is its own category.
        """
        if self.code == self.archive:
            return self.name
        return f"{self.archive_name} - {self.name}"


@functools.cache
def _categories() -> dict[str, CategoryInfo]:
    with CATEGORIES_CSV.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["group"] not in EXCLUDED_GROUPS]
    categories = {}
    for row in rows:
        is_active = row["is_active"] == "True"
        if row["canonical_if_alias"]:
            canonical = row["canonical_if_alias"]
        elif not is_active and row["alt_name"]:
            canonical = row["alt_name"]
        else:
            canonical = row["code"]
        categories[row["code"]] = CategoryInfo(
            code=row["code"],
            name=row["name"],
            archive=row["archive"],
            archive_name=row["archive_name"],
            group=row["group"],
            group_name=row["group_name"],
            is_active=is_active,
            canonical=canonical,
            description=row["description"],
        )
    return categories


def all_categories() -> tuple[CategoryInfo, ...]:
    """Every arXiv category (active and legacy, without test/bad), ordered by code."""
    return tuple(sorted(_categories().values(), key=lambda info: info.code))


def get_category(code: str) -> CategoryInfo:
    """Return the :class:`CategoryInfo` for ``code`` exactly as written (aliases included).

    Raises :class:`UnknownCategory` when ``code`` is not an arXiv category.
    """
    try:
        return _categories()[code.strip()]
    except (KeyError, AttributeError):
        raise UnknownCategory(code) from None


def canonical_category(code: str) -> str:
    """Map a category code to the one to store: aliases and subsumed archives to their successor.

    ``math.MP`` -> ``math-ph``, ``stat.TH`` -> ``math.ST``, ``cs.NA`` -> ``math.NA``,
    ``cmp-lg`` -> ``cs.CL``, ``chao-dyn`` -> ``nlin.CD``; canonical codes map to themselves.
    Codes are case-sensitive, as on arXiv. Raises :class:`UnknownCategory` otherwise.
    """
    return get_category(code).canonical


def category_for_name(name: str) -> str:
    """Return the category code for a subject *name*, as OAI ``oai_dc`` records give them.

    Accepts ``"Computer Science - Computation and Language"`` (archive name - category name),
    bare archive names (``"High Energy Physics - Theory"``, ``"Quantum Physics"``) and a bare
    category name when it names one category only (``"Computation and Language"``;
    ``"Machine Learning"`` is both ``cs.LG`` and ``stat.ML`` and is refused). Case and spacing
    are ignored. Returns the code as listed (``"Mathematics - Information Theory"`` gives the
    alias ``math.IT``; pass it to :func:`canonical_category` to canonicalise).

    Raises :class:`UnknownCategory` for unknown or ambiguous names.
    """
    key = _name_key(name) if isinstance(name, str) else ""
    code = _codes_by_name().get(key)
    if code is None:
        raise UnknownCategory(name, "not an arXiv subject name")
    if code == _AMBIGUOUS:
        raise UnknownCategory(name, "ambiguous arXiv subject name")
    return code


def _name_key(name: str) -> str:
    return " ".join(name.split()).casefold()


@functools.cache
def _codes_by_name() -> dict[str, str]:
    """Subject name -> code; an earlier tier wins, a clash inside a tier is ambiguous."""
    categories = _categories().values()
    active = [info for info in categories if info.is_active]
    inactive = [info for info in categories if not info.is_active]
    tiers = [
        # Names as arXiv's OAI wrote them for current categories.
        [(info.full_name, info) for info in active],
        # Bare category names, for sources that drop the archive prefix.
        [(info.name, info) for info in active if info.code != info.archive],
        # Legacy archives and categories ("Astrophysics", "Chaotic Dynamics").
        [(info.full_name, info) for info in inactive],
    ]
    mapping: dict[str, str] = {}
    for tier in tiers:
        found: dict[str, set[CategoryInfo]] = {}
        for name, info in tier:
            found.setdefault(_name_key(name), set()).add(info)
        for key, infos in found.items():
            if key in mapping:
                continue
            if len(infos) == 1:
                mapping[key] = next(iter(infos)).code
            elif len({info.canonical for info in infos}) == 1:
                # An alias pair such as cs.NA / math.NA: one category under two names.
                mapping[key] = next(iter(infos)).canonical
            else:
                mapping[key] = _AMBIGUOUS
    return mapping
