"""The curator admin as a whole (``topics.admin``), used as a member of the "Curators" group:
every page of the work opens, and curators cannot touch users, groups, site settings or delete
topics."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from papers.tests.factories import PaperFactory
from topics.models import Topic
from topics.tests.conftest import (
    ASSIGNMENTS,
    PAPERS,
    TOPICS,
)
from topics.tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


CURATOR_PERMISSIONS = {
    "papers.view_paper",
    "papers.view_category",
    "papers.view_author",
    # Curators merge name variants of one person and split them (papers.admin.authors).
    "papers.change_author",
    "papers.view_historicalauthor",
    "papers.view_paperversion",
    "papers.view_authorship",
    "topics.view_topic",
    "topics.add_topic",
    "topics.change_topic",
    "topics.view_assignment",
    "topics.add_assignment",
    "topics.change_assignment",
    "topics.delete_assignment",
    "topics.view_historicaltopic",
    "topics.view_historicalassignment",
    "topics.view_classifiermodel",
    "topics.change_classifiermodel",
}


def test_the_curators_group_has_exactly_the_permissions_curators_need():
    group = Group.objects.get(name="Curators")
    granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
    assert granted == CURATOR_PERMISSIONS
    assert not Permission.objects.filter(
        group=group, content_type__app_label__in=["auth", "django_celery_beat", "admin"]
    ).exists()


def test_a_curator_can_open_every_page_of_the_work(curator_client, curator, tree):
    paper = PaperFactory()
    paper.versions.create(number=1)
    assignment = AssignmentFactory(paper=paper, topic=tree["planning"])
    pages = [
        reverse(TOPICS),
        reverse("admin:topics_topic_add"),
        reverse("admin:topics_topic_change", args=[tree["planning"].pk]),
        reverse("admin:topics_topic_history", args=[tree["planning"].pk]),
        reverse(ASSIGNMENTS),
        reverse(ASSIGNMENTS) + "?review=queue",
        reverse("admin:topics_assignment_add"),
        reverse("admin:topics_assignment_change", args=[assignment.pk]),
        reverse("admin:topics_assignment_history", args=[assignment.pk]),
        reverse(PAPERS),
        reverse("admin:papers_paper_change", args=[paper.pk]),
        reverse("admin:papers_category_changelist"),
        reverse("admin:papers_author_changelist"),
    ]
    for url in pages:
        assert curator_client.get(url).status_code == 200, url


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:auth_user_changelist",
        "admin:auth_user_add",
        "admin:auth_group_changelist",
        "admin:auth_group_add",
        "admin:django_celery_beat_periodictask_changelist",
        "admin:django_celery_beat_periodictask_add",
        "admin:django_celery_beat_crontabschedule_changelist",
        "admin:django_celery_beat_intervalschedule_changelist",
    ],
)
def test_a_curator_cannot_open_users_groups_or_site_settings(curator_client, url_name):
    assert curator_client.get(reverse(url_name)).status_code == 403


def test_a_curator_cannot_change_users_groups_or_topics_deletion(curator_client, curator, tree):
    group = Group.objects.get(name="Curators")
    forbidden = [
        reverse("admin:auth_user_change", args=[curator.pk]),
        reverse("admin:auth_user_password_change", args=[curator.pk]),
        reverse("admin:auth_group_change", args=[group.pk]),
        reverse("admin:topics_topic_delete", args=[tree["search"].pk]),
    ]
    for url in forbidden:
        assert curator_client.get(url).status_code == 403, url
        assert curator_client.post(url, {"is_superuser": "on", "name": "x"}).status_code == 403, url
    curator.refresh_from_db()
    assert (curator.is_superuser, list(curator.user_permissions.all())) == (False, [])
    assert Topic.objects.filter(pk=tree["search"].pk).exists()
    # Not offered on the index either.
    index = curator_client.get(reverse("admin:index")).content.decode()
    assert "/admin/auth/user/" not in index
    assert "/admin/django_celery_beat/" not in index
    assert "/admin/topics/topic/" in index
