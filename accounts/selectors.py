"""Reads for the account pages."""

from allauth.account.models import EmailAddress
from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import QuerySet


def user_email_addresses(*, user: AbstractBaseUser) -> QuerySet[EmailAddress]:
    """The user's email addresses (allauth's ``EmailAddress``), primary first, then by address."""
    return EmailAddress.objects.filter(user=user).order_by("-primary", "email")
