"""papers.identifiers: every spelling of an arXiv id maps to (canonical id, version)."""

import pytest

from papers.identifiers import InvalidArxivId, arxiv_abs_url, parse_arxiv_id


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
