"""Semantic tagging (``topics.tagging.semantic``): prototypes, calibration and the decisions of
the model on known vectors; then, with the real encoder and PostgreSQL, what tagging writes
from papers' stored vectors, how each curator decision counts at once, and that retraining on
the same labels never widens a topic."""

import numpy as np
import pytest
from django.core.management import call_command

from papers.embeddings.store import embed_papers
from papers.embeddings.vectors import load_vectors
from papers.models import Paper
from papers.tests.factories import PaperFactory
from topics.assignments import assignment_decide
from topics.models import Assignment, Topic
from topics.services import topic_create, topic_move
from topics.tagging import semantic
from topics.tagging.engine import papers_tag
from topics.tagging.semantic import (
    DEFAULT_CALIBRATION,
    MIN_TOPIC_LABELS,
    SemanticLabels,
    SemanticModel,
    best_f1_threshold,
    prototypes_build,
    semantic_active,
    topic_text,
)
from topics.tagging.training import classifier_train
from topics.tests.factories import UserFactory

SEMANTIC = Assignment.Source.SEMANTIC
ACCEPTED, PENDING, REJECTED = "accepted", "pending", "rejected"


def unit(*values):
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# --- the model on known vectors --------------------------------------------------------------


def test_topic_text_joins_name_description_and_keywords():
    assert topic_text("GUI Agents") == "GUI Agents."
    assert (
        topic_text("GUI Agents", " Agents that use\nscreens. ", [" clicks", "", "web "])
        == "GUI Agents. Agents that use screens. Keywords: clicks, web."
    )


def test_prototypes_keep_the_meaning_without_labels_and_move_with_them():
    meanings = np.stack([unit(1, 0, 0), unit(0, 1, 0)])
    none = np.zeros((2, 3))
    alone = prototypes_build(meanings, none, np.zeros(2))
    np.testing.assert_allclose(alone, meanings, atol=1e-6)

    accepted = np.array([[0, 0, 1.0], [0, 0, 0]])  # topic 0: one paper along z
    pulled = prototypes_build(meanings, accepted, np.array([1, 0]))
    np.testing.assert_allclose(np.linalg.norm(pulled, axis=1), 1, atol=1e-6)
    assert pulled[0, 2] > 0.4  # towards its accepted paper
    np.testing.assert_allclose(pulled[1], meanings[1], atol=1e-6)
    more = prototypes_build(meanings, 10 * accepted, np.array([10, 0]))
    assert more[0, 2] > pulled[0, 2]  # many labels weigh more than one

    rejected = np.array([[0, 1.0, 0], [0, 0, 0]])
    pushed = prototypes_build(meanings, none, np.zeros(2), rejected, np.array([1, 0]))
    assert pushed[0, 1] < 0  # away from the rejected paper


def test_best_f1_threshold():
    labels = np.array([True, True, False, True, False, False])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1])
    assert best_f1_threshold(labels, scores) == pytest.approx(0.4)  # halfway to 0.2
    assert best_f1_threshold(np.zeros(3, bool), scores[:3]) == 1.0


def test_several_texts_of_a_topic_are_prototypes_of_it_and_it_takes_the_nearest():
    # Topic 5 is described by two paragraphs pointing different ways; topic 6 by one.
    meanings = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)])
    model = SemanticModel.fit([5, 6], meanings, owners=[0, 0, 1])
    cosine = model.cosines(np.stack([unit(0, 1, 0.2), unit(0.1, 0, 1)]))
    np.testing.assert_allclose(cosine, [[0.98, 0.196], [0.0995, 0.995]], atol=1e-3)
    assert [c.topic_id for c in model.candidates(np.stack([unit(0, 1, 0.2)]))] == [5]


def test_zero_shot_suggests_each_paper_for_its_best_topic_only_and_accepts_nothing():
    meanings = np.stack([unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0)])
    model = SemanticModel.fit([11, 12, 13], meanings)
    assert model.calibration == DEFAULT_CALIBRATION
    assert not model.accepts.any()
    papers = np.stack(
        [
            unit(1, 0.3, 0, 0.2),  # topic 11, a little of 12
            unit(0.1, 0, 1, 0.1),  # topic 13
            unit(0, 0, 0, 1),  # fits nothing: none rather than a poor one
        ]
    )
    found = [(c.row, c.topic_id, c.accepted) for c in model.candidates(papers)]
    assert found == [(0, 11, False), (1, 13, False)]
    scores = model.scores(papers)
    assert scores.shape == (3, 3) and ((scores >= 0) & (scores <= 1)).all()
    assert scores[0, 0] > scores[0, 1] > scores[0, 2]


def _clusters(rng, centres, per_topic, spread):
    vectors, positives = [], []
    for index, centre in enumerate(centres):
        points = centre + spread * rng.standard_normal((per_topic, len(centre)))
        vectors.append(points / np.linalg.norm(points, axis=1, keepdims=True))
        positives.append(np.arange(index * per_topic, (index + 1) * per_topic))
    return np.concatenate(vectors).astype(np.float32), positives


def test_topics_with_enough_labels_accept_on_held_out_precision_and_calibrate_on_them():
    rng = np.random.default_rng(0)
    centres = np.eye(6)[:3]
    vectors, positives = _clusters(rng, centres, per_topic=12, spread=0.15)
    # Topic 3 has labels too few to measure (its threshold is the pooled one).
    few = np.arange(36, 38)
    extra, _ = _clusters(rng, [np.eye(6)[3]], per_topic=2, spread=0.15)
    labels = SemanticLabels(
        vectors=np.concatenate([vectors, extra]),
        positives=[*positives, few],
        negatives=[np.zeros(0, int)] * 4,
        paper_ids=np.arange(100, 138),
    )
    # Meanings only roughly where the papers are.
    meanings = np.stack([unit(*(c + 0.6 * np.eye(6)[5])) for c in np.eye(6)[:4]])
    model = SemanticModel.fit([1, 2, 3, 4], meanings, labels)
    assert model.calibration != DEFAULT_CALIBRATION  # fitted on the pooled held-out pairs
    assert model.accepts.tolist() == [True, True, True, False]
    assert model.metrics[1]["positives"] == 12 and model.metrics[1]["precision"] >= 0.8
    assert model.metrics[4] | {"precision": None} == model.metrics[4]  # not measured
    assert model.metrics[4]["positives"] == 2 < MIN_TOPIC_LABELS

    fresh, _ = _clusters(np.random.default_rng(1), centres, per_topic=5, spread=0.15)
    accepted, suggested, _ = model.decide(fresh)
    assert (accepted[:, :3].argmax(axis=1) == np.repeat([0, 1, 2], 5)).all()
    assert accepted[:, :3].sum() >= 13
    assert not suggested[:, :3].any()
    # The nearest labelled papers of a topic, for the evidence.
    assert model.nearest_labelled(vectors[0], 1, limit=2)[0] == 100
    assert model.nearest_labelled(vectors[0], 99) == []
    # Many pairs at once, as tagging asks for a batch's: the same answers, in pairs order.
    pairs = [(row, topic_id) for row in (0, 5, 17, 30) for topic_id in (3, 1, 99, 2, 4)]
    assert model.nearest_labelled_many(vectors, pairs) == [
        model.nearest_labelled(vectors[row], topic_id) for row, topic_id in pairs
    ]
    assert all(len(found) == 3 for found in model.nearest_labelled_many(vectors, pairs[:2]))
    assert model.nearest_labelled_many(vectors, []) == []


def test_every_topic_learns_from_the_papers_it_attracts_when_enough_choose_it():
    rng = np.random.default_rng(3)
    # Topic 21's name points between its papers (axis 0) and another direction (axis 3);
    # topic 22's papers lie along axis 1 and it has labels; topic 23 attracts two papers only.
    corpus, _ = _clusters(rng, [np.eye(5)[0], np.eye(5)[1], np.eye(5)[2]], 20, 0.1)
    corpus = np.concatenate([corpus[:40], corpus[40:42]])
    meanings = np.stack([unit(1, 0, 0, 1, 0), unit(0, 1, 0, 0, 1), unit(0, 0, 1, 0, 1)])
    labels = SemanticLabels(
        vectors=corpus[20:23],
        positives=[np.zeros(0, int), np.arange(3), np.zeros(0, int)],
        negatives=[np.zeros(0, int)] * 3,
    )
    plain = SemanticModel.fit([21, 22, 23], meanings, labels)
    refined = SemanticModel.fit([21, 22, 23], meanings, labels, corpus=corpus)
    # 21 moved towards its 20 papers: their cosine to it rose, and it still is their topic.
    before, after = plain.cosines(corpus[:20])[:, 0], refined.cosines(corpus[:20])[:, 0]
    assert (after > before + 0.1).all()
    assert (refined.cosines(corpus[:20]).argmax(axis=1) == 0).all()
    # 22 has labels and moved too (its labels still count on top), towards its papers.
    before, after = plain.cosines(corpus[20:40])[:, 1], refined.cosines(corpus[20:40])[:, 1]
    assert (after > before).all()
    # 23 was chosen by too few papers: unchanged.
    np.testing.assert_allclose(refined.prototypes[2], plain.prototypes[2], atol=1e-6)
    # Without a corpus, or an empty one, nothing moves.
    empty = SemanticModel.fit([21, 22, 23], meanings, labels, corpus=np.zeros((0, 5)))
    np.testing.assert_allclose(empty.prototypes, plain.prototypes, atol=1e-6)


def test_a_label_teaches_the_paragraph_of_its_topic_it_is_about():
    # Topic 31 has two paragraphs (axes 0 and 1), topic 32 one (axis 2). A paper near
    # paragraph 0 moves that row only; paragraph 1 keeps its text's meaning.
    meanings = np.stack([unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0)])
    paper = unit(1, 0, 0, 1)
    labels = SemanticLabels(
        vectors=paper[None, :],
        positives=[np.array([0]), np.zeros(0, int)],
        negatives=[np.zeros(0, int)] * 2,
    )
    model = SemanticModel.fit([31, 32], meanings, labels, owners=[0, 0, 1])
    assert model.prototypes[0, 3] > 0.2
    np.testing.assert_allclose(model.prototypes[1:], meanings[1:], atol=1e-6)
    # Left out of its own row, the label is scored against the bare paragraph 0.
    assert model.metrics[31]["positives"] == 1


def test_a_topic_the_corpus_rarely_shows_yields_papers_halfway_between_to_a_common_one():
    rng = np.random.default_rng(5)
    # 300 papers along axis 0 (topic 41's), 30 along axis 1 (topic 42's); a paper exactly
    # between the two names goes to the common topic once the prior is known.
    corpus, _ = _clusters(rng, [np.eye(4)[0], np.eye(4)[1]], 300, 0.05)
    corpus = corpus[:330]
    meanings = np.stack([unit(1, 0, 0, 0), unit(0, 1, 0, 0)])
    between = unit(1, 1, 0, 0.5)[None, :]
    model = SemanticModel.fit([41, 42], meanings, corpus=corpus)
    assert model.bias[0] > 0 > model.bias[1]
    cosine = model.cosines(between)[0]
    assert abs(cosine[0] - cosine[1]) < 0.02
    accepted, suggested, _ = model.decide(between)
    assert not accepted.any() and suggested[0].tolist() == [True, False]
    # Too small a corpus to estimate a prior from: no shift.
    small = SemanticModel.fit([41, 42], meanings, corpus=corpus[:: len(corpus) // 50])
    assert not small.bias.any()


def test_a_topic_with_many_labels_also_votes_by_its_labelled_neighbours(monkeypatch):
    rng = np.random.default_rng(7)
    # Topic 51's 24 labels lie in two clusters (axes 1 and 2): their mean is near neither.
    # Topic 52's 24 lie along axis 3. A paper in 51's axis-1 cluster, leaning towards axis 3,
    # is nearer 52's prototype but among 51's papers.
    vectors, _ = _clusters(rng, [np.eye(6)[1], np.eye(6)[2], np.eye(6)[3]], 12, 0.05)
    vectors = np.concatenate([vectors, *_clusters(rng, [np.eye(6)[3]], 12, 0.05)[:1]])
    labels = SemanticLabels(
        vectors=vectors,
        positives=[np.arange(24), np.arange(24, 48)],
        negatives=[np.zeros(0, int)] * 2,
    )
    meanings = np.stack([unit(1, 0, 0, 0, 0, 0), unit(0, 0, 0, 1, 0, 0)])
    paper = unit(0, 1, 0, 0.7, 0, 0)[None, :]
    model = SemanticModel.fit([51, 52], meanings, labels)
    cosine = model.cosines(paper)[0]
    assert cosine[1] > cosine[0] + 0.1
    np.testing.assert_allclose(model.knn, [semantic.KNN_WEIGHT] * 2)
    assert model.fits(paper)[0].argmax() == 0
    assert model.predict(paper)[0, 0]
    # Fewer labels than KNN_MIN_LABELS: prototypes alone, and the paper goes to 52.
    monkeypatch.setattr(semantic, "KNN_MIN_LABELS", 25)
    fewer = SemanticModel.fit([51, 52], meanings, labels)
    assert fewer.knn is None
    assert fewer.fits(paper)[0].argmax() == 1


def test_the_neighbour_vote_never_places_a_paper_far_from_the_topic():
    rng = np.random.default_rng(11)
    vectors, _ = _clusters(rng, [np.eye(6)[0], np.eye(6)[1]], 24, 0.05)
    labels = SemanticLabels(
        vectors=vectors,
        positives=[np.arange(24), np.arange(24, 48)],
        negatives=[np.zeros(0, int)] * 2,
    )
    model = SemanticModel.fit([61, 62], np.eye(6)[:2], labels)
    assert model.accepts.all()
    # Orthogonal to both topics and to every label: the vote alone must not place it.
    far = unit(0, 0, 0, 0, 1, 1)[None, :]
    assert (model.fits(far) > 0).any()
    assert not model.predict(far).any()


def test_a_labelled_paper_is_not_its_own_neighbour():
    reference = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0.9, 0.1)])
    labels = np.array([[1, 0], [0, 1], [0, 1]])
    alone = semantic._knn_votes(reference, reference, labels)
    left_out = semantic._knn_votes(reference, reference, labels, exclude=np.arange(3))
    # Paper 0 is topic 0's only label: it votes for itself unless left out.
    assert alone[0, 0] > 0.9 and left_out[0, 0] == 0
    np.testing.assert_allclose(left_out.sum(axis=1), 1, atol=1e-6)


def test_fit_refuses_shapes_that_disagree():
    with pytest.raises(ValueError, match="2 meaning owners but 1 vectors"):
        SemanticModel.fit([1, 2], np.ones((1, 3)))
    with pytest.raises(ValueError, match="each topic needs a meaning"):
        SemanticModel.fit([1, 2], np.eye(3), owners=[0, 0, 0])
    labels = SemanticLabels(np.ones((1, 4)), [np.zeros(0, int)] * 2, [np.zeros(0, int)] * 2)
    with pytest.raises(ValueError, match="4 dimensions, not 3"):
        SemanticModel.fit([1, 2], np.eye(3)[:2], labels)


# --- with the encoder and the database --------------------------------------------------------

TOPICS = {
    "proteins": (
        "Protein Structure Prediction",
        "How amino-acid chains fold into three-dimensional shapes, predicted by computation.",
    ),
    "gravity": (
        "Gravitational Wave Astronomy",
        "Ripples in spacetime from merging black holes and neutron stars, and their detectors.",
    ),
    "finance": (
        "Financial Markets",
        "Stock prices, volatility, portfolios and the behaviour of traders.",
    ),
}
PAPERS = {
    "proteins": (
        "Folding polypeptides with deep networks",
        "We predict the tertiary conformation of enzymes from their residue sequence.",
    ),
    "gravity": (
        "Signals from a binary merger",
        "The interferometers recorded a chirp from two coalescing compact objects.",
    ),
    "finance": (
        "Volatility clustering in equity returns",
        "Daily returns of listed shares show heavy tails; we model the risk of investors.",
    ),
}


@pytest.fixture
def meaning_topics(db):
    return {
        key: topic_create(name=name, description=description)
        for key, (name, description) in TOPICS.items()
    }


@pytest.fixture
def embedded(meaning_topics):
    papers = {
        key: PaperFactory(title=title, abstract=abstract)
        for key, (title, abstract) in PAPERS.items()
    }
    embed_papers([paper.pk for paper in papers.values()])
    return papers


def machine(paper):
    return {
        (a.topic.slug, a.source, a.state)
        for a in Assignment.objects.filter(paper=paper).select_related("topic")
    }


@pytest.mark.django_db(transaction=True)
def test_stored_vectors_are_tagged_by_meaning_and_say_why(meaning_topics, embedded):
    """Zero-shot: each paper is suggested (pending review) for the topic it is about, with no
    word in common with its name, and no other; a second run writes nothing."""
    papers_tag(paper_ids=[paper.pk for paper in embedded.values()])
    for key, paper in embedded.items():
        assignment = Assignment.objects.get(paper=paper)
        assert (assignment.topic, assignment.source, assignment.state) == (
            meaning_topics[key],
            SEMANTIC,
            PENDING,
        )
        assert 0 < assignment.score <= 1
        assert assignment.evidence["cosine"] > semantic.MIN_COSINE
        assert assignment.evidence["nearest"] == [] and assignment.evidence["labels"] == 0
    assert papers_tag(paper_ids=[paper.pk for paper in embedded.values()]) == 0


@pytest.mark.django_db(transaction=True)
def test_the_stored_papers_are_the_corpus_topics_learn_from(meaning_topics):
    """Five stored gravitational-wave papers move the topic they all chose towards them; the
    other topics, chosen by none, keep their texts' meaning. Each paper embedded counts at
    once: a model built before the fifth paper is not kept."""
    variations = ["binary black hole", "neutron star merger", "LIGO", "Virgo", "kilonova"]
    papers = [
        PaperFactory(title=f"{PAPERS['gravity'][0]}: {what}", abstract=PAPERS["gravity"][1])
        for what in variations
    ]
    # Newest first, as `manage.py embed` backfills: the oldest paper comes last.
    embed_papers([paper.pk for paper in papers[1:]])
    before = semantic_active()
    embed_papers([papers[0].pk])
    model = semantic_active()
    assert model is not before
    column = {pk: index for index, pk in enumerate(model.topic_ids.tolist())}
    for key, moved in (("gravity", True), ("proteins", False), ("finance", False)):
        meaning = semantic._meanings[(model_id(), topic_text(*TOPICS[key]))]
        cosine = float(model.prototypes[column[meaning_topics[key].pk]] @ meaning)
        assert (cosine < 0.99) if moved else (cosine > 0.9999), (key, cosine)


def model_id():
    from papers.embeddings.encoder import get_encoder

    return get_encoder().model_id


@pytest.mark.django_db(transaction=True)
def test_papers_are_tagged_by_words_until_their_vectors_arrive(meaning_topics):
    paper = PaperFactory(title=PAPERS["gravity"][0], abstract=PAPERS["gravity"][1])
    papers_tag(paper_ids=[paper.pk])
    assert machine(paper) == set()
    # Storing the vector sends papers_embedded; the receiver queues tagging (eager here).
    embed_papers([paper.pk])
    assert machine(paper) == {(meaning_topics["gravity"].slug, SEMANTIC, PENDING)}


def damage(paper, how: str) -> None:
    """Replace ``paper``'s stored vector by a damaged one: NaNs, or cut short."""
    from papers.embeddings.vectors import vector_to_bytes
    from papers.models import PaperEmbedding

    vector = load_vectors([paper.pk])[paper.pk]
    damaged = np.full_like(vector, np.nan) if how == "nan" else vector[:100]
    PaperEmbedding.objects.filter(paper=paper).update(vector=vector_to_bytes(damaged))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["nan", "short"])
def test_a_damaged_stored_vector_is_left_out_of_the_model(meaning_topics, embedded, how):
    """A stored vector of NaNs or cut short (a damaged row) among the labels and the corpus:
    the model is built from the others, every prototype and shift finite, and tagging goes
    on."""
    papers_tag(paper_ids=[paper.pk for paper in embedded.values()])
    finance = meaning_topics["finance"]
    suggestion = Assignment.objects.get(paper=embedded["finance"], topic=finance)
    assignment_decide(assignment=suggestion, state=ACCEPTED, user=UserFactory())
    damage(embedded["finance"], how)
    model = semantic_active()
    assert model.metrics[finance.pk]["positives"] == 0
    assert np.isfinite(model.prototypes).all() and np.isfinite(model.bias).all()
    papers_tag(paper_ids=[embedded["gravity"].pk])
    assert machine(embedded["gravity"]) == {(meaning_topics["gravity"].slug, SEMANTIC, PENDING)}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["nan", "short"])
def test_a_paper_whose_stored_vector_is_damaged_is_tagged_by_its_words(
    meaning_topics, embedded, monkeypatch, how
):
    """A damaged stored vector in the batch being tagged and in the corpus the model is built
    from: its paper counts as one without a vector (its semantic suggestion is left as it
    is, not judged on NaN cosines), and the other papers of the batch are tagged by meaning.
    One such row used to stop every run that built the model (the corpus could not be
    stacked), or the run of its batch."""
    papers_tag(paper_ids=[paper.pk for paper in embedded.values()])
    finance = embedded["finance"]
    before = machine(finance)
    damage(finance, how)
    monkeypatch.setattr(semantic, "_built", None)  # built again, from the damaged corpus

    papers_tag(paper_ids=[paper.pk for paper in embedded.values()])

    assert machine(finance) == before == {(meaning_topics["finance"].slug, SEMANTIC, PENDING)}
    for key in ("gravity", "proteins"):
        assert machine(embedded[key]) == {(meaning_topics[key].slug, SEMANTIC, PENDING)}


@pytest.mark.django_db(transaction=True)
def test_each_curator_decision_counts_at_once_and_stays_final(meaning_topics, embedded):
    curator = UserFactory(username="ada")
    finance = meaning_topics["finance"]
    papers_tag(paper_ids=[paper.pk for paper in embedded.values()])
    suggestion = Assignment.objects.get(paper=embedded["finance"], topic=finance)
    assert semantic_active().metrics[finance.pk]["positives"] == 0

    assignment_decide(assignment=suggestion, state=ACCEPTED, user=curator)
    # No retraining: the next model built has the label.
    model = semantic_active()
    assert model.metrics[finance.pk]["positives"] == 1
    rejected = Assignment.objects.get(paper=embedded["gravity"])
    assignment_decide(assignment=rejected, state=REJECTED, user=curator)
    assert semantic_active().metrics[rejected.topic_id]["negatives"] == 1

    papers_tag(paper_ids=[paper.pk for paper in embedded.values()])
    rejected.refresh_from_db()
    suggestion.refresh_from_db()
    assert (rejected.state, suggestion.state) == (REJECTED, ACCEPTED)
    assert rejected.decided_by == suggestion.decided_by == curator
    # Later suggestions for the topic name their nearest accepted paper.
    other = PaperFactory(
        title="Herding among day traders",
        abstract="Brokerage data show investors buying the shares their peers bought.",
    )
    embed_papers([other.pk])
    evidence = Assignment.objects.get(paper=other, topic=finance).evidence
    assert evidence["nearest"] == [embedded["finance"].pk] and evidence["labels"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_rule_still_decides(meaning_topics, embedded):
    gravity = meaning_topics["gravity"]
    Topic.objects.filter(pk=gravity.pk).update(rule_query='"chirp"')
    papers_tag(paper_ids=[embedded["gravity"].pk])
    assignment = Assignment.objects.get(paper=embedded["gravity"], topic=gravity)
    assert (assignment.source, assignment.state, assignment.score) == ("rule", ACCEPTED, 1.0)
    assert assignment.evidence == {"rule": '"chirp"', "categories": False}


@pytest.mark.django_db(transaction=True)
def test_a_paper_a_rule_places_where_it_fits_is_not_also_suggested_elsewhere(meaning_topics):
    """A rule-placed paper whose rule topic fits it about as well as its best topic has a
    home: no suggestion for the best one besides. A rule placing it where it does not fit
    leaves its best topic suggested."""
    best = topic_create(
        name="Black Hole Mergers",
        description="Compact binaries that coalesce, and the signals they send to detectors.",
    )
    near = topic_create(
        name="Interferometric Detectors",
        description="Laser interferometers and the signals they record.",
    )
    paper = PaperFactory(title=PAPERS["gravity"][0], abstract=PAPERS["gravity"][1])
    embed_papers([paper.pk])
    proteins = meaning_topics["proteins"]
    model = semantic_active()
    fit = model.fits(load_vectors([paper.pk])[paper.pk][None, :])[0]
    column = {pk: index for index, pk in enumerate(model.topic_ids.tolist())}
    assert fit.argmax() == column[best.pk]
    assert fit.max() - semantic.SUGGEST_MARGIN > fit[column[near.pk]]
    assert fit[column[near.pk]] >= fit.max() - semantic.CLASSIFIER_VETO_GAP
    assert fit[column[proteins.pk]] < fit.max() - semantic.CLASSIFIER_VETO_GAP

    Topic.objects.filter(pk=near.pk).update(rule_query='"chirp"')
    papers_tag(paper_ids=[paper.pk])
    assert machine(paper) == {(near.slug, "rule", ACCEPTED)}

    Topic.objects.filter(pk=near.pk).update(rule_query="")
    Topic.objects.filter(pk=proteins.pk).update(rule_query='"chirp"')
    papers_tag(paper_ids=[paper.pk])
    assert machine(paper) == {(proteins.slug, "rule", ACCEPTED), (best.slug, SEMANTIC, PENDING)}


@pytest.mark.django_db(transaction=True)
def test_retraining_twice_on_the_same_labels_never_widens_a_topic(settings):
    """The demo's case: the reference page's topics and papers (import assignments), papers far
    from them (a 2008 finance paper among them), everything embedded and tagged; retraining
    (classifier, then re-tagging with rules, classifier and semantic) twice grows no topic's
    accepted papers, and the finance paper never enters LLM Agent Training."""
    settings.TOPICS_CLASSIFIER_MIN_POSITIVES = 3
    call_command("load_categories", verbosity=0)
    call_command("import_reference_page", verbosity=0)
    finance = PaperFactory(
        title="Herding and volatility in the 2008 stock market crash",
        abstract="We study how investors' herding amplified price volatility in equity "
        "markets during the 2008 financial crisis, with daily data on bank shares.",
        submitted="2008-11-03",
    )
    far = [PaperFactory(title=title, abstract=abstract) for title, abstract in PAPERS.values()]
    all_ids = list(Paper.objects.values_list("pk", flat=True))
    embed_papers(all_ids)
    papers_tag(paper_ids=all_ids)

    def accepted():
        found: dict[int, set[int]] = {}
        for topic_id, paper_id in Assignment.objects.filter(state=ACCEPTED).values_list(
            "topic_id", "paper_id"
        ):
            found.setdefault(topic_id, set()).add(paper_id)
        return found

    before = accepted()
    classifier_train()
    once = accepted()
    classifier_train()
    twice = accepted()
    for topic_id in set(once) | set(twice):
        assert twice.get(topic_id, set()) <= once.get(topic_id, set()), topic_id
    root = Topic.objects.get(slug="llm-agent-training")
    for state_sets in (before, once, twice):
        assert finance.pk not in state_sets.get(root.pk, set())
        assert not {paper.pk for paper in far} & state_sets.get(root.pk, set())
    pending = Assignment.objects.filter(state=PENDING).count()
    assert pending <= len(all_ids) // 4, pending


@pytest.mark.django_db(transaction=True)
def test_a_paper_a_rule_places_in_a_subtopic_is_not_suggested_for_its_parent(
    meaning_topics, embedded
):
    gravity = meaning_topics["gravity"]
    astronomy = topic_create(name="Gravitational Wave Astronomy.", description=TOPICS["gravity"][1])
    topic_move(topic=gravity, parent=astronomy)
    paper = embedded["gravity"]
    papers_tag(paper_ids=[paper.pk])
    assert (astronomy.slug, SEMANTIC, PENDING) in machine(paper)  # near in meaning

    Topic.objects.filter(pk=gravity.pk).update(rule_query='"chirp"')
    papers_tag(paper_ids=[paper.pk])
    # The parent shows its subtopic's papers: nothing is written under it.
    assert machine(paper) == {(gravity.slug, "rule", ACCEPTED)}
