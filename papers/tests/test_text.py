"""papers.text: arXiv's hard line wraps go, paragraphs stay; TeX accents and mojibake become
readable text, formulas stay as written."""

import pytest

from papers.text import fix_mojibake, readable, tex_to_text, unwrap


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


# --- TeX accents and escapes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tex", "text"),
    [
        ("C. Bal\\'azs", "C. Balázs"),
        ('M. R{\\"u}bhausen', "M. Rübhausen"),
        ('Schr\\"{o}dinger', "Schrödinger"),
        ("Fran\\c{c}ois", "François"),
        ("\\v{S}pakulov\\'a", "Špakulová"),
        ("S. {\\AA}berg", "S. Åberg"),
        ("Rafa{\\l} Lata{\\l}a", "Rafał Latała"),
        ("Benjam\\'{\\i}n", "Benjamín"),
        ("Jo\\~ao", "João"),
        ("Gro\\ss e", "Große"),
        ("AT\\&T, 50\\%, \\#1, a\\_b", "AT&T, 50%, #1, a_b"),
        ("{\\'E}cole", "École"),
    ],
)
def test_accents_letters_and_escapes_are_read(tex, text):
    assert tex_to_text(tex) == text


@pytest.mark.parametrize(
    "kept",
    [
        "From dyadic $\\Lambda_{\\alpha}$ to $\\Lambda_{\\alpha}$",
        "$\\'e$ inside a formula",
        "\\(\\\"o\\) and \\[\\'a\\]",
        "Bounded H_\\infty-calculus",
        "A Note About the {Ki(z)} Functions",
        "z~2.56 and space--times",
        '\\emph{Schr\\"odinger}',
        "a \\$5 fee",
        "\\'{}",
        "(Cu^{II}} and Cr^{III})",
        "Plain text without any TeX",
    ],
)
def test_everything_else_is_left_as_written(kept):
    assert tex_to_text(kept) == kept


def test_accents_next_to_formulas():
    assert tex_to_text("Vari\\'et\\'es sous $\\PGL_n$ et $\\'e$, Koll\\'ar") == (
        "Variétés sous $\\PGL_n$ et $\\'e$, Kollár"
    )
    # An unclosed formula runs to the end: nothing after its "$" is touched.
    assert tex_to_text("Gr\\\"obner $x and \\'e") == "Gröbner $x and \\'e"


# --- mojibake -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("broken", "fixed"),
    [
        ("Dirk WÃ¼bben", "Dirk Wübben"),
        ("JosÃ© RaÃºl Romero", "José Raúl Romero"),
        ("Oliver WeiÃ\x9fl", "Oliver Weißl"),
        ("The â€œquotedâ€\x9d word", "The “quoted” word"),
    ],
)
def test_utf8_read_as_latin1_or_windows1252_is_repaired(broken, fixed):
    assert fix_mojibake(broken) == fixed


@pytest.mark.parametrize(
    "kept",
    ["Balázs", "naïve café", "Ã", "½ price Â±", "Łukasz Żółć", "日本語", "plain ascii"],
)
def test_text_that_is_not_certainly_mojibake_is_kept(kept):
    assert fix_mojibake(kept) == kept


def test_readable_unwraps_repairs_and_reads_tex():
    assert readable('Gr\\"obner bases\n  for $\\Lambda$ by Dirk WÃ¼bben') == (
        "Gröbner bases for $\\Lambda$ by Dirk Wübben"
    )
    assert readable(None) == ""
    assert readable("   ") == ""
