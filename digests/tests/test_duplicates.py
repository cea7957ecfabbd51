"""Digests send a paper stored under two ids once (``papers.duplicates``): the original when
both arrive in one period, neither id again once one of them was sent."""

import datetime as dt

import pytest

from digests.models import Digest, DigestItem
from digests.services import digest_send
from follows.services import follow_create
from papers.duplicates import duplicates_detect
from papers.models import PaperDuplicate

from .conftest import TopicFactory, UserFactory, paper_in, parts

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 30)
TITLE = "Ballistic phonon transport in suspended graphene ribbons"
ABSTRACT = (
    "We measure the thermal conductivity of suspended graphene ribbons between 10 and 300 K "
    "with a Raman thermometry method, and find a crossover from ballistic to diffusive phonon "
    "transport at ribbon widths near 200 nm. Edge roughness limits the conductivity below it."
)


def _copy(topic):
    """A local copy of the graphene paper, lightly edited, in ``topic``."""
    return paper_in(
        topic,
        title=TITLE.replace("ribbons", "ribons"),
        abstract=ABSTRACT + " v2: references updated.",
        arxiv_id=None,
        import_key="reference:graphene",
    )


def test_both_ids_in_one_period_send_the_arxiv_paper_once(smtp_server):
    user = UserFactory()
    topic = TopicFactory(name="Graphene")
    follow_create(user=user, topic=topic, digest_frequency="daily")
    copy = _copy(topic)
    original = paper_in(topic, title=TITLE, abstract=ABSTRACT)
    other = paper_in(topic, title="Flat bands in twisted bilayer graphene")
    duplicates_detect(paper_ids=[original.pk])
    assert PaperDuplicate.objects.filter(paper=copy, original=original).exists()

    digest = digest_send(user=user, period="daily", period_end=DAY)

    assert digest.paper_count == 2
    assert set(DigestItem.objects.filter(digest=digest).values_list("paper_id", flat=True)) == {
        original.pk,
        other.pk,
    }
    text, html = parts(smtp_server.messages[0])
    # Listed once (the abstract's excerpt under it may name the same words).
    assert (
        text.count("suspended graphene ribbons\r\n") + text.count("suspended graphene ribons") == 1
    )
    assert original.get_absolute_url() in html and copy.get_absolute_url() not in html


def test_a_twin_of_a_paper_sent_before_is_not_sent_again(smtp_server):
    user = UserFactory()
    topic = TopicFactory(name="Graphene")
    follow_create(user=user, topic=topic, digest_frequency="daily")
    copy = _copy(topic)
    first = digest_send(user=user, period="daily", period_end=DAY)
    # The arXiv record arrives the next day and is linked to the copy already sent.
    original = paper_in(topic, title=TITLE, abstract=ABSTRACT)
    duplicates_detect(paper_ids=[original.pk])

    second = digest_send(user=user, period="daily", period_end=DAY + dt.timedelta(days=1))

    assert first.paper_count == 1 and second.status == Digest.Status.EMPTY
    assert list(DigestItem.objects.filter(user=user).values_list("paper_id", flat=True)) == [
        copy.pk
    ]
    assert len(smtp_server.messages) == 1
