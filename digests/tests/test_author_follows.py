"""A followed author's new papers go into the digest, in a section of their own that links to
the author's page."""

import datetime as dt

import pytest

from digests.services import digest_send
from follows.services import follow_author_create
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory

from .conftest import SITE_URL, UserFactory, links, parts

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 30)


def test_followed_authors_new_papers_are_in_the_digest(smtp_server):
    user = UserFactory()
    author = AuthorFactory(name="Ada Lovelace")
    follow_author_create(user=user, author=author, digest_frequency="daily")
    theirs = PaperFactory(title="Notes on the analytical engine")
    AuthorshipFactory(paper=theirs, author=author, position=2)
    AuthorshipFactory(paper=PaperFactory(title="Someone else's paper"), position=0)

    digest = digest_send(user=user, period="daily", period_end=DAY)

    assert digest.paper_count == 1
    text, html = parts(smtp_server.messages[0])
    assert "Ada Lovelace" in text and theirs.title in text
    assert "Someone else's paper" not in text
    assert f"{SITE_URL}{author.get_absolute_url()}" in links(html)
