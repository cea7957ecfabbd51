"""The follows page: listing, saved-search form with parse errors, digest frequency, unfollow;
only the user's own follows; a query count that does not grow with the number of follows."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from follows.models import Follow
from follows.services import follow_create, follow_search_create

pytestmark = pytest.mark.django_db

LIST = "/follows/"


@pytest.fixture
def signed_in(client, reader):
    client.force_login(reader)
    return client


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/follows/"),
        ("get", "/follows/export.json"),
        ("post", "/follows/searches/"),
        ("post", "/follows/1/frequency/"),
        ("post", "/follows/1/delete/"),
        ("post", "/follows/import/"),
    ],
)
def test_anonymous_users_are_sent_to_log_in(client, method, url):
    response = getattr(client, method)(url, {"query": "agents", "digest_frequency": "off"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/follows/")
    assert not Follow.objects.exists()


def test_the_page_lists_topics_and_searches_with_scopes(
    signed_in, reader, other_reader, taxonomy, categories
):
    follow_create(user=reader, topic=taxonomy["tool-use"])
    follow_search_create(
        user=reader, query="<b>agents</b>", topics=["agents"], categories=["cs.LG"]
    )
    follow_create(user=other_reader, topic=taxonomy["vision"])

    page = signed_in.get(LIST).content.decode()

    assert '<a href="/topics/tool-use/">Tool use</a>' in page
    assert "&lt;b&gt;agents&lt;/b&gt;" in page and "<b>agents</b>" not in page
    assert '<a href="/topics/agents/">Agents</a>' in page
    assert 'title="Category cs.LG">cs.LG</abbr>' in page
    assert "Vision" not in page  # someone else's follow


def test_page_queries_do_not_grow_with_the_number_of_follows(
    signed_in, reader, taxonomy, categories
):
    follow_create(user=reader, topic=taxonomy["agents"])
    follow_search_create(user=reader, query="agents", topics=["agents"], categories=["cs.CL"])
    signed_in.get(LIST)  # the first visit creates the private feed's key
    with CaptureQueriesContext(connection) as few:
        assert signed_in.get(LIST).status_code == 200
    follow_create(user=reader, topic=taxonomy["tool-use"])
    follow_create(user=reader, topic=taxonomy["vision"])
    for n in range(10):
        follow_search_create(
            user=reader, query=f"agents {n}", topics=["agents", "vision"], categories=["cs.LG"]
        )
    with CaptureQueriesContext(connection) as many:
        page = signed_in.get(LIST).content.decode()
    assert page.count('name="digest_frequency"') == 14 + 1  # one per follow + the new-search form
    assert len(many.captured_queries) == len(few.captured_queries)


def test_a_saved_search_is_added_from_the_page(signed_in, reader, taxonomy, categories):
    response = signed_in.post(
        "/follows/searches/",
        {
            "query": ' "tool use"  OR agent* ',
            "topics": "agents, tool-use",
            "categories": "cs.CL cs.LG",
            "digest_frequency": "daily",
        },
    )
    assert response.status_code == 302 and response["Location"] == LIST
    follow = Follow.objects.get(user=reader)
    assert (follow.query, follow.digest_frequency) == ('"tool use" OR agent*', "daily")
    assert {t.slug for t in follow.topic_scope.all()} == {"agents", "tool-use"}
    page = signed_in.get(LIST).content.decode()
    # The query carries quotes of its own: shown once, not wrapped in a second pair.
    assert "You now follow the search &quot;tool use&quot; OR agent*." in page


def test_following_a_followed_search_again_says_nothing_changed(
    signed_in, reader, taxonomy, categories
):
    search = {"query": "memory", "topics": "agents", "digest_frequency": "daily"}
    signed_in.post("/follows/searches/", search)
    signed_in.get(LIST)  # the first message is read

    response = signed_in.post("/follows/searches/", {**search, "topics": "", "categories": "cs.CL"})

    assert response.status_code == 302
    page = signed_in.get(LIST).content.decode()
    assert "You now follow" not in page
    assert "You already follow the search “memory”" in page
    follow = Follow.objects.get(user=reader)
    assert {t.slug for t in follow.topic_scope.all()} == {"agents"}
    assert not follow.category_scope.exists()


def test_a_query_that_does_not_parse_is_shown_next_to_the_field(signed_in, categories):
    response = signed_in.post(
        "/follows/searches/",
        {
            "query": "agents AND (tools",
            "categories": "cs.CL, cs.NOPE",
            "digest_frequency": "weekly",
        },
    )

    assert response.status_code == 400
    page = response.content.decode()
    query_field = page.split('name="query"')[0].rsplit("<div", 1)[1]
    assert "The query does not parse: &#x27;(&#x27; is never closed at position 11." in query_field
    assert "Unknown arXiv category: cs.NOPE." in page
    assert 'value="agents AND (tools"' in page  # what was typed is kept
    assert not Follow.objects.exists()


def test_digest_frequency_and_unfollow_of_own_follows(signed_in, reader, taxonomy):
    follow = follow_create(user=reader, topic=taxonomy["agents"])

    response = signed_in.post(f"/follows/{follow.pk}/frequency/", {"digest_frequency": "daily"})
    assert response.status_code == 302
    follow.refresh_from_db()
    assert follow.digest_frequency == "daily"
    assert (
        signed_in.post(f"/follows/{follow.pk}/frequency/", {"digest_frequency": "x"}).status_code
        == 400
    )
    follow.refresh_from_db()
    assert follow.digest_frequency == "daily"
    page = signed_in.get(LIST).content.decode()
    assert '<option value="daily" selected>Daily</option>' in page
    assert "Digest for Agents: daily." in page

    assert signed_in.post(f"/follows/{follow.pk}/delete/").status_code == 302
    assert not Follow.objects.exists()


def test_another_users_follow_is_a_404_and_stays_as_it_was(signed_in, other_reader, taxonomy):
    theirs = follow_create(user=other_reader, topic=taxonomy["agents"])
    search = follow_search_create(user=other_reader, query="agents")

    for follow in (theirs, search):
        assert (
            signed_in.post(
                f"/follows/{follow.pk}/frequency/", {"digest_frequency": "off"}
            ).status_code
            == 404
        )
        assert signed_in.post(f"/follows/{follow.pk}/delete/").status_code == 404
    assert set(Follow.objects.values_list("pk", "digest_frequency")) == {
        (theirs.pk, "weekly"),
        (search.pk, "weekly"),
    }
    assert signed_in.get(f"/follows/{theirs.pk}/delete/").status_code == 405
