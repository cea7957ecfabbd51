"""A user may follow at most FOLLOWS_MAX_SEARCHES_PER_USER saved searches, by every route."""

import json

import pytest
from django.core.exceptions import ValidationError

from accounts.tests.factories import UserFactory
from follows.models import Follow
from follows.services import follow_search_create, follows_import

pytestmark = pytest.mark.django_db


def test_the_next_saved_search_past_the_limit_is_refused_and_repeats_still_pass(settings):
    settings.FOLLOWS_MAX_SEARCHES_PER_USER = 2
    user = UserFactory()
    follow_search_create(user=user, query="alpha")
    follow_search_create(user=user, query="beta")

    with pytest.raises(ValidationError, match="already follow 2 saved searches"):
        follow_search_create(user=user, query="gamma")

    # Following one already followed is not a new one; another user has their own allowance.
    assert follow_search_create(user=user, query="beta").query == "beta"
    follow_search_create(user=UserFactory(), query="gamma")
    assert Follow.objects.filter(user=user, kind="search").count() == 2


def test_an_import_past_the_limit_is_refused_whole(settings):
    settings.FOLLOWS_MAX_SEARCHES_PER_USER = 2
    user = UserFactory()
    follow_search_create(user=user, query="alpha")
    content = json.dumps(
        {
            "version": 1,
            "follows": [{"kind": "search", "query": q} for q in ("beta", "gamma")],
        }
    ).encode()

    with pytest.raises(ValidationError, match="already follow 2 saved searches"):
        follows_import(user=user, content=content)

    assert list(Follow.objects.filter(user=user).values_list("query", flat=True)) == ["alpha"]
