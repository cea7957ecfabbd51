"""The rule query language: terms, phrases, boundaries, precedence, errors with positions;
the word runs the rule index files a rule under."""

import pytest

from topics.tagging.rules import LiteralIndex, RuleSyntaxError, compile_rule, fold, rule_terms

TITLE = "Training LLM Agents with Reinforcement Learning"
ABSTRACT = (
    "We train language model agents on long-horizon tasks. The reagent database and the\n"
    "reinforcement\n   learning  setup are released."
)


def matches(query: str, text: str = f"{TITLE}\n{ABSTRACT}") -> bool:
    return compile_rule(query).matches(text)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("agents", True),
        ("AGENTS", True),
        ("agent", False),  # only "agents" and "reagent" occur: both are other words
        ("reagent", True),
        ("train", True),
        ("trained", False),
        ("llm", True),
        ("horizon", True),  # "long-horizon": the hyphen is a word boundary
        ("long-horizon", True),
        ("long horizon", True),  # two words, implicit AND
        ('"long horizon"', False),  # a phrase needs whitespace between its words
    ],
)
def test_words_match_whole_words_case_insensitively(query, expected):
    assert matches(query) is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"reinforcement learning"', True),
        ('"Reinforcement   LEARNING"', True),
        ('"learning reinforcement"', False),  # order matters
        ('"language model agents"', True),
        ('"language model agent"', False),  # boundary at the end of the phrase
        ('"model agents on"', True),
        ('"agents learning"', False),
        # Across the line break and indentation of the abstract: any whitespace between words.
        ('"reinforcement learning setup"', True),
    ],
)
def test_phrases_match_words_in_order_with_any_whitespace(query, expected):
    assert matches(query) is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("agents reagent", True),
        ("agents AND reagent", True),
        ("agents robots", False),
        ("agents OR robots", True),
        ("robots OR drones", False),
        ("NOT robots", True),
        ("NOT agents", False),
        ("-robots", True),
        ("-agents", False),
        ("agents -robots", True),
        ("agents -reagent", False),
        ("agents NOT reagent", False),
    ],
)
def test_boolean_operators(query, expected):
    assert matches(query) is expected


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        # OR is weakest: "a b OR c" is "(a AND b) OR c".
        ("alpha beta OR gamma", "gamma", True),
        ("alpha beta OR gamma", "alpha", False),
        ("alpha beta OR gamma", "alpha beta", True),
        # NOT binds tightest: "NOT a b" is "(NOT a) AND b", not "NOT (a AND b)".
        ("NOT alpha beta", "beta", True),
        ("NOT alpha beta", "alpha beta", False),
        ("NOT alpha beta", "gamma", False),
        # "a OR NOT b c" is "a OR ((NOT b) AND c)".
        ("alpha OR NOT beta gamma", "gamma", True),
        ("alpha OR NOT beta gamma", "beta gamma", False),
        ("alpha OR NOT beta gamma", "alpha beta", True),
        # Parentheses override precedence.
        ("alpha (beta OR gamma)", "alpha gamma", True),
        ("alpha (beta OR gamma)", "gamma", False),
        ("NOT (alpha beta)", "alpha", True),
        ("NOT (alpha beta)", "alpha beta", False),
        ("-(alpha OR beta)", "gamma", True),
        ("-(alpha OR beta)", "beta", False),
        # Nested parentheses.
        ("((alpha OR beta) (gamma OR (delta -epsilon)))", "beta delta", True),
        ("((alpha OR beta) (gamma OR (delta -epsilon)))", "beta delta epsilon", False),
        ("((alpha OR beta) (gamma OR (delta -epsilon)))", "alpha epsilon gamma", True),
        ("NOT NOT alpha", "alpha", True),
        ("--alpha", "beta", False),
    ],
)
def test_precedence_and_parentheses(query, text, expected):
    assert matches(query, text) is expected


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        ("agent*", "agentic workflows", True),
        ("agent*", "an agent", True),
        ("agent*", "reagents", False),
        ('"gui agent*"', "gui agents", False),  # no wildcard inside phrases: literal "*"
        ("gpt-4", "we use GPT-4 here", True),
        ("gpt-4", "we use GPT-40 here", False),
        ("c++", "written in C++.", True),
        ("c++", "abc++ code", False),
        ("or", "this or that", True),  # lowercase operators are ordinary words
        ('"OR"', "this or that", True),
    ],
)
def test_prefixes_and_punctuation(query, text, expected):
    assert matches(query, text) is expected


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        ("schrödinger", "The SCHRÖDINGER equation", True),
        # A decomposed ö (o + combining diaeresis) matches a composed one after NFKC.
        ("schrödinger", "the Schro\u0308dinger equation", True),
        ("straße", "STRASSE networks", True),  # full case folding
        ("Ωmega", "ωmega point", True),
        ("学习", "强化 学习 方法", True),
        ("学习", "强化学习方法", False),  # no word boundary around it in unsegmented text
        ("naïve", "naive bayes", False),  # accents are not stripped
        ("ﬁne-tuning", "supervised fine-tuning", True),  # the ligature folds to "fi"
        ('"large\u00a0language"', "large language", True),  # a no-break space is whitespace
    ],
)
def test_unicode(query, text, expected):
    assert matches(query, text) is expected


def test_matches_folded_is_matches_on_folded_text():
    rule = compile_rule('"Reinforcement Learning" -robots')
    for text in (TITLE, ABSTRACT, "robots and reinforcement learning", "Straße"):
        assert rule.matches_folded(fold(text)) is rule.matches(text)


def test_empty_query_matches_everything():
    for query in ("", "   \n"):
        rule = compile_rule(query)
        assert rule.is_empty
        assert rule.matches("anything at all")
        assert rule.matches("")
    assert not compile_rule("agents").is_empty


@pytest.mark.parametrize(
    ("query", "position", "message"),
    [
        ("(agents", 0, "'(' is never closed"),
        ("agents (rl OR (tool use)", 7, "'(' is never closed"),
        ("agents)", 6, "')' without a matching '('"),
        ("(a) b)", 5, "')' without a matching '('"),
        (")", 0, "')' without a matching '('"),
        ("()", 0, "empty parentheses"),
        ("agents ( )", 7, "empty parentheses"),
        ("agents OR", 7, "OR needs a term after it"),
        ("agents OR )", 7, "OR needs a term after it"),
        ("(agents OR)", 8, "OR needs a term after it"),
        ("agents OR OR rl", 7, "OR needs a term after it"),
        ("OR agents", 0, "OR needs a term before it"),
        ("(OR agents)", 1, "OR needs a term before it"),
        ("agents AND", 7, "AND needs a term after it"),
        ("AND agents", 0, "AND needs a term before it"),
        ("agents NOT", 7, "NOT needs a term after it"),
        ("agents NOT OR rl", 7, "NOT needs a term after it"),
        ("agents -", 7, "'-' must be followed directly by a term"),
        ("agents - rl", 7, "'-' must be followed directly by a term"),
        ("(agents -)", 8, "'-' needs a term after it"),
        ('agents ""', 7, "empty quotes"),
        ('agents "  "', 7, "empty quotes"),
        ('agents "reinforcement learning', 7, "unclosed quote"),
        ("*", 0, "'*' must end a word of at least one character"),
        ("agents a*b", 7, "'*' is only allowed at the end of a word"),
        ("agent**", 0, "'*' is only allowed at the end of a word"),
    ],
)
def test_syntax_errors_name_position_and_problem(query, position, message):
    with pytest.raises(RuleSyntaxError) as caught:
        compile_rule(query)
    assert caught.value.position == position
    assert caught.value.message == message
    assert str(caught.value) == f"{message} at position {position}"
    assert isinstance(caught.value, ValueError)


def test_rule_keeps_its_query():
    rule = compile_rule('"tool use" OR agents')
    assert rule.query == '"tool use" OR agents'
    assert repr(rule) == "Rule('\"tool use\" OR agents')"


@pytest.mark.parametrize(
    "query",
    ["NOT " * 2000 + "agent", "(" * 2000 + "agent" + ")" * 2000, "-" * 60 + "agent"],
)
def test_absurdly_deep_nesting_is_a_syntax_error_not_a_crash(query):
    with pytest.raises(RuleSyntaxError, match="nested more than 50 levels"):
        compile_rule(query)


def test_reasonable_nesting_still_parses():
    rule = compile_rule("(" * 10 + "agent" + ")" * 10 + " NOT NOT reagent")
    assert rule.matches("an agent and a reagent")


# --- the rule index ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"GUI agents" OR RLVR', ({"gui", "agents"}, {"rlvr"})),
        ('"Self-Improving Agents"', ({"self", "improving", "agents"},)),
        ('"c++" OR gpt-4', ({"c"}, {"gpt", "4"})),
        ("agents tools", None),  # AND
        ("agents AND tools", None),
        ("agents OR NOT tools", None),
        ("-agents", None),
        ("agent*", None),
        ('("GUI agents" OR tools)', None),
        ('"++"', None),
    ],
)
def test_rule_terms_are_the_word_runs_every_match_contains(query, expected):
    terms = rule_terms(query)
    assert terms == (None if expected is None else tuple(frozenset(t) for t in expected))


@pytest.mark.parametrize(
    ("query", "needs"),
    [
        ("agents", {"agents"}),
        ('"GUI agent" OR RLVR', {"gui", "rlvr"}),
        ("agent*", {"agent"}),
        ("language models", {"language"}),  # AND: the fewest literals of a child
        ("(a OR b) c", {"c"}),
        ("-agents", None),  # a negation matches by lacking its words
        ("agents OR -physics", None),
        ("agents -physics", {"agents"}),
        ("Straße", {"strasse"}),
        ("", None),
    ],
)
def test_a_rule_needs_one_of_its_literals(query, needs):
    rule = compile_rule(query)
    assert rule.needs == (None if needs is None else frozenset(needs))


def test_the_literal_index_never_drops_a_rule_that_matches():
    queries = [
        "agents",
        '"GUI agent" OR "GUI agents" OR RLVR',
        "agent* -physics",
        '(language OR vision) "reward model"',
        "NOT physics",
        "",
        '"c++" OR gpt-4',
    ]
    rules = [compile_rule(query) for query in queries]
    index = LiteralIndex.build(rules)
    texts = [
        "",
        "gui agents for the web",
        "a reward model for vision agents",
        "agentic physics",
        "self-improving agents write c++ with gpt-4",
        "flux vacua",
        "rlvr",
    ]
    for text in texts:
        folded = fold(text)
        matching = {position for position, rule in enumerate(rules) if rule.matches(text)}
        candidates = index.candidates(folded)
        assert matching <= candidates, text
        # Rules needing no literal are always tried; the others only when one is there.
        assert {4, 5} <= candidates
    assert index.candidates(fold("flux vacua")) == {4, 5}
