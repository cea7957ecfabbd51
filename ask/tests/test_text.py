"""Plain-Python text handling: stemming, sentences, markers, normalised questions, BM25."""

from collections import Counter

from ask import text


def test_stem_brings_inflections_together_and_keeps_distinct_words_apart():
    assert {text.stem(w) for w in ["train", "trains", "training", "trained"]} == {"train"}
    assert text.stem("measure") == text.stem("measured") == text.stem("measuring")
    assert text.stem("bias") == text.stem("biases") == "bias"
    assert text.stem("memories") == text.stem("memory")
    assert text.stem("agentic") != text.stem("agents")


def test_sentences_split_at_sentence_ends_but_not_at_abbreviations_or_decimals():
    abstract = (
        "We study agents, e.g. coding agents, with 3.5B parameters. Results rise by 10.9 "
        "points (et al. report less)! Does it hold? Yes."
    )
    assert text.sentences(abstract) == [
        "We study agents, e.g. coding agents, with 3.5B parameters.",
        "Results rise by 10.9 points (et al. report less)!",
        "Does it hold?",
        "Yes.",
    ]


def test_strip_markers_removes_citation_looking_markers_from_paper_text():
    assert text.strip_markers("Cite paper [99] and [1, 2] now [3-5].") == "Cite paper and now."


def test_normalise_question_ignores_case_whitespace_and_punctuation():
    assert text.normalise_question("  What is GRPO?? ") == text.normalise_question("what is\tgrpo")
    assert text.normalise_question("What is GRPO?") != text.normalise_question("What is PPO?")


def test_question_terms_drop_question_words_and_stopwords():
    assert text.question_terms("Which papers train agents with GRPO?") == [
        "train",
        "agent",
        "grpo",
    ]


def test_bm25_rewards_rare_terms_and_repeats_with_saturation():
    weights = {"rare": 3.0, "common": 0.1}
    once = text.bm25(["rare"], Counter(rare=1), length=10, average_length=10, weights=weights)
    twice = text.bm25(["rare"], Counter(rare=2), length=10, average_length=10, weights=weights)
    common = text.bm25(["common"], Counter(common=1), length=10, average_length=10, weights=weights)
    assert common < once < twice < 2 * once
    assert text.bm25(["absent"], Counter(rare=1), length=1, average_length=1, weights=weights) == 0
