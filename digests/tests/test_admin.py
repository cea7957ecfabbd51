"""The digest admin: delivery records read-only, and "Send again" for failed or unconfirmed."""

import datetime as dt

import pytest

from digests.models import Digest
from digests.services import digest_send
from follows.services import follow_create

from .conftest import TopicFactory, UserFactory, free_port, paper_in, use_smtp

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 30)


def test_send_again_resends_an_unconfirmed_digest_once_and_leaves_sent_ones(
    smtp_server, settings, client, django_capture_on_commit_callbacks
):
    admin = UserFactory(is_staff=True, is_superuser=True)
    reader, other = UserFactory(), UserFactory()
    topic = TopicFactory()
    follow_create(user=reader, topic=topic, digest_frequency="daily")
    follow_create(user=other, topic=topic, digest_frequency="daily")
    paper = paper_in(topic)
    sent = digest_send(user=other, period="daily", period_end=DAY)
    working_port = settings.EMAIL_PORT
    use_smtp(settings, free_port())
    with pytest.raises(OSError):
        digest_send(user=reader, period="daily", period_end=DAY)
    use_smtp(settings, working_port)
    unconfirmed = Digest.objects.get(user=reader)
    Digest.objects.filter(pk=unconfirmed.pk).update(status=Digest.Status.UNCONFIRMED)
    client.force_login(admin)

    listing = client.get("/admin/digests/digest/")
    assert listing.status_code == 200
    assert "Unconfirmed (stopped while sending)" in listing.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/digests/digest/",
            {"action": "send_again", "_selected_action": [unconfirmed.pk, sent.pk]},
            follow=True,
        )

    assert "Queued 1 digests to be sent again; 1 left alone" in response.content.decode()
    unconfirmed.refresh_from_db()
    assert unconfirmed.status == Digest.Status.SENT
    assert [m["To"] for m in smtp_server.messages] == [other.email, reader.email]
    assert paper.title in smtp_server.messages[1].get_body(("plain",)).get_content()
    detail = client.get(f"/admin/digests/digest/{unconfirmed.pk}/change/")
    assert detail.status_code == 200 and paper.title[:40] in detail.content.decode()
