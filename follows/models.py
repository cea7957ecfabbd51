"""What users follow: topics, authors and saved searches, each with its own digest frequency.

A :class:`Follow` is a topic (``kind="topic"``, ``topic`` set), an author (``kind="author"``,
``author`` set: the papers that author is credited on) or a saved search
(``kind="search"``, ``query`` set in the topic-rule query language of :mod:`topics.tagging.rules`,
optionally limited to some topics and/or categories). Papers that match a saved search are
materialised in :class:`SearchMatch` when they are stored and when the search is created, so
the feed and the digests read one join for both kinds.
"""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from papers.models import Author, Category, Paper
from topics.models import Topic
from topicsite.models import TimeStampedModel

# Quote marks a saved search may carry itself (the rule language's phrases, or typographic).
QUOTE_MARKS = ('"', "“", "”", "„", "«", "»")


class Follow(TimeStampedModel):
    """``user`` follows ``topic``, ``author`` or a saved search ``query`` (one row per topic,
    author or query)."""

    class Kind(models.TextChoices):
        TOPIC = "topic", "Topic"
        SEARCH = "search", "Saved search"
        AUTHOR = "author", "Author"

    class Frequency(models.TextChoices):
        DAILY = "daily", "Daily"
        WEEKLY = "weekly", "Weekly"
        OFF = "off", "Off"

    QUERY_MAX_LENGTH = 500

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="follows"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TOPIC)
    topic = models.ForeignKey(
        Topic, on_delete=models.CASCADE, related_name="follows", null=True, blank=True
    )
    author = models.ForeignKey(
        Author, on_delete=models.CASCADE, related_name="follows", null=True, blank=True
    )
    query = models.CharField(
        max_length=QUERY_MAX_LENGTH,
        blank=True,
        help_text="Saved search: a keyword query in the topic-rule language.",
    )
    topic_scope = models.ManyToManyField(
        Topic,
        blank=True,
        related_name="scoped_searches",
        help_text="Saved search: only papers in these topics (or their descendants).",
    )
    category_scope = models.ManyToManyField(
        Category,
        blank=True,
        related_name="scoped_searches",
        help_text="Saved search: only papers with one of these primary or cross-list categories.",
    )
    digest_frequency = models.CharField(
        max_length=8, choices=Frequency.choices, default=Frequency.WEEKLY
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "topic"],
                condition=Q(topic__isnull=False),
                name="unique_user_topic_follow",
            ),
            models.UniqueConstraint(
                fields=["user", "query"],
                condition=Q(kind="search"),
                name="unique_user_search_follow",
            ),
            models.UniqueConstraint(
                fields=["user", "author"],
                condition=Q(author__isnull=False),
                name="unique_user_author_follow",
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="topic", topic__isnull=False, author__isnull=True, query="")
                    | Q(kind="author", author__isnull=False, topic__isnull=True, query="")
                    | (Q(kind="search", topic__isnull=True, author__isnull=True) & ~Q(query=""))
                ),
                name="follow_kind_matches_fields",
            ),
        ]

    def __str__(self):
        return f"{self.user} follows {self.label}"

    @property
    def label(self) -> str:
        """What is followed, as shown to the user: the topic's or author's name, or the query
        in quotes (“agent training”); a query with quote marks of its own (``"tool use"
        agent*``) is shown as it is, so no phrase ends up in two pairs of quotes."""
        if self.kind == self.Kind.TOPIC:
            return self.topic.display_name
        if self.kind == self.Kind.AUTHOR:
            return self.author.name
        if any(mark in self.query for mark in QUOTE_MARKS):
            return self.query
        return f"“{self.query}”"


class SearchMatch(models.Model):
    """``paper`` matches the saved search ``follow`` (written by the matching service)."""

    follow = models.ForeignKey(Follow, on_delete=models.CASCADE, related_name="matches")
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="search_matches")
    matched_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "search matches"
        constraints = [
            models.UniqueConstraint(fields=["follow", "paper"], name="unique_search_match"),
        ]
        indexes = [models.Index(fields=["paper"], name="searchmatch_paper_idx")]

    def __str__(self):
        return f"{self.paper_id} matches follow {self.follow_id}"


# --- Personal feed state (the /feed/ page and the private Atom feed) ------------------------


def new_private_feed_key() -> str:
    """A fresh random key for a user's private Atom feed (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


class FeedState(TimeStampedModel):
    """What the feed remembers about one ``user``.

    - ``last_visit_at``: when the user last opened ``/feed/`` (any page of it);
    - ``seen_before``: papers stored (``Paper.created_at``) before this moment count as seen;
      it moves to the previous visit's time when a visit starts more than
      ``follows.feed_services.VISIT_GAP`` after the last one; ``None`` until a second visit;
    - ``private_feed_key``: random key that the private Atom feed's signed token carries;
      regenerating it makes every earlier feed URL invalid.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feed_state"
    )
    seen_before = models.DateTimeField(null=True, blank=True)
    last_visit_at = models.DateTimeField(null=True, blank=True)
    private_feed_key = models.CharField(max_length=64, default=new_private_feed_key)

    def __str__(self):
        return f"feed state of {self.user}"


# --- The reader's library (/library/) -----------------------------------------------------


class LibraryItem(models.Model):
    """``paper`` saved to ``user``'s library at ``saved_at``; ``read_at``: when they marked it
    read (``None``: unread); ``note``: their own text about it (at most
    :data:`NOTE_MAX_LENGTH` characters). One row per (user, paper)."""

    NOTE_MAX_LENGTH = 5000

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="library_items"
    )
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="library_items")
    saved_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, max_length=NOTE_MAX_LENGTH)

    class Meta:
        ordering = ["-saved_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "paper"], name="unique_user_library_paper"),
        ]
        indexes = [
            # The library page: a user's items newest-saved first.
            models.Index(fields=["user", "-saved_at", "-id"], name="library_user_saved_idx"),
        ]

    def __str__(self):
        return f"{self.user} saved {self.paper_id}"

    @property
    def is_read(self) -> bool:
        return self.read_at is not None


# --- "For you" (/for-you/) -------------------------------------------------------------------


class ForYouFeedback(models.Model):
    """``user`` pressed "Not interested" on ``paper`` among their "for you" picks at
    ``created``: the paper is hidden from their picks and counts as a negative example when
    they are ranked (``follows.for_you_selectors``). One row per (user, paper)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="for_you_feedback"
    )
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="for_you_feedback")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "paper"], name="unique_user_for_you_feedback"),
        ]

    def __str__(self):
        return f"{self.user} is not interested in {self.paper_id}"
