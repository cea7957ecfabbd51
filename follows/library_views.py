"""The reader's library: ``/library/`` (saved papers, newest saved first, filtered by read
state), saving and removing a paper from any card or paper page (a plain form, or JSON for
``static/js/library.js``), marking read, notes, and the export (BibTeX, RIS, CSV).

Every view that changes something is a POST and works without JavaScript; a paper id that
is not stored, or not in the reader's library, is a 404 naming it.
"""

from __future__ import annotations

import functools

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from papers.citations import BIBTEX_CONTENT_TYPE, RIS_CONTENT_TYPE, bibtex_document, ris_document
from papers.models import Paper
from topics.cards import paper_cards

from .library_selectors import LIBRARY_STATUSES, library_citations, library_csv, library_items
from .library_services import (
    library_item_mark_read,
    library_item_note,
    library_item_remove,
    library_item_save,
)
from .models import LibraryItem

ITEMS_PER_PAGE = 30
CSV_CONTENT_TYPE = "text/csv; charset=utf-8"


def _wants_json(request) -> bool:
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"


def _back(request, default: str) -> str:
    """Where a plain form goes back to: its ``next`` field when it is a path on this site,
    else ``default``."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def _paper_or_404(paper_id: int) -> Paper:
    paper = Paper.objects.filter(pk=paper_id).first()
    if paper is None:
        raise Http404(f"No paper has the id {paper_id}.")
    return paper


def _item_or_404(user, paper_id: int) -> LibraryItem:
    item = LibraryItem.objects.filter(user=user, paper_id=paper_id).first()
    if item is None:
        raise Http404(f"Paper {paper_id} is not in your library.")
    return item


def _login_first(view):
    """An anonymous POST goes to the login page (JSON: 401 with ``login_url``), then back to
    the page the form was on (a GET of the POST's own URL could not replay it)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        response = redirect_to_login(_back(request, reverse("library:index")))
        if _wants_json(request):
            return JsonResponse(
                {"error": "Log in to save papers.", "login_url": response["Location"]},
                status=401,
            )
        return response

    return wrapper


@require_safe
@login_required
def library_index(request):
    """``/library/``: the signed-in reader's saved papers, newest saved first, as paper cards
    with the read state, the note and buttons to mark read, edit the note or remove;
    ``?status=unread`` / ``read`` filters (400 naming the choices for another value),
    ``?page=N`` pages (:data:`ITEMS_PER_PAGE` a page). A fixed number of queries whatever
    the number of items."""
    status = request.GET.get("status", "all") or "all"
    if status not in LIBRARY_STATUSES:
        return HttpResponseBadRequest(
            f"Unknown status {status[:50]!r}: use one of {', '.join(LIBRARY_STATUSES)}.",
            content_type="text/plain; charset=utf-8",
        )
    paginator = Paginator(library_items(user=request.user, status=status), ITEMS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    items = list(page.object_list)
    cards = {card.pk: card for card in paper_cards(paper_ids=[item.paper_id for item in items])}
    context = {
        "page": page,
        "entries": [(item, cards[item.paper_id]) for item in items if item.paper_id in cards],
        "status": status,
        "statuses": (("all", "All"), ("unread", "Unread"), ("read", "Read")),
        "item_total": paginator.count,
        "note_max_length": LibraryItem.NOTE_MAX_LENGTH,
    }
    return render(request, "follows/library.html", context)


@require_POST
@_login_first
def library_save(request, paper_id):
    """POST ``/library/papers/<paper id>/save/``: ``action=save`` saves the paper to the
    reader's library, ``action=remove`` removes it (with its note); without ``action`` the
    state flips. A plain form goes back to ``next`` (a path on this site) or the library; a
    request asking for JSON gets ``{"saved": bool}``. 400 for another action, 404 for a paper
    not stored; anonymous readers go to the login page (JSON: 401)."""
    paper = _paper_or_404(paper_id)
    action = request.POST.get("action")
    if action is None:
        saved = LibraryItem.objects.filter(user=request.user, paper=paper).exists()
        action = "remove" if saved else "save"
    if action == "save":
        library_item_save(user=request.user, paper=paper)
        message = "Saved to your library."
    elif action == "remove":
        library_item_remove(user=request.user, paper=paper)
        message = "Removed from your library."
    else:
        return HttpResponseBadRequest("action must be 'save' or 'remove'.")
    if _wants_json(request):
        return JsonResponse({"saved": action == "save"})
    messages.success(request, message)
    return redirect(_back(request, reverse("library:index")))


@require_POST
@_login_first
def library_read(request, paper_id):
    """POST ``/library/papers/<paper id>/read/``: ``action=read`` marks a saved paper read,
    ``action=unread`` unread; back to ``next`` or the library (JSON: ``{"read": bool}``).
    400 for another action, 404 for a paper not in the reader's library."""
    item = _item_or_404(request.user, paper_id)
    action = request.POST.get("action")
    if action not in ("read", "unread"):
        return HttpResponseBadRequest("action must be 'read' or 'unread'.")
    library_item_mark_read(item=item, read=action == "read")
    if _wants_json(request):
        return JsonResponse({"read": item.is_read})
    messages.success(request, "Marked read." if item.is_read else "Marked unread.")
    return redirect(_back(request, reverse("library:index")))


@require_POST
@_login_first
def library_note(request, paper_id):
    """POST ``/library/papers/<paper id>/note/`` with ``note``: the reader's note on a saved
    paper (empty removes it); back to ``next`` or the library. 400 naming the limit for a
    note over ``LibraryItem.NOTE_MAX_LENGTH`` characters (the note is left as it was), 404
    for a paper not in the reader's library."""
    item = _item_or_404(request.user, paper_id)
    try:
        library_item_note(item=item, note=request.POST.get("note", ""))
    except ValidationError as error:
        return HttpResponseBadRequest(
            " ".join(error.messages), content_type="text/plain; charset=utf-8"
        )
    messages.success(request, "Note saved." if item.note else "Note removed.")
    return redirect(_back(request, reverse("library:index")))


@require_safe
@login_required
def library_export(request, kind):
    """``/library/export.bib``, ``.ris``, ``.csv``: the reader's library (``?status=`` as
    the library page) as BibTeX (the same entries as a paper's "Cite"), RIS or CSV, newest
    saved first, downloaded as ``library.<kind>``. 400 naming the choices for an unknown
    status."""
    status = request.GET.get("status", "all") or "all"
    if status not in LIBRARY_STATUSES:
        return HttpResponseBadRequest(
            f"Unknown status {status[:50]!r}: use one of {', '.join(LIBRARY_STATUSES)}.",
            content_type="text/plain; charset=utf-8",
        )
    rows = library_citations(user=request.user, status=status)
    citations = [citation for _item, citation in rows]
    if kind == "bib":
        body, content_type = bibtex_document(citations), BIBTEX_CONTENT_TYPE
    elif kind == "ris":
        body, content_type = ris_document(citations), RIS_CONTENT_TYPE
    else:
        body, content_type = library_csv(rows), CSV_CONTENT_TYPE
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="library.{kind}"'
    return response
