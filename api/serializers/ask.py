"""Request and answer shapes of ``POST /api/v1/topics/<slug>/ask/``."""

from rest_framework import serializers

from ask.forms import question_length_error


class AskRequestSerializer(serializers.Serializer):
    """``{"q": "..."}`` (the page's ``?q=``): required, not blank, at most 500 characters after
    trimming (the site's ``ASK_MAX_QUESTION_LENGTH`` setting). ``{"question": "..."}`` is a
    deprecated alias of ``q``; giving both is a 400. ``validated_data["question"]`` holds the
    question whichever name gave it."""

    q = serializers.CharField(
        trim_whitespace=True,
        allow_blank=False,
        required=False,
        help_text="The question (as the page's ?q=), at most 500 characters.",
    )
    question = serializers.CharField(
        trim_whitespace=True,
        allow_blank=False,
        required=False,
        help_text="Deprecated alias of q; giving both is a 400.",
    )

    def _checked(self, value: str) -> str:
        message = question_length_error(len(value))
        if message:
            raise serializers.ValidationError(message, code="max_length")
        return value

    validate_q = _checked
    validate_question = _checked

    def validate(self, attrs):
        if "q" in attrs and "question" in attrs:
            raise serializers.ValidationError(
                {"question": ["Give the question once, as q (question is its old name)."]}
            )
        if "q" not in attrs and "question" not in attrs:
            raise serializers.ValidationError({"q": ["This field is required."]}, code="required")
        return {"question": attrs.get("q", attrs.get("question"))}


class CitationSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="As in the answer's [n] markers.")
    id = serializers.CharField(
        help_text="arXiv identifier, or local:<n> for a paper from outside arXiv (as in papers/)."
    )
    title = serializers.CharField()
    url = serializers.URLField(help_text="Absolute URL of the paper's page on this site.")


class SuggestionSerializer(serializers.Serializer):
    label = serializers.CharField()
    url = serializers.URLField()


class AskAnswerSerializer(serializers.Serializer):
    """An answer: ``answer`` is plain text with ``[n]`` markers; ``citations`` in order of
    relevance; ``found`` false when nothing in the topic was relevant enough (then no
    citations, and ``suggestions`` where to ask instead)."""

    topic = serializers.SlugField(help_text="The topic's slug.")
    question = serializers.CharField()
    answer = serializers.CharField()
    citations = CitationSerializer(many=True)
    mode = serializers.ChoiceField(choices=["extractive", "generated"])
    found = serializers.BooleanField()
    fallback_reason = serializers.CharField(
        allow_blank=True,
        help_text="Why a configured generator's answer was not used (empty otherwise).",
    )
    suggestions = SuggestionSerializer(many=True)
    backend = serializers.ChoiceField(
        choices=["postgresql", "python"], help_text="The retrieval path that ranked the papers."
    )
    coverage = serializers.FloatField(
        help_text="Share (0-1) of the question's weighted terms found in the best paper."
    )
    cached = serializers.BooleanField()
    took_ms = serializers.IntegerField(help_text="Time to answer this request, milliseconds.")
