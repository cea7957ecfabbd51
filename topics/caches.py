"""What is cached about topics, and how it is made out of date.

Three caches show topic figures: the topics index (counts, momentum, sparklines; built by
``topics.index``), the stored paper counts and momentum of each topic (``TopicStats``, read by
the topic page) and the pages shared by anonymous readers (``topicsite.pagecache``). Every
service that writes assignments, moves or merges topics calls
:func:`topic_caches_invalidate_on_commit`; nothing here reads the data behind the caches.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import partial

from django.core.cache import cache
from django.db import transaction
from django.db.models import F

from topicsite.signals import content_changed

from .models import Topic, TopicStats

# The index is cached pickled: the version moves on whenever its classes move or change shape
# (v2: they moved to topics.index), so no process reads an entry it cannot unpickle.
INDEX_CACHE_PREFIX = "topics:index:v2"
# Bumped by :func:`topic_index_cache_invalidate`; part of every topics index cache key.
INDEX_GENERATION_KEY = f"{INDEX_CACHE_PREFIX}:generation"


def topic_index_cache_invalidate() -> None:
    """Make the next ``topics.index.topic_index`` recompute (for changes its data fingerprint
    cannot see, such as a curator decision changing an assignment's state). Touches only the
    cache."""
    cache.set(INDEX_GENERATION_KEY, uuid.uuid4().hex, timeout=None)


def topic_caches_invalidate(topic_ids: Iterable[int]) -> None:
    """Drop what is cached for the topics with these pks: the topics index, and mark the
    stored paper counts (``TopicStats``) of these topics and of their ancestors as behind, so
    the next topic page counts again (two queries on the small topic tables); and tell the
    page cache (``topicsite.signals.content_changed``). Run after the writing transaction
    commits: :func:`topic_caches_invalidate_on_commit`."""
    topic_index_cache_invalidate()
    content_changed.send(sender=Topic)
    topic_ids = set(topic_ids)
    paths = Topic.objects.filter(pk__in=topic_ids).values_list("path", flat=True)
    counted = topic_ids | {int(pk) for path in paths for pk in path.split("/") if pk}
    TopicStats.objects.filter(pk__in=counted).update(generation=F("generation") + 1)


def topic_caches_invalidate_on_commit(topic_ids: Iterable[int]) -> None:
    """Once the current transaction commits, :func:`topic_caches_invalidate` for these topic
    pks (every service that writes assignments calls it; nothing happens for none)."""
    topic_ids = set(topic_ids)
    if topic_ids:
        transaction.on_commit(partial(topic_caches_invalidate, topic_ids))
