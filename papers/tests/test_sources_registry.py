"""sources_for: the sources of a harvest built from plain JSON parameters, and refused ones."""

from __future__ import annotations

import pytest

from papers.sources import sources_for


def test_sources_for_builds_one_oai_source_per_set(settings):
    settings.ARXIV_OAI_SETS = ["cs", "stat"]

    default = sources_for("oai", {"from": "2024-01-01"})
    named = sources_for("oai", {"sets": ["physics:hep-th"]})
    everything = sources_for("oai", {"sets": []})
    by_id = sources_for("oai", {"identifiers": "1401.2122,1305.9999"})

    assert [(s.set_spec, s.from_date) for s in default] == [
        ("cs", "2024-01-01"),
        ("stat", "2024-01-01"),
    ]
    assert [s.set_spec for s in named] == ["physics:hep-th"]
    assert [s.set_spec for s in everything] == [None]
    assert [s.identifiers for s in by_id] == [["1401.2122", "1305.9999"]]
    assert default[0].transport is default[1].transport


def test_sources_for_rejects_unknown_kinds_and_bad_parameters():
    with pytest.raises(ValueError, match="unknown harvest kind"):
        sources_for("ftp", {})
    with pytest.raises(ValueError, match="unknown oai parameters: sett"):
        sources_for("oai", {"sett": "cs"})
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        sources_for("oai", {"from": "yesterday"})
    with pytest.raises(ValueError, match="'sets' must be a list of set names"):
        sources_for("oai", {"sets": "cs"})
    with pytest.raises(ValueError, match="'incremental' must be true or false"):
        sources_for("oai", {"incremental": "yes"})
    with pytest.raises(ValueError, match="one set at most"):
        sources_for("oai", {"sets": ["cs", "stat"], "resumption_token": "1|2"})
    with pytest.raises(ValueError, match="id_list or a search_query"):
        sources_for("atom", {})
    with pytest.raises(ValueError, match="'max_results' must be a whole number, not 'ten'"):
        sources_for("atom", {"search_query": "x", "max_results": "ten"})
