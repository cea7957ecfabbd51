"""The feed page and the private Atom feed list a paper stored under two ids once
(``papers.duplicates``): the arXiv one."""

import pytest
from django.urls import reverse

from follows.feed_selectors import feed_card_papers
from follows.feed_services import private_feed_token
from follows.models import FeedState, Follow
from papers.duplicates import duplicate_decide, duplicates_detect
from papers.models import PaperDuplicate

from .conftest import assign, make_paper

pytestmark = pytest.mark.django_db

TITLE = "Tool use in language model agents through learned API calls"
ABSTRACT = (
    "Language model agents call external tools through APIs. We train a policy that decides "
    "when to call a calculator, a search engine or a calendar, from 2,000 self-annotated "
    "traces, and gain 12 points on arithmetic word problems over prompting alone."
)


@pytest.fixture
def twins(reader, taxonomy, categories):
    Follow.objects.create(user=reader, topic=taxonomy["agents"])
    copy = make_paper(TITLE.lower(), abstract=ABSTRACT, arxiv_id=None, import_key="local:tools")
    original = make_paper(TITLE, abstract=ABSTRACT + " Code is released.")
    other = make_paper("Vision transformers for agents", abstract="Agents see images.")
    for paper in (copy, original, other):
        assign(paper, taxonomy["tool-use"])
    duplicates_detect(paper_ids=[copy.pk])
    assert PaperDuplicate.objects.filter(paper=copy, original=original).exists()
    return original, copy, other


def test_the_feed_lists_the_arxiv_paper_once(reader, twins, client):
    original, copy, other = twins
    feed = feed_card_papers(user=reader)
    assert sorted(card.pk for card in feed[0:30]) == sorted([original.pk, other.pk])
    assert feed.count() == 2
    client.force_login(reader)
    page = client.get(reverse("feed:index")).content.decode()
    assert original.get_absolute_url() in page and copy.get_absolute_url() not in page


def test_the_private_atom_feed_has_one_entry_and_a_rejected_pair_has_two(reader, twins, client):
    original, copy, _ = twins
    state = FeedState.objects.get_or_create(user=reader)[0]
    url = reverse("feed:atom", kwargs={"token": private_feed_token(state=state)})
    atom = client.get(url).content.decode()
    assert atom.count("<entry>") == 2 and copy.get_absolute_url() not in atom
    duplicate_decide(duplicate=PaperDuplicate.objects.get(), decision="rejected", user=reader)
    atom = client.get(url).content.decode()
    assert atom.count("<entry>") == 3 and copy.get_absolute_url() in atom
