"""The feed page ranks each day's papers by relevance (follows matched, then closeness to the
saved papers) and shows each abstract trimmed to about 300 characters."""

import datetime as dt
import re

import numpy as np
import pytest

from follows.models import Follow, LibraryItem
from papers.models import PaperEmbedding

from .conftest import assign, make_paper

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 9, 29)
DIMENSION = 4


def embed(paper, direction):
    vector = np.asarray(direction, dtype="<f4")
    vector = vector / np.linalg.norm(vector)
    PaperEmbedding.objects.create(
        paper=paper,
        model="test-model",
        dimension=DIMENSION,
        text_sha256="0" * 64,
        vector=vector.astype("<f4").tobytes(),
    )
    return paper


def titles_in(html):
    return re.findall(r'<h3 class="card-title"><a href="[^"]*">([^<]*)</a></h3>', html)


def test_each_day_lists_the_most_relevant_papers_first(reader, taxonomy, client):
    Follow.objects.create(user=reader, topic=taxonomy["agents"])
    Follow.objects.create(user=reader, topic=taxonomy["tool-use"])
    saved = embed(make_paper("Saved", submitted=dt.date(2026, 8, 1)), [1, 0, 0, 0])
    LibraryItem.objects.create(user=reader, paper=saved)
    # Created in this order, so by id (newest first) they would come reversed.
    both = embed(make_paper("Matches both follows", submitted=DAY), [0, 1, 0, 0])
    close = embed(make_paper("Close to the saved paper", submitted=DAY), [1, 0.1, 0, 0])
    far = embed(make_paper("Far from the saved paper", submitted=DAY), [0, 0, 1, 0])
    no_vector = make_paper("No vector yet", submitted=DAY)
    older = embed(make_paper("An older day", submitted=DAY - dt.timedelta(days=1)), [1, 0, 0, 0])
    assign(both, taxonomy["tool-use"])
    for paper in (close, far, no_vector, older):
        assign(paper, taxonomy["agents"])

    client.force_login(reader)
    html = client.get("/feed/").content.decode()
    assert titles_in(html) == [
        "Matches both follows",
        "Close to the saved paper",
        "Far from the saved paper",
        "No vector yet",
        "An older day",
    ]


def test_the_feed_shows_each_abstract_trimmed_on_a_word_boundary(reader, taxonomy, client):
    Follow.objects.create(user=reader, topic=taxonomy["agents"])
    abstract = " ".join(f"word{n:03d}" for n in range(200))
    assign(make_paper("Long abstract", abstract=abstract, submitted=DAY), taxonomy["agents"])
    client.force_login(reader)
    html = client.get("/feed/").content.decode()
    teaser = re.search(r'<span class="teaser">([^<]*)</span>', html).group(1)
    assert 200 <= len(teaser) <= 302 and teaser.endswith(" …")
    assert re.fullmatch(r"(word\d{3} )+…", teaser)
