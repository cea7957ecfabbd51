"""Display text from arXiv metadata: hard line wraps removed, paragraphs kept.

arXiv stores titles, abstracts, comments and author lines as wrapped plain text (about 80
columns). Two wrapping styles occur:

- titles, comments and author lines continue on lines indented by two spaces
  (``"… D3/D7 Brane\\n  Inflation Model"``), so indentation carries no meaning there;
- abstracts start with two spaces and continue on unindented lines; a line that *is* indented
  starts a new paragraph (``"… vector fields.\\n  In particular, …"``).

TeX is left alone: converting it is a separate step.
"""

from __future__ import annotations

import re

__all__ = ["unwrap"]

PARAGRAPH_SEPARATOR = "\n\n"

# Only ASCII blanks are collapsed; other Unicode spaces (no-break, thin) are content.
_BLANKS = re.compile(r"[ \t\f\v]+")
_NEWLINES = re.compile(r"\r\n?")


def unwrap(text: str | None) -> str:
    """Return ``text`` with hard line wraps removed, for display and indexing.

    - Runs of spaces/tabs and wrapped line breaks become one space; both ends are stripped.
    - Paragraph breaks survive as ``"\\n\\n"``: a blank line always separates paragraphs; an
      indented line starts a paragraph only when some continuation lines are indented and
      others are not (the abstract style). When every continuation line is indented (titles,
      comments, pretty-printed XML) the indentation is just wrapping.
    - ``None`` or blank text gives ``""``.
    """
    if not text:
        return ""
    lines = _NEWLINES.sub("\n", text).split("\n")
    continuation = [line for line in lines[1:] if line.strip()]
    indented = [line for line in continuation if line[:1] in (" ", "\t")]
    indent_starts_paragraph = 0 < len(indented) < len(continuation)

    paragraphs: list[list[str]] = []
    current: list[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            if current:
                paragraphs.append(current)
                current = []
            continue
        if index and indent_starts_paragraph and line[:1] in (" ", "\t") and current:
            paragraphs.append(current)
            current = []
        current.append(stripped)
    if current:
        paragraphs.append(current)
    return PARAGRAPH_SEPARATOR.join(_BLANKS.sub(" ", " ".join(p)).strip() for p in paragraphs)
