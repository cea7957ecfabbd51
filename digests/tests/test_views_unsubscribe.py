"""One-click unsubscribe from the links of a digest that arrived over SMTP, without a session."""

import datetime as dt
import re
import time
from urllib.parse import urlsplit

import pytest
from django.core import signing
from django.test import Client

from digests.models import Digest
from digests.services import digest_send
from digests.tokens import SALT, unsubscribe_token_make
from follows.feed_services import private_feed_token
from follows.models import FeedState, Follow
from follows.services import follow_create

from .conftest import TopicFactory, UserFactory, links, paper_in, parts

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 30)


@pytest.fixture
def anonymous():
    """A browser without a session that enforces CSRF like a real one."""
    return Client(enforce_csrf_checks=True)


def path_of(url: str) -> str:
    return urlsplit(url).path


def send_first_digest(smtp_server):
    user = UserFactory()
    agents, robots = TopicFactory(name="Agents"), TopicFactory(name="Robots")
    agents_follow = follow_create(user=user, topic=agents, digest_frequency="daily")
    robots_follow = follow_create(user=user, topic=robots, digest_frequency="daily")
    paper_in(agents)
    paper_in(robots)
    digest_send(user=user, period="daily", period_end=DAY)
    message = smtp_server.messages[-1]
    return user, agents, robots, agents_follow, robots_follow, message


def stop_link(html: str, label: str) -> str:
    match = re.search(rf'<a href="([^"]+)"[^>]*>Stop digests for {re.escape(label)}</a>', html)
    assert match, f"no unsubscribe link for {label}"
    return links(match.group(0))[0]


def test_unsubscribe_one_follow_from_the_emails_link(smtp_server, anonymous):
    user, agents, robots, agents_follow, robots_follow, message = send_first_digest(smtp_server)
    _, html = parts(message)
    url = path_of(stop_link(html, "Agents"))

    page = anonymous.get(url)

    # A GET (what mail scanners do) only asks.
    assert page.status_code == 200
    content = page.content.decode()
    assert "Stop digest emails for Agents?" in content and 'method="post"' in content
    agents_follow.refresh_from_db()
    assert agents_follow.digest_frequency == "daily"

    done = anonymous.post(url)

    assert done.status_code == 200
    assert "Digest emails stopped for Agents" in done.content.decode()
    assert dict(
        Follow.objects.filter(user=user).values_list("topic__name", "digest_frequency")
    ) == {
        "Agents": "off",
        "Robots": "daily",
    }
    # The next digest carries Robots' new papers only.
    agents_paper, robots_paper = paper_in(agents), paper_in(robots)
    digest_send(user=user, period="daily", period_end=DAY + dt.timedelta(days=1))
    text, _ = parts(smtp_server.messages[-1])
    assert robots_paper.title in text and agents_paper.title not in text
    assert len(smtp_server.messages) == 2


def test_one_click_post_of_list_unsubscribe_stops_every_follow(smtp_server, anonymous):
    user, agents, robots, *_, message = send_first_digest(smtp_server)
    other_user = UserFactory()
    other_follow = follow_create(user=other_user, topic=agents, digest_frequency="daily")
    url = path_of(message["List-Unsubscribe"].strip()[1:-1])

    # RFC 8058: the mail client POSTs List-Unsubscribe=One-Click, with no cookie or CSRF token.
    response = anonymous.post(
        url,
        "List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 200
    assert "All digest emails stopped" in response.content.decode()
    assert set(Follow.objects.filter(user=user).values_list("digest_frequency", flat=True)) == {
        "off"
    }
    other_follow.refresh_from_db()
    assert other_follow.digest_frequency == "daily"
    paper_in(agents)
    nothing = digest_send(user=user, period="daily", period_end=DAY + dt.timedelta(days=1))
    assert nothing.status == Digest.Status.EMPTY
    assert len(smtp_server.messages) == 1
    # Posting again is harmless.
    assert anonymous.post(url).status_code == 200


def test_tampered_token_gets_a_clear_page(smtp_server, anonymous):
    *_, message = send_first_digest(smtp_server)
    url = path_of(message["List-Unsubscribe"].strip()[1:-1])
    tampered = url.replace("/unsubscribe/eyJ", "/unsubscribe/eyK")

    for method in (anonymous.get, anonymous.post):
        response = method(tampered)
        assert response.status_code == 400
        assert "This unsubscribe link is not valid" in response.content.decode()
    assert set(Follow.objects.values_list("digest_frequency", flat=True)) == {"daily"}


class _OldSigner(signing.TimestampSigner):
    """Signs as if it were ``age`` seconds ago."""

    age = 0

    def timestamp(self):
        return signing.b62_encode(int(time.time()) - self.age)


def test_expired_token_gets_a_clear_page_and_changes_nothing(settings, anonymous):
    user = UserFactory()
    follow_create(user=user, topic=TopicFactory(), digest_frequency="weekly")
    signer = _OldSigner(salt=SALT)
    signer.age = (settings.DIGESTS_UNSUBSCRIBE_MAX_AGE_DAYS + 1) * 24 * 3600
    token = signer.sign_object({"user": user.pk, "follow": None})

    response = anonymous.post(f"/digests/unsubscribe/{token}/")

    assert response.status_code == 400
    assert "This unsubscribe link has expired" in response.content.decode()
    assert Follow.objects.get(user=user).digest_frequency == "weekly"


def test_tokens_for_a_removed_follow_or_user_get_a_clear_page(anonymous):
    user = UserFactory()
    follow = follow_create(user=user, topic=TopicFactory(), digest_frequency="daily")
    follow_token = unsubscribe_token_make(user=user, follow=follow)
    all_token = unsubscribe_token_make(user=user)
    follow.delete()

    response = anonymous.get(f"/digests/unsubscribe/{follow_token}/")
    assert response.status_code == 404
    assert "You no longer follow what this link was for" in response.content.decode()

    user.delete()
    response = anonymous.post(f"/digests/unsubscribe/{all_token}/")
    assert response.status_code == 404
    assert "no longer exists" in response.content.decode()


def test_a_token_cannot_touch_another_users_follow_or_be_reused_from_another_salt(anonymous):
    owner, intruder = UserFactory(), UserFactory()
    follow = follow_create(user=owner, topic=TopicFactory(), digest_frequency="daily")
    # A token naming the owner's follow but the intruder as user: refused as gone.
    crossed = signing.dumps({"user": intruder.pk, "follow": follow.pk}, salt=SALT)
    feed_token = private_feed_token(state=FeedState.objects.create(user=owner))
    malformed = signing.dumps(["not", "a", "dict"], salt=SALT)

    assert anonymous.post(f"/digests/unsubscribe/{crossed}/").status_code == 404
    assert anonymous.post(f"/digests/unsubscribe/{feed_token}/").status_code == 400
    assert anonymous.post(f"/digests/unsubscribe/{malformed}/").status_code == 400
    assert anonymous.get("/digests/unsubscribe/garbage/").status_code == 400
    follow.refresh_from_db()
    assert follow.digest_frequency == "daily"
    assert anonymous.put(f"/digests/unsubscribe/{crossed}/").status_code == 405
