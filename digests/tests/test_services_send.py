"""Sending digests through Django's SMTP backend to a local SMTP server: what arrives, once."""

import datetime as dt
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.html import escape

from digests.models import Digest, DigestItem
from digests.selectors import digest_sections
from digests.services import digest_send, digests_send_again
from follows.services import follow_create, follow_search_create, search_matches_create
from papers.tests.factories import PaperFactory

from .conftest import (
    SITE_URL,
    AssignmentFactory,
    TopicFactory,
    UserFactory,
    free_port,
    links,
    paper_in,
    parts,
    use_smtp,
)

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 30)
NEXT_DAY = DAY + dt.timedelta(days=1)


def test_one_email_per_user_and_period_with_text_html_links_and_headers(smtp_server):
    user = UserFactory()
    agents, robots, poetry = (
        TopicFactory(name="Agents"),
        TopicFactory(name="Robots"),
        TopicFactory(),
    )
    follow_create(user=user, topic=agents, digest_frequency="daily")
    follow_create(user=user, topic=robots, digest_frequency="daily")
    follow_create(user=user, topic=poetry, digest_frequency="weekly")
    agent_papers = [paper_in(agents), paper_in(agents)]
    robot_paper = paper_in(robots)
    paper_in(poetry)  # weekly: not in the daily digest

    digest = digest_send(user=user, period="daily", period_end=DAY)
    again = digest_send(user=user, period="daily", period_end=DAY)

    assert len(smtp_server.messages) == 1
    message = smtp_server.messages[0]
    assert message["To"] == user.email
    assert message["Subject"] == "topicsite: 3 new papers in 2 follows"
    assert (digest.pk, digest.status, digest.paper_count, digest.follow_count) == (
        again.pk,
        Digest.Status.SENT,
        3,
        2,
    )
    assert again.status == Digest.Status.SENT and again.attempts == 1
    assert message["Message-ID"].strip() == digest.message_id
    text, html = parts(message)
    for paper in [*agent_papers, robot_paper]:
        url = f"{SITE_URL}/papers/{paper.arxiv_id}/"
        assert url in links(html)
        assert url in text
        assert paper.title in text and paper.primary_category.code in text
        author = paper.authorships.first().author.name
        assert author in text and author in html
    assert f"{SITE_URL}/follows/" in links(html)
    assert "Agents" in text and "Robots" in text
    unsubscribe_all = f"{SITE_URL}/digests/unsubscribe/"
    assert re.fullmatch(
        rf"<{re.escape(unsubscribe_all)}[^>]+/>", message["List-Unsubscribe"].strip()
    )
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # On the wire the URL is plain (no RFC 2047 encoded words), as RFC 2369 requires.
    raw_headers = smtp_server.raw[0].split(b"\r\n\r\n", 1)[0].decode("ascii")
    unfolded = re.sub(r"[ \t]*\r\n[ \t]+", " ", raw_headers)
    assert f"List-Unsubscribe: {message['List-Unsubscribe'].strip()}" in unfolded
    assert message["List-Unsubscribe"].strip()[1:-1] in links(html)
    assert set(DigestItem.objects.filter(digest=digest).values_list("paper_id", flat=True)) == {
        p.pk for p in [*agent_papers, robot_paper]
    }


def test_a_paper_is_never_sent_twice_across_follows_periods_and_frequencies(smtp_server):
    user = UserFactory()
    parent = TopicFactory(name="Parent")
    child = TopicFactory(name="Child", parent=parent)
    follow_create(user=user, topic=parent, digest_frequency="daily")
    follow_create(user=user, topic=child, digest_frequency="daily")
    other = TopicFactory(name="Weekly topic")
    follow_create(user=user, topic=other, digest_frequency="weekly")
    shared = paper_in(child)  # matches both daily follows (parent shows its descendants)
    AssignmentFactory(paper=shared, topic=other)  # and the weekly follow

    first = digest_send(user=user, period="daily", period_end=DAY)
    later = paper_in(child)
    second = digest_send(user=user, period="daily", period_end=NEXT_DAY)
    weekly = digest_send(user=user, period="weekly", period_end=dt.date(2026, 11, 30))

    assert (first.paper_count, second.paper_count) == (1, 1)
    assert weekly.status == Digest.Status.EMPTY
    assert len(smtp_server.messages) == 2
    first_text, _ = parts(smtp_server.messages[0])
    second_text, _ = parts(smtp_server.messages[1])
    assert first_text.count(shared.title) == 1
    assert shared.title not in second_text and later.title in second_text
    assert DigestItem.objects.filter(user=user, paper=shared).count() == 1


def test_withdrawn_and_deleted_papers_are_not_in_digests(smtp_server):
    user = UserFactory()
    agents = TopicFactory(name="Agents")
    follow_create(user=user, topic=agents, digest_frequency="daily")
    search = follow_search_create(user=user, query="agents", digest_frequency="daily")
    kept = paper_in(agents, title="Agents that plan")
    withdrawn = paper_in(agents, title="Agents, withdrawn", withdrawn=True)
    deleted = PaperFactory(title="Agents, deleted upstream", deleted_at=timezone.now())
    search_matches_create(paper_ids=[kept.pk, withdrawn.pk, deleted.pk])
    assert search.matches.count() == 3  # the search matches all three

    digest = digest_send(user=user, period="daily", period_end=DAY)

    assert digest.paper_count == 1
    text, _ = parts(smtp_server.messages[0])
    assert kept.title in text
    assert withdrawn.title not in text and deleted.title not in text
    assert list(DigestItem.objects.values_list("paper_id", flat=True)) == [kept.pk]


def test_saved_search_follows_are_in_the_digest(smtp_server):
    user = UserFactory()
    follow = follow_search_create(user=user, query='"tool use"', digest_frequency="daily")
    hit = PaperFactory(title="Tool use in language agents", abstract="We study tool use.")
    PaperFactory(title="Unrelated", abstract="Nothing here.")
    search_matches_create(paper_ids=[hit.pk], follow_ids=[follow.pk])

    digest = digest_send(user=user, period="daily", period_end=DAY)

    assert digest.paper_count == 1
    text, _ = parts(smtp_server.messages[0])
    # The query's own quotes are shown once (Follow.label), not wrapped in another pair.
    assert '== "tool use" (1 new) ==' in text and '“"tool use"”' not in text
    assert hit.title in text and "Unrelated" not in text


def test_an_empty_period_sends_nothing_and_the_next_one_still_sends(smtp_server):
    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")

    empty = digest_send(user=user, period="daily", period_end=DAY)
    paper = paper_in(topic)
    sent = digest_send(user=user, period="daily", period_end=NEXT_DAY)

    assert (empty.status, empty.paper_count, empty.sent_at) == (Digest.Status.EMPTY, 0, None)
    assert sent.status == Digest.Status.SENT
    assert len(smtp_server.messages) == 1
    assert paper.title in parts(smtp_server.messages[0])[0]


def test_frequency_off_and_papers_from_before_the_follow_are_left_out(smtp_server):
    user = UserFactory()
    old_topic, off_topic, new_topic = TopicFactory(), TopicFactory(), TopicFactory()
    old_paper = paper_in(new_topic)
    follow_create(user=user, topic=off_topic, digest_frequency="off")
    follow_create(user=user, topic=new_topic, digest_frequency="daily")
    paper_in(off_topic)
    fresh = paper_in(new_topic)
    assert old_topic.pk  # a topic nobody follows

    digest = digest_send(user=user, period="daily", period_end=DAY)

    assert list(digest.items.values_list("paper_id", flat=True)) == [fresh.pk]
    assert old_paper.title not in parts(smtp_server.messages[0])[0]


def test_hostile_titles_are_escaped_in_html_and_plain_in_text(smtp_server):
    user = UserFactory()
    topic = TopicFactory(name="<b>Topic</b>")
    follow_create(user=user, topic=topic, digest_frequency="daily")
    title = '<script>alert("x")</script> & <a href="https://evil.example">click</a>'
    paper_in(topic, title=title)

    digest_send(user=user, period="daily", period_end=DAY)

    text, html = parts(smtp_server.messages[0])
    assert title in text and "<b>Topic</b>" in text
    assert "<script>" not in html and 'evil.example">' not in html and "<b>Topic" not in html
    assert escape(title) in html and escape("<b>Topic</b>") in html


def test_smtp_failure_marks_failed_and_the_retry_sends_the_same_papers_once(smtp_server, settings):
    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")
    paper = paper_in(topic)
    working_port = settings.EMAIL_PORT
    use_smtp(settings, free_port())  # nothing listens there

    with pytest.raises(OSError):
        digest_send(user=user, period="daily", period_end=DAY)

    failed = Digest.objects.get(user=user)
    assert (failed.status, failed.attempts, failed.paper_count) == (Digest.Status.FAILED, 1, 1)
    assert "Connection refused" in failed.last_error or "ConnectionRefused" in failed.last_error
    assert smtp_server.messages == []
    late = paper_in(topic)  # arrives between the attempts: not added to this digest

    use_smtp(settings, working_port)
    retried = digest_send(user=user, period="daily", period_end=DAY)
    digest_send(user=user, period="daily", period_end=DAY)

    assert (retried.pk, retried.status, retried.attempts) == (failed.pk, Digest.Status.SENT, 2)
    assert len(smtp_server.messages) == 1
    text, _ = parts(smtp_server.messages[0])
    assert paper.title in text and late.title not in text
    assert smtp_server.messages[0]["Message-ID"].strip() == failed.message_id


def test_a_digest_left_sending_is_never_resent_blindly(smtp_server, settings):
    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")
    paper_in(topic)
    # What a worker that died after the mail server accepted the message leaves behind.
    working_port = settings.EMAIL_PORT
    use_smtp(settings, free_port())
    with pytest.raises(OSError):
        digest_send(user=user, period="daily", period_end=DAY)
    stuck = Digest.objects.get(user=user)
    Digest.objects.filter(pk=stuck.pk).update(
        status=Digest.Status.SENDING, sending_started_at=timezone.now()
    )
    use_smtp(settings, working_port)

    fresh = digest_send(user=user, period="daily", period_end=DAY)
    assert fresh.status == Digest.Status.SENDING

    old = timezone.now() - dt.timedelta(minutes=settings.DIGESTS_SENDING_STALE_MINUTES + 1)
    Digest.objects.filter(pk=stuck.pk).update(sending_started_at=old)
    stale = digest_send(user=user, period="daily", period_end=DAY)
    again = digest_send(user=user, period="daily", period_end=DAY)

    assert (stale.status, again.status) == (Digest.Status.UNCONFIRMED,) * 2
    assert smtp_server.messages == []

    # An operator who found it never left sends it again, once.
    assert digests_send_again(digest_ids=[stuck.pk]) == [stuck.pk]
    resent = digest_send(user=user, period="daily", period_end=DAY)
    digest_send(user=user, period="daily", period_end=DAY)
    assert resent.status == Digest.Status.SENT
    assert len(smtp_server.messages) == 1
    assert digests_send_again(digest_ids=[stuck.pk]) == []


def test_bad_arguments_are_refused_with_the_reason(smtp_server):
    user = UserFactory(email="")

    with pytest.raises(ValueError, match="no email address"):
        digest_send(user=user, period="daily", period_end=DAY)
    with pytest.raises(ValueError, match="Unknown digest period 'hourly'"):
        digest_send(user=UserFactory(), period="hourly", period_end=DAY)
    assert not Digest.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_sends_deliver_one_email(smtp_server):
    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")
    for _ in range(3):
        paper_in(topic)

    def send():
        try:
            return digest_send(user=user, period="daily", period_end=DAY).status
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=4) as pool:
        statuses = list(pool.map(lambda _: send(), range(4)))

    assert len(smtp_server.messages) == 1
    assert Digest.objects.get(user=user).status == Digest.Status.SENT
    assert DigestItem.objects.filter(user=user).count() == 3
    assert Digest.Status.SENT in statuses
    assert set(statuses) <= {Digest.Status.SENT, Digest.Status.SENDING}


def test_the_email_content_takes_the_same_queries_for_few_or_many_papers(smtp_server, settings):
    settings.DIGESTS_PAPERS_PER_FOLLOW = 5
    counts = []
    for size in (1, 12):
        user = UserFactory()
        topics = [TopicFactory(), TopicFactory()]
        for topic in topics:
            follow_create(user=user, topic=topic, digest_frequency="daily")
            for _ in range(size):
                paper_in(topic)
        digest = digest_send(user=user, period="daily", period_end=DAY)
        with CaptureQueriesContext(connection) as queries:
            sections = digest_sections(digest=digest)
        counts.append(len(queries))
        assert [len(s.papers) + s.more for s in sections] == [size, size]
        assert all(len(s.papers) == min(size, 5) for s in sections)

    # Items, cards, the follows matching them, the saved papers' vectors: fixed.
    assert counts[0] == counts[1] <= 9
    text, _ = parts(smtp_server.messages[-1])
    assert text.count("... and 7 more") == 2
