"""Reading the links django-allauth mails to readers, for the account tests."""

import re

from django.core import mail


def link_in_last_mail(to: str, path_prefix: str) -> str:
    """The path of the first ``http://testserver<path_prefix>...`` link in the newest message
    sent to ``to``; fails the test if there is none."""
    messages = [message for message in mail.outbox if to in message.to]
    assert messages, f"no mail to {to}; sent: {[(m.to, m.subject) for m in mail.outbox]}"
    match = re.search(rf"https?://testserver({re.escape(path_prefix)}\S+)", messages[-1].body)
    assert match, f"no {path_prefix} link in: {messages[-1].body}"
    return match.group(1)


def signed_in_user_id(client) -> str | None:
    """The id of the user the client's session is signed in as, or None."""
    return client.session.get("_auth_user_id")
