"""papers.taxonomy: arXiv categories from papers/data/arxiv_categories.csv."""

import pytest

from papers.taxonomy import (
    CategoryInfo,
    UnknownCategory,
    all_categories,
    canonical_category,
    category_for_name,
    get_category,
)

# arXiv's ARCHIVES_SUBSUMED and CATEGORY_ALIASES (arxiv-base arxiv/taxonomy/definitions.py).
SUBSUMED = {
    "cmp-lg": "cs.CL",
    "adap-org": "nlin.AO",
    "comp-gas": "nlin.CG",
    "chao-dyn": "nlin.CD",
    "solv-int": "nlin.SI",
    "patt-sol": "nlin.PS",
    "alg-geom": "math.AG",
    "dg-ga": "math.DG",
    "funct-an": "math.FA",
    "q-alg": "math.QA",
    "mtrl-th": "cond-mat.mtrl-sci",
    "supr-con": "cond-mat.supr-con",
    "acc-phys": "physics.acc-ph",
    "ao-sci": "physics.ao-ph",
    "atom-ph": "physics.atom-ph",
    "bayes-an": "physics.data-an",
    "chem-ph": "physics.chem-ph",
    "plasm-ph": "physics.plasm-ph",
}
ALIASES = {
    "math.MP": "math-ph",
    "stat.TH": "math.ST",
    "math.IT": "cs.IT",
    "q-fin.EC": "econ.GN",
    "cs.SY": "eess.SY",
    "cs.NA": "math.NA",
}


def test_all_categories_skip_test_and_bad_groups():
    categories = all_categories()
    codes = {info.code for info in categories}
    assert len(categories) == 176  # 185 in arXiv's list, minus 8 test and 1 bad
    assert sum(info.is_active for info in categories) == 155
    assert not any(code == "test" or code.startswith(("test.", "bad")) for code in codes)
    assert all(isinstance(info, CategoryInfo) for info in categories)


def test_category_info_fields():
    info = get_category("cs.CL")
    assert info == CategoryInfo(
        code="cs.CL",
        name="Computation and Language",
        archive="cs",
        archive_name="Computer Science",
        group="grp_cs",
        group_name="Computer Science",
        is_active=True,
        canonical="cs.CL",
        description=info.description,
    )
    assert info.description.startswith("Covers natural language processing")
    assert info.full_name == "Computer Science - Computation and Language"
    assert get_category("hep-th").full_name == "High Energy Physics - Theory"


@pytest.mark.parametrize(("alias", "canonical"), sorted(ALIASES.items()))
def test_aliases_map_to_the_canonical_side(alias, canonical):
    assert canonical_category(alias) == canonical
    assert canonical_category(canonical) == canonical


@pytest.mark.parametrize(("legacy", "successor"), sorted(SUBSUMED.items()))
def test_subsumed_archives_map_to_their_successor(legacy, successor):
    assert canonical_category(legacy) == successor
    assert not get_category(legacy).is_active


def test_only_aliases_and_subsumed_archives_are_not_canonical():
    changed = {
        info.code: info.canonical for info in all_categories() if info.canonical != info.code
    }
    assert changed == {**SUBSUMED, **ALIASES}


def test_legacy_archives_that_are_still_codes_stay_themselves():
    for code in ("astro-ph", "cond-mat", "q-bio"):
        assert canonical_category(code) == code
        assert not get_category(code).is_active


@pytest.mark.parametrize("code", ["cs.XX", "cs.cl", "test.soft", "bad-arch.bad-cat", "cs", ""])
def test_unknown_codes_raise_and_name_the_code(code):
    with pytest.raises(UnknownCategory) as caught:
        canonical_category(code)
    assert repr(code) in str(caught.value)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("Computer Science - Computation and Language", "cs.CL"),
        ("Computer Science - Computer Vision and Pattern Recognition", "cs.CV"),
        ("Physics - Optics", "physics.optics"),
        ("Mathematics - Combinatorics", "math.CO"),
        ("Mathematics - Numerical Analysis", "math.NA"),
        ("Mathematics - Information Theory", "math.IT"),
        ("Statistics - Machine Learning", "stat.ML"),
        ("Condensed Matter - Strongly Correlated Electrons", "cond-mat.str-el"),
        ("Astrophysics - Cosmology and Nongalactic Astrophysics", "astro-ph.CO"),
        ("High Energy Physics - Theory", "hep-th"),
        ("Quantum Physics", "quant-ph"),
        ("Mathematical Physics", "math-ph"),
        ("Astrophysics", "astro-ph"),
        ("Computation and Language", "cs.CL"),
        ("Numerical Analysis", "math.NA"),
        ("  computer science -  computation AND language ", "cs.CL"),
    ],
)
def test_category_for_name(name, code):
    assert category_for_name(name) == code


@pytest.mark.parametrize("name", ["Machine Learning", "68T05", "Physics - Nonsense", ""])
def test_category_for_name_refuses_unknown_and_ambiguous_names(name):
    with pytest.raises(UnknownCategory) as caught:
        category_for_name(name)
    assert repr(name) in str(caught.value)
