"""papers.identifiers: every spelling of an arXiv id maps to (canonical id, version)."""

import pytest

from papers.identifiers import (
    MAX_LENGTH,
    InvalidArxivId,
    api_identifier,
    arxiv_abs_url,
    oai_identifier,
    parse_arxiv_id,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2409.01234", ("2409.01234", None)),
        ("2409.01234v2", ("2409.01234", 2)),
        ("0704.0001", ("0704.0001", None)),
        ("1412.9999v12", ("1412.9999", 12)),
        ("1501.00001", ("1501.00001", None)),
        ("hep-th/9901001", ("hep-th/9901001", None)),
        ("hep-th/9901001v3", ("hep-th/9901001", 3)),
        ("math.GT/0309136", ("math/0309136", None)),
        ("math.GT/0309136v2", ("math/0309136", 2)),
        ("physics/0112006", ("physics/0112006", None)),
        ("quant-ph/0201082v1", ("quant-ph/0201082", 1)),
        ("arXiv:2409.01234", ("2409.01234", None)),
        ("arxiv:hep-th/9901001v1", ("hep-th/9901001", 1)),
        ("oai:arXiv.org:0801.3673", ("0801.3673", None)),
        ("oai:arXiv.org:physics/0112006", ("physics/0112006", None)),
        ("http://arxiv.org/abs/1605.08386v1", ("1605.08386", 1)),
        ("https://arxiv.org/abs/astro-ph/0601001v1", ("astro-ph/0601001", 1)),
        ("https://arxiv.org/pdf/2409.01234v3", ("2409.01234", 3)),
        ("  2409.01234  ", ("2409.01234", None)),
    ],
)
def test_parse_arxiv_id_accepts_every_common_spelling(text, expected):
    assert parse_arxiv_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "0808.05394",  # five-digit number before 2015: arXiv returns an empty feed for it
        "1501.0001",  # four-digit number from 2015 on
        "0000.0000",  # no month 00
        "0913.0001",  # no month 13
        "0703.0001",  # new-style numbering started in April 2007
        "2409.01234v0",  # versions start at 1
        "hepth/9901001",  # unknown archive
        "hep-th/990100",  # six digits
        "hep-th/0801001",  # old style ended in March 2007
        "1605.08386 v1",
        "is-malformed",
        "",
    ],
)
def test_parse_arxiv_id_refuses_invalid_ids_and_names_them(text):
    with pytest.raises(InvalidArxivId) as caught:
        parse_arxiv_id(text)
    assert repr(text) in str(caught.value)
    assert caught.value.text == text
    assert isinstance(caught.value, ValueError)


def test_parse_arxiv_id_refuses_non_strings():
    with pytest.raises(InvalidArxivId):
        parse_arxiv_id(None)


def test_arxiv_abs_url():
    assert arxiv_abs_url("2409.01234") == "https://arxiv.org/abs/2409.01234"
    assert arxiv_abs_url("hep-th/9901001", version=3) == "https://arxiv.org/abs/hep-th/9901001v3"
    assert arxiv_abs_url("arXiv:2409.01234v2") == "https://arxiv.org/abs/2409.01234"
    with pytest.raises(InvalidArxivId):
        arxiv_abs_url("0808.05394")


@pytest.mark.parametrize(
    "text",
    [
        "\u0661\u0666\u0660\u0665.\u0660\u0668\u0663\u0668\u0666",
        "\uff11\uff16\uff10\uff15.\uff10\uff18\uff13\uff18\uff16",
    ],
)
def test_non_ascii_digits_are_not_an_arxiv_identifier(text):
    with pytest.raises(InvalidArxivId):
        parse_arxiv_id(text)


# Every spelling a person pastes or a file holds. Each names the paper it
# should: (text, canonical id, version).
PASTED_SPELLINGS = [
    # the arXiv: prefix, any case, with or without a space after the colon
    ("arXiv:1305.0014", "1305.0014", None),
    ("ARXIV:1305.0014v1", "1305.0014", 1),
    ("arXiv: 1305.0014", "1305.0014", None),
    ("arXiv:math.GT/0309136v2", "math/0309136", 2),
    # abs, pdf and html pages, http or https, arxiv.org, www. and export., no scheme
    ("https://arxiv.org/abs/2104.12255v1", "2104.12255", 1),
    ("https://arxiv.org/abs/2104.12255/", "2104.12255", None),
    ("https://arxiv.org/abs/2104.12255v1/", "2104.12255", 1),
    ("http://export.arxiv.org/abs/2104.12255", "2104.12255", None),
    ("https://www.arxiv.org/abs/hep-th/9901001v2/", "hep-th/9901001", 2),
    ("arxiv.org/abs/2104.12255", "2104.12255", None),
    ("https://arxiv.org/abs/2104.12255?context=cs", "2104.12255", None),
    ("https://arxiv.org/pdf/2104.12255", "2104.12255", None),
    ("https://arxiv.org/pdf/2104.12255v1.pdf", "2104.12255", 1),
    ("https://arxiv.org/pdf/2104.12255v1/", "2104.12255", 1),
    ("http://arxiv.org/pdf/quant-ph/0201082v1.pdf", "quant-ph/0201082", 1),
    ("HTTPS://ARXIV.ORG/PDF/2104.12255v1.PDF", "2104.12255", 1),
    ("https://arxiv.org/html/2104.12255v1", "2104.12255", 1),
    ("https://arxiv.org/html/2104.12255v1/", "2104.12255", 1),
    ("https://arxiv.org/html/2104.12255v1#S2", "2104.12255", 1),
    # a reverse proxy that merges slashes turns the page URL /papers/https://... into https:/
    ("https:/arxiv.org/abs/2104.12255v1", "2104.12255", 1),
    # the arXiv DOI: bare, doi:, doi.org URL, DataCite's capitals, old style
    ("10.48550/arXiv.2104.12255", "2104.12255", None),
    ("10.48550/ARXIV.2104.12255", "2104.12255", None),
    ("doi:10.48550/arXiv.2104.12255", "2104.12255", None),
    ("https://doi.org/10.48550/arXiv.2104.12255", "2104.12255", None),
    ("http://dx.doi.org/10.48550/arXiv.2104.12255", "2104.12255", None),
    ("10.48550/arXiv.hep-th/9901001", "hep-th/9901001", None),
    # the stamp down the side of an arXiv PDF, and the citation form with a category
    ("arXiv:0706.0001v1 [q-bio.CB]", "0706.0001", 1),
    ("arXiv:0706.0001v1 [q-bio.CB] 1 Jun 2007", "0706.0001", 1),
    ("arXiv:hep-th/9901001v3 [hep-th] 11 Jan 1999", "hep-th/9901001", 3),
    ("1305.0014 [astro-ph.CO]", "1305.0014", None),
    ("arXiv:cond-mat/0101001 [cond-mat.stat-mech]", "cond-mat/0101001", None),
    # old style with a subject class, including hyphenated ones and aliases
    ("cond-mat.stat-mech/0101001", "cond-mat/0101001", None),
    ("cs.AI/0101001", "cs/0101001", None),
    ("math.MP/0101001", "math/0101001", None),
    # what a file gives: a trailing newline, a PDF's file name
    ("1305.0014v1\n", "1305.0014", 1),
    ("2104.12255v1.pdf", "2104.12255", 1),
]


@pytest.mark.parametrize(("text", "canonical", "version"), PASTED_SPELLINGS)
def test_every_pasted_spelling_names_its_paper(text, canonical, version):
    assert parse_arxiv_id(text) == (canonical, version)


@pytest.mark.parametrize(("text", "canonical", "version"), PASTED_SPELLINGS)
def test_oai_is_asked_for_the_bare_id_and_the_api_for_the_version_given(text, canonical, version):
    assert oai_identifier(text) == f"oai:arXiv.org:{canonical}"
    assert api_identifier(text) == (canonical if version is None else f"{canonical}v{version}")


def test_the_ids_sent_are_the_ones_arxiv_knows():
    """The three requests the issue saw go wrong."""
    assert oai_identifier("1305.0014v1") == "oai:arXiv.org:1305.0014"
    assert oai_identifier("arXiv:1305.0014") == "oai:arXiv.org:1305.0014"
    assert api_identifier("https://arxiv.org/abs/2104.12255v1") == "2104.12255v1"
    # Already normalised stays as it is (a harvest run's stored parameters are normalised).
    assert oai_identifier("oai:arXiv.org:physics/0112006") == "oai:arXiv.org:physics/0112006"
    assert api_identifier("2104.12255v1") == "2104.12255v1"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # subject classes that are not a category of that archive
        ("math.XX/0309136", "math.XX is not a subject class of math"),
        ("math.gt/0309136", "math.gt is not a subject class of math"),
        ("hep-th.GT/9901001", "hep-th.GT is not a subject class of hep-th"),
        ("math.cs.AI/0101001", "does not match"),
        # stamps with a made-up category or a malformed date
        ("arXiv:0706.0001v1 [q-bio.XX]", "'q-bio.XX' is not an arXiv category"),
        ("arXiv:0706.0001v1 [q-bio.CB] 1 Juni 2007", "does not match"),
        ("arXiv:0706.0001v1 [<b>]", "does not match"),
        # other hosts, lookalike hosts, other paths, nested prefixes
        ("https://arxiv.org.evil.example/abs/2104.12255", "does not match"),
        ("https://evil.example/arxiv.org/abs/2104.12255", "does not match"),
        ("https://user@arxiv.org/abs/2104.12255", "does not match"),
        ("https://arxiv.org/list/2104.12255", "does not match"),
        ("https://arxiv.org/abs/../2104.12255", "does not match"),
        ("https://arxiv.org/abs/2104%2E12255", "does not match"),
        ("javascript:alert(1)//arxiv.org/abs/2104.12255", "does not match"),
        ("ftp://arxiv.org/abs/2104.12255", "does not match"),
        ("arXiv:arXiv:2104.12255", "does not match"),
        ("oai:arXiv.org:https://arxiv.org/abs/2104.12255", "does not match"),
        ("10.1103/PhysRevD.93.016005", "does not match"),
        ("10.48550/arXiv.", "does not match"),
        # a valid URL around an invalid id is still refused, and says why
        ("https://arxiv.org/abs/0808.05394", "0808 identifiers have a 4-digit number"),
        ("10.48550/arXiv.2104.12255v0", "versions start at v1"),
        # control characters, line breaks inside, lookalike characters
        ("2104.12255\x00", "does not match"),
        ("2104.12255\nv1", "does not match"),
        ("arXiv\uff1a2104.12255", "does not match"),
        ("2104\u200b.12255", "does not match"),
        ("\u202e2104.12255", "does not match"),
        ("arXiv:0706.0001v1\t[q-bio.CB]", "does not match"),
        # two ids in one
        ("2104.12255,2104.12256", "does not match"),
        ("2104.12255 2104.12256", "does not match"),
    ],
)
def test_hostile_and_near_miss_inputs_are_refused_saying_why(text, reason):
    with pytest.raises(InvalidArxivId) as caught:
        parse_arxiv_id(text)
    assert reason in str(caught.value)
    assert repr(text) in str(caught.value)


def test_overlong_text_is_refused_before_parsing_and_quoted_briefly():
    text = "https://arxiv.org/abs/2104.12255?" + "a" * MAX_LENGTH

    with pytest.raises(InvalidArxivId) as caught:
        parse_arxiv_id(text)

    message = str(caught.value)
    assert f"longer than {MAX_LENGTH} characters" in message
    assert "https://arxiv.org/abs/2104.12255?aaa" in message and len(message) < 200
    assert caught.value.text == text
