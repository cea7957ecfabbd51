"""Display text from arXiv metadata: hard line wraps removed, mojibake repaired, TeX accents read.

arXiv stores titles, abstracts, comments and author lines as wrapped plain text (about 80
columns). Two wrapping styles occur:

- titles, comments and author lines continue on lines indented by two spaces
  (``"… D3/D7 Brane\\n  Inflation Model"``), so indentation carries no meaning there;
- abstracts start with two spaces and continue on unindented lines; a line that *is* indented
  starts a new paragraph (``"… vector fields.\\n  In particular, …"``).

Names and titles are written in TeX (``C. Bal\\'azs``, ``M. R{\\"u}bhausen``, ``Fran\\c{c}ois``)
and some sources hand over UTF-8 that was decoded as Latin-1 on the way (``Dirk WÃ¼bben``).
:func:`readable` turns both into what a reader expects (``C. Balázs``, ``Dirk Wübben``) and
leaves everything else as written, formulas above all: ``$\\Lambda_{\\alpha}$`` stays
``$\\Lambda_{\\alpha}$``. The character tables are pylatexenc's and ftfy's, not ours.

Plain Python, no Django.
"""

from __future__ import annotations

import functools
import re
import unicodedata

import ftfy
from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexwalker import (
    LatexCharsNode,
    LatexGroupNode,
    LatexMacroNode,
    LatexWalker,
    LatexWalkerError,
)

__all__ = ["fix_mojibake", "readable", "tex_to_text", "unwrap"]

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
    - ``None`` or blank text gives ``""``. TeX is left alone (see :func:`readable`).
    """
    if not text:
        return ""
    if (
        "\n" not in text
        and "  " not in text
        and "\t" not in text
        and "\r" not in text
        and "\f" not in text
        and "\v" not in text
    ):
        # One line without runs of blanks (most names and short fields): nothing to unwrap.
        return text.strip()
    lines = (_NEWLINES.sub("\n", text) if "\r" in text else text).split("\n")
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
    return PARAGRAPH_SEPARATOR.join(_collapse_blanks(" ".join(p)) for p in paragraphs)


def _collapse_blanks(text: str) -> str:
    if "  " in text or "\t" in text or "\f" in text or "\v" in text:
        return _BLANKS.sub(" ", text).strip()
    return text.strip()


# --- mojibake -------------------------------------------------------------------------------

# The re-decodings accepted as certain: the whole text is UTF-8 that was read as Latin-1 or as
# Windows-1252 (ftfy's "sloppy" variant keeps the five bytes Windows-1252 leaves undefined).
_CERTAIN_MISREADINGS = frozenset({"latin-1", "sloppy-windows-1252", "windows-1252"})


def fix_mojibake(text: str) -> str:
    """Repair UTF-8 that was decoded as Latin-1 or Windows-1252, when that is certain.

    ``"Dirk WÃ¼bben"`` -> ``"Dirk Wübben"``; ``"JosÃ© RaÃºl Romero"`` -> ``"José Raúl Romero"``.
    ftfy (https://ftfy.readthedocs.io) decides whether the text looks mis-decoded; its fix is
    taken only when it is one re-decoding of the *whole* text (encode as Latin-1 or
    Windows-1252, decode as UTF-8) that gives the input back when reversed. Partial or lossy
    repairs, and text ftfy finds nothing wrong with (``"Balázs"``, ``"naïve"``), are returned
    unchanged. ASCII text is returned as is without analysis. Never raises.
    """
    if text.isascii():
        return text
    return _fix_mojibake(text)


@functools.lru_cache(maxsize=1 << 16)
def _fix_mojibake(text: str) -> str:
    fixed, plan = ftfy.fix_encoding_and_explain(text)
    if fixed == text or len(plan) != 2 or "\ufffd" in fixed:
        return text
    (encode, encoding), (decode, decoding) = plan
    if encode != "encode" or encoding not in _CERTAIN_MISREADINGS:
        return text
    if decode != "decode" or decoding != "utf-8":
        return text
    try:
        round_trip = fixed.encode("utf-8").decode(encoding)
    except UnicodeError:
        return text
    return fixed if round_trip == text else text


# --- TeX accents and escapes ----------------------------------------------------------------

# TeX's text accents (``\'a``, ``\"{o}``, ``\c{c}``, ``\v{Z}`` …); ``\t`` (tie) is left out:
# pylatexenc does not read its argument.
_ACCENTS = frozenset({"'", "`", '"', "^", "~", "=", ".", "c", "v", "u", "H", "k", "r", "d", "b"})
# Letters TeX writes as macros (``\o``, ``\l``, ``\AA``, ``\ss`` …), dotless i and j included.
_LETTERS = frozenset({"aa", "AA", "ae", "AE", "oe", "OE", "o", "O", "l", "L", "ss", "i", "j"})
# Escaped specials. ``\$`` stays escaped: a bare dollar would open a formula on the page.
_ESCAPES = frozenset({"&", "%", "#", "_"})
# Cheap test for text that may hold one of them, before the TeX is parsed at all.
_CANDIDATE = re.compile(
    r"\\(?:['`\"^~=.&%#_]|(?:[cvuHkrdb]|aa|AA|ae|AE|oe|OE|ss|[oOlLij])(?![A-Za-z]))"
)
_LATEX_TO_TEXT = LatexNodes2Text()


def tex_to_text(text: str) -> str:
    """Replace TeX accents, TeX letters and escaped specials by the characters they stand for.

    ``"C. Bal\\'azs"`` -> ``"C. Balázs"``, ``'M. R{\\"u}bhausen'`` -> ``"M. Rübhausen"``,
    ``"S. {\\AA}berg"`` -> ``"S. Åberg"``, ``"Rafa{\\l} Lata{\\l}a"`` -> ``"Rafał Latała"``,
    ``"AT\\&T"`` -> ``"AT&T"``. The text is parsed with pylatexenc's ``LatexWalker`` and only
    top-level accent, letter and escape macros (or braces holding nothing but those and plain
    characters) are converted, by pylatexenc's ``LatexNodes2Text``, to NFC text. Everything
    else keeps its exact characters: formulas (``$…$``, ``\\(…\\)``, ``\\[…\\]``) and what
    is inside them, other macros (``\\infty``, ``\\emph{…}``), other braces (``{Ki(z)}``),
    ``~`` and ``--``. Never raises: text that cannot be parsed is returned unchanged.
    """
    if "\\" not in text or not _CANDIDATE.search(text):
        return text
    return _tex_to_text(text)


@functools.lru_cache(maxsize=1 << 14)
def _tex_to_text(text: str) -> str:
    try:
        nodes, _, _ = LatexWalker(text, tolerant_parsing=True).get_latex_nodes()
    except LatexWalkerError:
        return text
    parts: list[str] = []
    done = 0
    for node in nodes or ():
        if node is None or not _convertible(node):
            continue
        start, end = node.pos, node.pos + node.len
        if start < done:
            # The parser lost track of the source positions: keep the text as written.
            return text
        converted = unicodedata.normalize("NFC", _LATEX_TO_TEXT.nodelist_to_text([node]))
        parts += [text[done:start], converted]
        done = end
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _convertible(node) -> bool:
    """True for an accent/letter/escape macro, or braces around only those and characters."""
    if isinstance(node, LatexMacroNode):
        name = node.macroname
        if name in _LETTERS or name in _ESCAPES:
            return not _arguments(node)
        if name in _ACCENTS:
            arguments = _arguments(node)
            return len(arguments) == 1 and _accent_base(arguments[0])
        return False
    if isinstance(node, LatexGroupNode):
        children = [child for child in node.nodelist or () if child is not None]
        return any(isinstance(child, LatexMacroNode) for child in children) and all(
            isinstance(child, LatexCharsNode) or _convertible(child) for child in children
        )
    return False


def _arguments(node: LatexMacroNode) -> list:
    parsed = node.nodeargd
    if parsed is None or not parsed.argnlist:
        return []
    return [argument for argument in parsed.argnlist if argument is not None]


def _accent_base(node) -> bool:
    """What an accent may sit on: a letter, ``{letters}``, or the dotless ``\\i``/``\\j``."""
    if isinstance(node, LatexCharsNode):
        return node.chars.isalpha()
    if isinstance(node, LatexMacroNode):
        return node.macroname in ("i", "j") and not _arguments(node)
    if isinstance(node, LatexGroupNode):
        children = [child for child in node.nodelist or () if child is not None]
        return len(children) == 1 and _accent_base(children[0])
    return False


def readable(text: str | None) -> str:
    r"""Display form of a title, name or affiliation as a source wrote it.

    :func:`unwrap`, then :func:`fix_mojibake`, then :func:`tex_to_text`:
    ``"Gr\"obner bases\n  for $\Lambda$"`` (with a real line break) ->
    ``"Gröbner bases for $\Lambda$"``. ``None`` gives ``""``.
    The raw text is the caller's to keep (``title_raw``). Never raises.
    """
    if not text:
        return ""
    if (
        text.isascii()
        and "\\" not in text
        and "\n" not in text
        and "  " not in text
        and "\t" not in text
        and "\r" not in text
        and "\f" not in text
        and "\v" not in text
    ):
        # Most names and titles: nothing to unwrap, repair or read.
        return text.strip()
    text = unwrap(text)
    if not text.isascii():
        text = _fix_mojibake(text)
    if "\\" in text:
        text = tex_to_text(text)
    return text
