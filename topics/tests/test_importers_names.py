"""Starting rules from names (``topics.importers.names.rule_query_from_name``): the phrases a
name and description give, and that every rule made from OpenAlex's topics parses."""

import csv
from pathlib import Path

import pytest

from topics.importers.names import (
    GENERIC_PHRASES_NAMED,
    default_generic_phrases,
    generic_phrases,
    is_generic_term,
    rule_query_from_name,
)
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


# --- generic phrases -------------------------------------------------------------------------


def test_generic_phrases_come_from_how_many_topics_use_them():
    texts = [f"Topic {n}. Uses machine learning and graph coloring {n}" for n in range(8)] + [
        "Silicon photonics. Covers silicon photonics and optical modulators."
    ]
    found = generic_phrases(texts, min_topics=8)
    assert "machine learning" in found
    assert "uses machine learning" in found  # every phrase of 8 topics, not a fixed list
    assert "silicon photonics" not in found
    assert "optical modulators" not in found
    with pytest.raises(ValueError, match="min_topics"):
        generic_phrases(texts, min_topics=1)


def test_openalex_generic_phrases_include_the_ones_that_misfiled_papers():
    generic = default_generic_phrases()
    for phrase in ("machine learning", "artificial intelligence", "monte carlo", "deep learning"):
        assert phrase in generic
    # Found by frequency, not named: in many OpenAlex topics.
    assert "climate change" in generic and "climate change" not in GENERIC_PHRASES_NAMED
    for specific in ("genetic programming", "silicon photonics", "particle filtering"):
        assert specific not in generic


@pytest.mark.parametrize(
    ("term", "generic"),
    [
        ("Machine Learning", True),
        ("deep learning models", True),
        ("Monte Carlo methods", True),
        ("sequential Monte Carlo", False),
        ("Genetic Programming", False),
        ("machine learning potentials", False),
        ("Artificial Intelligences", True),
    ],
)
def test_is_generic_term(term, generic):
    assert is_generic_term(term, default_generic_phrases()) is generic


def test_generated_rules_never_tag_on_a_generic_phrase(openalex_rows):
    """The rules that misfiled papers (issue: an LLM-agents paper under "Applications and
    Challenges of IoT" and "Application of Genetic Programming in Machine Learning", an
    economics paper under "Particle Filtering…") keep their specific terms only."""
    rows = {row["topic_name"]: row for row in openalex_rows}
    llm_agents = (
        "Large language model agents trained with reinforcement learning: a machine learning "
        "and artificial intelligence approach to tool use."
    )
    economics = "A Monte Carlo study of consumer demand and market prices in economics."
    for name in (
        "Applications and Challenges of IoT",
        "Application of Genetic Programming in Machine Learning",
        "Particle Filtering and Nonlinear Estimation Methods",
    ):
        rule = compile_rule(rule_query_from_name(name, description=rows[name]["description"]))
        assert not rule.matches(llm_agents), name
        assert not rule.matches(economics), name
    genetic = compile_rule(
        rule_query_from_name(
            "Application of Genetic Programming in Machine Learning",
            description=rows["Application of Genetic Programming in Machine Learning"][
                "description"
            ],
        )
    )
    assert genetic.matches("Genetic programming for symbolic regression")
    # A topic named by a generic phrase still matches its own name.
    assert compile_rule(rule_query_from_name("Machine Learning")).matches("machine learning")
    phrases = set()
    for row in openalex_rows:
        query = rule_query_from_name(row["topic_name"], description=row["description"])
        # Every phrase but the first (the topic's own name).
        phrases.update(phrase.strip('"').casefold() for phrase in query.split('" OR "')[1:])
    assert len(phrases) > 10_000
    assert not {"machine learning", "monte carlo", "artificial intelligence"} & phrases
