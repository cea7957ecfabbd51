"""The Celery app: configured from Django settings (``CELERY_*``), tasks found in every app.

Queues: ``harvest`` (papers.tasks), ``tag`` (topics.tasks), ``default`` (everything else).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")

app = Celery("topicsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
