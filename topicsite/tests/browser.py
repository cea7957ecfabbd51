"""Helpers for the browser tests: look at a page at desktop and at phone width, keep both
screenshots, and fail when the phone-width page scrolls sideways."""

from __future__ import annotations

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}

# The elements (tag, class, id and right edge in CSS px) that stick out of the viewport, for the
# failure message: what to fix in the CSS.
_OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const found = [];
  for (const element of document.querySelectorAll("body *")) {
    const box = element.getBoundingClientRect();
    if (box.width && box.right > width + 0.5) {
      const name = `${element.tagName.toLowerCase()}#${element.id}.${element.className}`;
      found.push(`${name} right=${Math.round(box.right)}`);
    }
  }
  return found.slice(0, 8);
}"""


def sideways_overflow(page) -> int:
    """How far (CSS px) the page scrolls horizontally: 0 when it fits its viewport."""
    return page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - document.documentElement.clientWidth"
    )


def look(page, screenshot, name: str) -> None:
    """Screenshot ``page`` at desktop width (1280 px) and at phone width (375 px) as
    ``<name>-1280px.png`` and ``<name>-375px.png`` (``screenshot``: the root conftest's
    fixture), failing the test if the page scrolls sideways at 375 px; the page ends at desktop
    width."""
    page.set_viewport_size(DESKTOP)
    screenshot(page, f"{name}-{DESKTOP['width']}px")
    page.set_viewport_size(PHONE)
    overflow = sideways_overflow(page)
    sticking_out = page.evaluate(_OVERFLOWING) if overflow > 0 else []
    screenshot(page, f"{name}-{PHONE['width']}px")
    page.set_viewport_size(DESKTOP)
    assert overflow <= 0, (
        f"{name}: {page.url} scrolls sideways by {overflow}px at {PHONE['width']}px; "
        f"sticking out: {sticking_out}"
    )
