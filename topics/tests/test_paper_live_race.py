"""A tagging run inserting an assignment while another transaction withdraws or deletes its
paper, in either order: the assignment should end with ``paper_live`` false. It does not: the
insert's trigger (topics 0005/0006) reads the paper without a lock, before the withdrawal
commits, and the withdrawal's trigger cannot see the uncommitted insert, so the assignment
counts for good (until the paper changes again). Locking the paper in both triggers (FOR KEY
SHARE on insert, FOR UPDATE before a withdrawal) fixes these cases but made
``test_a_curator_accepting_in_another_connection_while_tagging_deletes_wins`` deadlock, so
the race is left open, marked here. PostgreSQL only; SQLite has one writer at a time."""

import threading
import time

import psycopg
import pytest
from django.db import connection

from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.tests.factories import TopicFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL triggers"),
    pytest.mark.xfail(
        strict=True,
        reason="known race: paper_live is copied by triggers without a lock between them",
    ),
]

INSERT = (
    "INSERT INTO topics_assignment (paper_id, topic_id, source, state, score, created_at,"
    " updated_at, paper_live, submitted) VALUES (%s, %s, 'rule', 'accepted', NULL, now(),"
    " now(), true, NULL)"
)
WITHDRAW = "UPDATE papers_paper SET withdrawn = true WHERE id = %s"
DELETE = "UPDATE papers_paper SET deleted_at = now() WHERE id = %s"


def _connect():
    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
    )


def _run_second_and_commit_first(first, first_sql, first_args, second, second_sql, second_args):
    """``first`` runs its statement and keeps its transaction open; ``second`` runs its own in
    a thread (it may wait for ``first``); then ``first`` commits and ``second`` finishes."""
    first.execute(first_sql, first_args)
    errors = []

    def run():
        try:
            second.execute(second_sql, second_args)
            second.commit()
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    first.commit()
    thread.join(10)
    assert not thread.is_alive() and not errors


@pytest.mark.parametrize("change", [WITHDRAW, DELETE], ids=["withdrawn", "deleted"])
@pytest.mark.parametrize("order", ["insert-first", "change-first"])
def test_assignment_inserted_while_paper_stops_counting_does_not_count(change, order):
    paper = PaperFactory()
    topic = TopicFactory()
    tagging, ingestion = _connect(), _connect()
    try:
        if order == "insert-first":
            _run_second_and_commit_first(
                tagging, INSERT, (paper.pk, topic.pk), ingestion, change, (paper.pk,)
            )
        else:
            _run_second_and_commit_first(
                ingestion, change, (paper.pk,), tagging, INSERT, (paper.pk, topic.pk)
            )
    finally:
        tagging.close()
        ingestion.close()
    assert list(Assignment.objects.filter(topic=topic).values_list("paper_live", flat=True)) == [
        False
    ]
