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


def ask_placeholder(topic=None) -> str:
    """The ask box's example question: about ``topic`` (a ``Topic``, its display name) when
    given, else a question that fits any topic."""
    if topic is None:
        return "e.g. Which methods do the newest papers propose?"
    return f"e.g. What are the main approaches in {topic.display_name}?"


class AskForm(forms.Form):
    """``q``: the question, required, stripped, at most ``ASK_MAX_QUESTION_LENGTH``
    characters (a longer one is refused with a message naming the limit). ``topic``: the topic
    asked about, named in the box's example question (:func:`ask_placeholder`)."""

    q = forms.CharField(
        label="Your question",
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )

    def __init__(self, *args, topic=None, **kwargs):
        super().__init__(*args, **kwargs)
        widget = self.fields["q"].widget
        widget.attrs["maxlength"] = settings.ASK_MAX_QUESTION_LENGTH
        widget.attrs["placeholder"] = ask_placeholder(topic)

    def clean_q(self):
        question = self.cleaned_data["q"]
        message = question_length_error(len(question))
        if message:
            raise forms.ValidationError(message, code="max_length")
        return question
