"""Users following topics."""

from django.conf import settings
from django.db import models

from topics.models import Topic
from topicsite.models import TimeStampedModel


class Follow(TimeStampedModel):
    """``user`` follows ``topic`` (one row per pair)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="follows"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="follows")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "topic"], name="unique_user_topic_follow"),
        ]

    def __str__(self):
        return f"{self.user} follows {self.topic.name}"
