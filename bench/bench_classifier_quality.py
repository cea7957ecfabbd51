"""Quality of topic tagging on held-out labels: precision, recall and F1 per topic and overall,
for the keyword rules built from topic names (the baseline), the classifier alone, and rules +
classifier together (what ``papers_tag`` writes: a rule match or a classifier score at or above
the topic's threshold).

    .venv/bin/python bench/bench_classifier_quality.py [--folds 5] [--min-positives 10]
        [--target-precision 0.8] [--only arxiv|reference] [--smoke]

Two data sets, both shipped in the repository, no database needed:

1. **arXiv records** (``papers/recorded/``: the 1,317 real papers the demo harvests), each
   labelled with the arXiv archives of its categories (primary and cross-lists, legacy codes
   mapped to their successors): one topic per archive. The rules are what
   ``topics.importers.names.rule_query_from_name`` builds from the archive's name and its
   categories' names (as the importers build a topic's starting rule), *not* the category
   rules, which would be the labels themselves.
2. **The reference page** (``topics/data/llm-agent-training.json``): its 30 papers and their
   topics among the page's 58, plus the 1,317 arXiv papers as papers outside every one of them
   (2007-2008 physics, mathematics and computing: none is about LLM agents). The rules are
   built from the topic names alone (the page gives no descriptions). 30 papers are very
   little: most topics have one or two papers, far below the classifier's minimum of labels,
   so they fall back to their rules; the figures say so.

Both are cross-validated: ``--folds`` folds over the papers (shuffled, fixed seed); in each,
``topics.tagging.classifier.TopicClassifier.fit`` trains on the other folds' labels with the
product's settings (target precision, minimum positives; its own inner cross-validation picks
each topic's threshold) and tags the held-out fold; rules need no training. Counts are summed
over the folds. Overall figures are micro (every (paper, topic) pair counted once) and macro
(mean over topics with at least one positive). ``--smoke`` (what CI runs): 2 folds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REFERENCE_PAGE = ROOT / "topics" / "data" / "llm-agent-training.json"


@dataclass
class Counts:
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0

    def add(self, predicted: set[int], actual: set[int]) -> None:
        self.true_positives += len(predicted & actual)
        self.false_positives += len(predicted - actual)
        self.false_negatives += len(actual - predicted)

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 0.0

    @property
    def recall(self) -> float:
        wanted = self.true_positives + self.false_negatives
        return self.true_positives / wanted if wanted else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __iadd__(self, other: Counts) -> Counts:
        self.true_positives += other.true_positives
        self.false_positives += other.false_positives
        self.false_negatives += other.false_negatives
        return self


@dataclass
class Dataset:
    """``texts`` (folded as ``paper_text`` does), ``labels[i]`` the topic names of paper i,
    ``rules`` a rule query per topic name."""

    name: str
    texts: list[str]
    labels: list[set[str]]
    rules: dict[str, str]


def arxiv_dataset() -> Dataset:
    from papers.sources.recorded import recorded_sources
    from papers.taxonomy import UnknownCategory, all_categories, canonical_category, get_category
    from topics.importers.names import rule_query_from_name
    from topics.tagging.classifier import paper_text

    papers = {}
    for source in recorded_sources():
        for chunk in source.chunks():
            for record in chunk.records:
                papers[record.arxiv_id] = record
    texts, labels = [], []
    for record in papers.values():
        archives = set()
        for code in record.categories:
            try:
                archives.add(get_category(canonical_category(code)).archive)
            except UnknownCategory:
                continue
        texts.append(paper_text(record.title, record.abstract))
        labels.append(archives)
    present = set().union(*labels)
    names: dict[str, list[str]] = {}
    for info in all_categories():
        if info.canonical == info.code and info.archive in present:
            names.setdefault(info.archive, [info.archive_name])
            if info.name not in names[info.archive]:
                names[info.archive].append(info.name)
    rules = {
        archive: " OR ".join(rule_query_from_name(name) for name in archive_names)
        for archive, archive_names in names.items()
    }
    return Dataset("arXiv records, archives as topics", texts, labels, rules)


def reference_dataset(arxiv: Dataset) -> Dataset:
    from topics.importers.names import rule_query_from_name
    from topics.tagging.classifier import paper_text

    page = json.loads(REFERENCE_PAGE.read_text(encoding="utf-8"))
    texts = [paper_text(paper["title"], paper["abstract"]) for paper in page["papers"]]
    labels = [set(paper["topics"]) for paper in page["papers"]]
    rules = {name: rule_query_from_name(name) for name in page["topic_vocabulary"]}
    return Dataset(
        "reference page (30 papers, 58 topics) + the arXiv records as papers outside them",
        texts + arxiv.texts,
        labels + [set() for _ in arxiv.texts],
        rules,
    )


def evaluate(dataset: Dataset, *, folds: int, min_positives: int, target_precision: float):
    from topics.tagging.classifier import TopicClassifier, TopicExamples
    from topics.tagging.rules import compile_rule

    topics = sorted(dataset.rules)
    number = {name: index for index, name in enumerate(topics)}
    actual = [{number[name] for name in names if name in number} for names in dataset.labels]
    compiled = [compile_rule(dataset.rules[name]) for name in topics]
    rule_matches = [
        {index for index, rule in enumerate(compiled) if rule.matches_folded(text)}
        for text in dataset.texts
    ]
    results = {kind: [Counts() for _ in topics] for kind in ("rules", "classifier", "both")}
    trained_in = [0] * len(topics)
    order = np.random.default_rng(0).permutation(len(dataset.texts))
    for fold in range(folds):
        test = np.sort(order[fold::folds])
        train = np.setdiff1d(np.arange(len(dataset.texts)), test)
        train_texts = [dataset.texts[i] for i in train]
        examples = {
            index: TopicExamples(
                rows=np.arange(len(train)),
                labels=np.array([index in actual[i] for i in train]),
                weights=np.ones(len(train)),
            )
            for index in range(len(topics))
            if any(index in actual[i] for i in train)
        }
        classifier = TopicClassifier.fit(
            train_texts,
            examples,
            target_precision=target_precision,
            min_positives=min_positives,
        )
        for index in classifier.topic_ids.tolist():
            trained_in[index] += 1
        test_texts = [dataset.texts[i] for i in test]
        accepted = [set() for _ in test]
        for candidate in classifier.candidates(test_texts, margin=0.0):
            if candidate.accepted:
                accepted[candidate.row].add(candidate.topic_id)
        for row, paper in enumerate(test):
            for index in range(len(topics)):
                truth = {paper} if index in actual[paper] else set()
                by_rule = {paper} if index in rule_matches[paper] else set()
                by_classifier = {paper} if index in accepted[row] else set()
                results["rules"][index].add(by_rule, truth)
                results["classifier"][index].add(by_classifier, truth)
                results["both"][index].add(by_rule | by_classifier, truth)
    positives = [sum(index in labels for labels in actual) for index in range(len(topics))]
    return topics, positives, trained_in, results


def report(dataset: Dataset, options) -> dict[str, float]:
    started = time.perf_counter()
    topics, positives, trained_in, results = evaluate(
        dataset,
        folds=options.folds,
        min_positives=options.min_positives,
        target_precision=options.target_precision,
    )
    print(f"\n== {dataset.name}: {len(dataset.texts)} papers, {len(topics)} topics ==")
    print(
        f"{options.folds}-fold cross-validation; classifier target precision "
        f"{options.target_precision}, at least {options.min_positives} positives to train."
    )
    header = f"{'topic':<46} {'pos':>4} {'model':>5}  " + "  ".join(
        f"{kind:^17}" for kind in ("rules", "classifier", "rules+classifier")
    )
    print(header)
    print(f"{'':<46} {'':>4} {'':>5}  " + "  ".join(f"{'P':>5} {'R':>5} {'F1':>5}" for _ in "abc"))
    shown = [index for index in range(len(topics)) if positives[index]]
    for index in sorted(shown, key=lambda i: (-positives[i], topics[i])):
        figures = "  ".join(
            f"{c.precision:5.2f} {c.recall:5.2f} {c.f1:5.2f}"
            for c in (results[kind][index] for kind in ("rules", "classifier", "both"))
        )
        model = f"{trained_in[index]}/{options.folds}"
        print(f"{topics[index][:46]:<46} {positives[index]:>4} {model:>5}  {figures}")
    summary = {}
    for averaging in ("micro", "macro"):
        line = []
        for kind in ("rules", "classifier", "both"):
            if averaging == "micro":
                total = Counts()
                for index in shown:
                    total += results[kind][index]
                p, r, f = total.precision, total.recall, total.f1
            else:
                p = float(np.mean([results[kind][i].precision for i in shown]))
                r = float(np.mean([results[kind][i].recall for i in shown]))
                f = float(np.mean([results[kind][i].f1 for i in shown]))
            summary[f"{averaging} {kind}"] = f
            line.append(f"{p:5.2f} {r:5.2f} {f:5.2f}")
        print(f"{'overall, ' + averaging:<46} {sum(positives):>4} {'':>5}  " + "  ".join(line))
    trained = sum(1 for index in shown if trained_in[index])
    print(
        f"Topics with a model in at least one fold: {trained} of {len(shown)} with labels; the "
        f"others fall back to their rules. ({time.perf_counter() - started:.1f} s)"
    )
    for averaging in ("micro", "macro"):
        rules, classifier = summary[f"{averaging} rules"], summary[f"{averaging} classifier"]
        verdict = "beats" if classifier > rules else "does NOT beat"
        print(
            f"{averaging} F1: classifier {classifier:.3f} {verdict} rules {rules:.3f}; "
            f"rules+classifier {summary[f'{averaging} both']:.3f}"
        )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--min-positives", type=int, default=10)
    parser.add_argument("--target-precision", type=float, default=0.8)
    parser.add_argument("--only", choices=("arxiv", "reference"))
    parser.add_argument("--smoke", action="store_true", help="2 folds (CI)")
    options = parser.parse_args()
    if options.smoke:
        options.folds = 2

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    arxiv = arxiv_dataset()
    if options.only in (None, "arxiv"):
        report(arxiv, options)
    if options.only in (None, "reference"):
        report(reference_dataset(arxiv), options)


if __name__ == "__main__":
    main()
