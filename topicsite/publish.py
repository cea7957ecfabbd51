"""Queuing a task after a write, without letting a dead broker undo or hide the write.

Web requests, ingestion and curation queue follow-up work (``.delay``) once their transaction
has committed. If the broker (Redis) is down, Celery retries the publish briefly
(``CELERY_TASK_PUBLISH_RETRY_POLICY``, about half a second) and then raises kombu's
``OperationalError``. :func:`task_publish` turns that into one ERROR log line naming the task,
its arguments and the command that queues it again, and returns False: the committed data stays,
the request answers, and the operator re-queues (README, "Faults").
"""

from __future__ import annotations

import logging

from kombu.exceptions import OperationalError

logger = logging.getLogger(__name__)

# What queueing a task (``.delay``) raises when the broker cannot be reached, after Celery's
# publish retries: for a command to catch and report in one line (broker_unreachable).
BROKER_ERRORS = (OperationalError,)


def broker_unreachable(error: BaseException, remedy: str) -> str:
    """One line for an operator: Redis, the Celery broker, could not be reached (``error``,
    e.g. "Error 111 connecting to 127.0.0.1:6379. Connection refused."), then ``remedy``."""
    return f"Redis (the Celery broker, REDIS_URL) is unreachable: {error} {remedy}"


def task_publish(task, *args, remedy: str = "") -> bool:
    """``task.delay(*args)``; True when the broker took it. On a broker error (kombu
    ``OperationalError``, after Celery's publish retries) log an ERROR with the task name, its
    arguments and ``remedy`` (what the operator runs; by default a ``manage.py shell`` line that
    queues the same task again) and return False. Other exceptions propagate."""
    try:
        task.delay(*args)
    except OperationalError as error:
        module, _, name = task.name.rpartition(".")
        remedy = remedy or (
            f'manage.py shell -c "from {module} import {name}; {name}.delay(*{list(args)!r})"'
        )
        logger.error(
            "Could not queue %s%r (broker unreachable: %s). The data is saved; "
            "once the broker is back, queue it again: %s",
            task.name,
            tuple(args),
            error,
            remedy,
        )
        return False
    return True
