"""A Celery app whose broker is a Redis port nothing listens on: its ``send_task`` raises
kombu's ``OperationalError`` as a real publish to a stopped Redis does."""

from celery import Celery

from .smtp import free_port


def dead_broker_delay(task_name: str):
    """A stand-in for ``task.delay`` that publishes ``task_name`` to a stopped Redis (one try,
    no retries), so it raises what ``.delay`` raises with Redis down."""
    # Not the current app: shared tasks elsewhere must keep the project's (eager) app.
    app = Celery("dead-broker", broker=f"redis://127.0.0.1:{free_port()}/0", set_as_current=False)
    app.conf.broker_connection_retry = False
    app.conf.broker_connection_max_retries = 0

    def delay(*args):
        return app.send_task(task_name, args, retry_policy={"max_retries": 0})

    return delay
