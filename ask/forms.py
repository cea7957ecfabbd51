"""The ask box: one question, at most ``ASK_MAX_QUESTION_LENGTH`` characters."""

from django import forms
from django.conf import settings


def question_length_error(length: int) -> str | None:
    """The message for a question of ``length`` characters (after stripping) when it is over
    ``ASK_MAX_QUESTION_LENGTH``, naming both lengths; ``None`` when it is short enough."""
    limit = settings.ASK_MAX_QUESTION_LENGTH
    if length <= limit:
        return None
    return f"Please keep the question to {limit} characters (it has {length})."


class AskForm(forms.Form):
    """``q``: the question, required, stripped, at most ``ASK_MAX_QUESTION_LENGTH``
    characters (a longer one is refused with a message naming the limit)."""

    q = forms.CharField(
        label="Your question",
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        widget = self.fields["q"].widget
        widget.attrs["maxlength"] = settings.ASK_MAX_QUESTION_LENGTH
        widget.attrs["placeholder"] = "e.g. Which papers train agents with GRPO?"

    def clean_q(self):
        question = self.cleaned_data["q"]
        message = question_length_error(len(question))
        if message:
            raise forms.ValidationError(message, code="max_length")
        return question
