"""Why a paper is in a topic, in words a reader understands (the paper page's topics). The
admin's "why" (``topics.admin.assignments``) says more: the classifier's words recomputed,
the nearest papers linked."""

from __future__ import annotations

from .models import Assignment

__all__ = ["assignment_reasons"]

# Classifier words named at most.
REASON_TERMS = 3


def assignment_reasons(assignment: Assignment) -> list[str]:
    """Sentences saying why ``assignment`` places its paper in its topic, most decisive
    first: a curator decision, then what the machine (rule, classifier score with its
    strongest words, cosine similarity) or the import recorded. Reads the assignment's own
    fields and ``evidence`` only (no query)."""
    reasons = []
    source = assignment.source
    if assignment.decided_by_id is not None or assignment.decided_at is not None:
        if source == Assignment.Source.CURATOR:
            reasons.append("Placed here by a curator.")
        else:
            reasons.append("A curator checked and accepted it.")
    evidence = assignment.evidence or {}
    score = assignment.score
    if source == Assignment.Source.RULE or "rule" in evidence:
        query = (evidence.get("rule") or "").strip()
        if query:
            reasons.append(f"Matches the topic's rule: {query}")
        else:
            reasons.append("Its category is one of the topic's categories.")
    if source == Assignment.Source.CLASSIFIER:
        words = [word for word, _weight in (evidence.get("terms") or [])[:REASON_TERMS]]
        sentence = "Classifier score"
        sentence += f" {score:.2f}." if score is not None else "."
        if words:
            sentence += " Words that counted most: " + ", ".join(words) + "."
        reasons.append(sentence)
    if source == Assignment.Source.SEMANTIC or "cosine" in evidence:
        cosine = evidence.get("cosine", score)
        reasons.append(
            "Close in meaning to the topic"
            + (f" (cosine similarity {float(cosine):.2f})." if cosine is not None else ".")
        )
    if source == Assignment.Source.IMPORT:
        reasons.append("Listed in the topic when it was imported.")
    if not reasons:
        reasons.append(f"Placed by {assignment.get_source_display().lower()}.")
    return reasons
