"""factory_boy factories for readers' accounts.

``UserFactory`` makes a user who can log in through django-allauth at once: the address is
stored as allauth's verified, primary ``EmailAddress`` and the password is ``PASSWORD``.
"""

import factory
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model

PASSWORD = "correct horse battery staple"


class EmailAddressFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EmailAddress

    user = factory.SubFactory("accounts.tests.factories.UserFactory", email_address=None)
    email = factory.LazyAttribute(lambda o: o.user.email)
    verified = True
    primary = True


class UserFactory(factory.django.DjangoModelFactory):
    """A user with a verified primary email address (``email_address__verified=False`` for an
    unverified one; ``email_address=None`` for none)."""

    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"reader{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.org")
    password = factory.django.Password(PASSWORD)
    email_address = factory.RelatedFactory(EmailAddressFactory, factory_related_name="user")
