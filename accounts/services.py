"""Writes on readers' accounts. Sign-up, log-in, email and password changes are django-allauth's;
what is ours is deleting an account."""

import logging

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

logger = logging.getLogger(__name__)


@transaction.atomic
def user_delete(*, user: AbstractBaseUser) -> dict[str, int]:
    """Delete ``user`` and everything that belongs to them, in one transaction.

    Every row that points at the user goes with it through ``on_delete=CASCADE``: their email
    addresses and pending confirmations (allauth), follows (topics and saved searches, with
    their search matches), digest deliveries, API tokens. History rows (simple-history) keep
    the change but lose the user (``SET_NULL``).

    Returns the number of rows deleted per model label (``{"follows.Follow": 3, ...}``), as
    Django's ``Model.delete`` counts them. Raises ``django.db.models.ProtectedError`` (and
    deletes nothing) if some model protects its rows from the user's deletion.
    """
    user_pk = user.pk
    total, per_model = user.delete()
    logger.info("Deleted user %s: %s rows (%s)", user_pk, total, per_model)
    return per_model
