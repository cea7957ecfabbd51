"""Forms of the API tokens page."""

import uuid

from django import forms

from .models import ApiToken


class TokenCreateForm(forms.Form):
    """A new token's name, to tell it apart later ("reading app on my laptop")."""

    name = forms.CharField(
        max_length=ApiToken._meta.get_field("name").max_length,
        strip=True,
        help_text="What the token is for, e.g. “dashboard script”.",
    )

    # A fresh id per rendered form: a resubmission (a reload of the page the POST answered)
    # carries the same one and creates nothing more.
    once = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4, required=False)
