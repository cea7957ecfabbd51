"""Starting rules from names (``topics.importers.names.rule_query_from_name``): the phrases a
name and description give, and that every rule made from OpenAlex's topics parses."""

import csv
from pathlib import Path

import pytest

from topics.importers.names import rule_query_from_name
from topics.tagging.rules import compile_rule

OPENALEX_CSV = (
    Path(__file__).resolve().parents[1] / "data" / "openalex" / "openalex_topics_2024-09.csv"
)


@pytest.fixture(scope="module")
def openalex_rows():
    with OPENALEX_CSV.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(
    ("name", "description", "expected"),
    [
        ("GUI Agents", "", '"GUI Agents" OR "GUI Agent"'),
        ("RL for Tool Use", "", '"RL for Tool Use" OR "Tool Use"'),
        (
            "Self-Improving Agents",
            "",
            '"Self-Improving Agents" OR "Self Improving Agents" OR "Self-Improving Agent" OR '
            '"Self Improving Agent"',
        ),
        ("Physics", "", '"Physics"'),
        ("   ", "", ""),
        (
            "Silicon Photonics Technology",
            "This cluster of papers covers advances in silicon photonics technology, including "
            "optical modulators, microcavities, nanophotonic waveguides and atomic layer "
            "deposition (ALD). It also covers lasers.",
            '"Silicon Photonics Technology" OR "Silicon Photonics Technologies" OR '
            '"Silicon Photonics" OR "optical modulators" OR "optical modulator" OR '
            '"nanophotonic waveguides" OR "nanophotonic waveguide" OR '
            '"atomic layer deposition" OR "atomic layer depositions" OR "ALD"',
        ),
    ],
)
def test_rule_query_from_name(name, description, expected):
    assert rule_query_from_name(name, description=description) == expected


def test_rules_from_names_match_what_their_names_say():
    rule = compile_rule(rule_query_from_name("GUI Agents"))
    assert rule.matches("A GUI agent for Android")
    assert rule.matches("Benchmarks for GUI agents")
    assert not rule.matches("A GUI for agent debugging")
    part_of_speech = compile_rule(
        rule_query_from_name(
            "Statistical Machine Translation",
            description="This cluster of papers focuses on dependency parsing and "
            "part-of-speech tagging.",
        )
    )
    assert part_of_speech.matches("Part-of-speech tagging for Welsh")
    assert part_of_speech.matches("Fast dependency parsing")


def test_every_openalex_topic_gets_a_rule_that_parses(openalex_rows):
    assert len(openalex_rows) == 4516
    for row in openalex_rows:
        query = rule_query_from_name(row["topic_name"], description=row["description"])
        assert query.startswith(f'"{" ".join(row["topic_name"].split())}"')
        compile_rule(query)  # raises RuleSyntaxError otherwise
