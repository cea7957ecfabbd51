"""papers.text.unwrap: arXiv's hard line wraps go, paragraphs stay."""

from papers.text import unwrap


def test_title_wrapped_with_indented_continuation_becomes_one_line():
    raw = "A Study of Structure Formation and Reheating in the D3/D7 Brane\n  Inflation Model"
    assert unwrap(raw) == (
        "A Study of Structure Formation and Reheating in the D3/D7 Brane Inflation Model"
    )


def test_abstract_leading_spaces_and_plain_wraps_are_removed():
    raw = "  Functionals that have local minima at the excited states of a non degenerate\n"
    raw += "Hamiltonian are presented.\n"
    assert unwrap(raw) == (
        "Functionals that have local minima at the excited states of a non degenerate "
        "Hamiltonian are presented."
    )


def test_indented_line_in_an_abstract_starts_a_paragraph():
    # 1401.2122 (hepcrawl arxiv-single.xml): arXiv marks the second paragraph by indentation.
    raw = (
        "  We introduce a novel systematic construction for integrable (3+1)-dimensional\n"
        "dispersionless systems using nonisospectral Lax pairs that involve contact\n"
        "vector fields.\n"
        "  In particular, we present new large classes of (3+1)-dimensional integrable\n"
        "dispersionless systems.\n"
    )
    assert unwrap(raw) == (
        "We introduce a novel systematic construction for integrable (3+1)-dimensional "
        "dispersionless systems using nonisospectral Lax pairs that involve contact vector "
        "fields.\n\nIn particular, we present new large classes of (3+1)-dimensional "
        "integrable dispersionless systems."
    )


def test_blank_line_is_a_paragraph_break():
    assert unwrap("First  paragraph\nwrapped.\n\n\nSecond\tone.") == (
        "First paragraph wrapped.\n\nSecond one."
    )


def test_pretty_printed_xml_text_is_not_split_into_paragraphs():
    raw = "\n            By using fundamental units\n            as conversion factors.\n          "
    assert unwrap(raw) == "By using fundamental units as conversion factors."


def test_windows_line_ends_and_empty_input():
    assert unwrap("Line one\r\nline two") == "Line one line two"
    assert unwrap("") == ""
    assert unwrap(None) == ""
    assert unwrap("   \n  ") == ""


def test_tex_and_unicode_spaces_are_kept():
    assert unwrap("$\\bar U\\bar D$\u00a0and  Bal\\'azs") == "$\\bar U\\bar D$\u00a0and Bal\\'azs"
