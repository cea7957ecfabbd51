""" "For you": ``/for-you/`` (new papers ranked for the signed-in reader, each saying why) and
its "Not interested" button (a plain POST form, no JavaScript)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from papers.models import Paper

from .for_you_selectors import for_you_picks
from .for_you_services import for_you_feedback_create


@require_safe
@login_required
def for_you_index(request):
    """``/for-you/``: up to ``for_you_selectors.FOR_YOU_PICKS`` new papers (submitted in the
    last ``FOR_YOU_DAYS`` days) ranked for the reader from their library, follows and "Not
    interested" presses, each with the reasons it was picked and a "Not interested" button.
    A reader who saved and follows nothing gets an empty state saying how to start. Signed
    out: the login page, then back. A fixed number of queries whatever the number of picks."""
    ranking, picks = for_you_picks(user=request.user)
    context = {"ranking": ranking, "picks": picks, "pending": _pending_dismissal(request)}
    return render(request, "follows/for_you.html", context)


def _pending_dismissal(request) -> Paper | None:
    """The paper of ``?not_interested=<id>``: a "Not interested" pressed while signed out,
    brought back through the login page (a GET, so it is asked again, never applied). None
    when absent, malformed, no stored paper, or already dismissed."""
    raw = request.GET.get("not_interested", "")
    # isascii(): str.isdigit() is also true of "²", which int() refuses (was a 500).
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        return None
    return (
        Paper.objects.filter(pk=int(raw))
        .exclude(for_you_feedback__user=request.user)
        .only("pk", "arxiv_id", "title")
        .first()
    )


@require_POST
def for_you_dismiss(request, paper_id: int):
    """POST ``/for-you/papers/<id>/not-interested/``: hide paper ``id`` from the reader's picks
    and rank its neighbours lower; back to ``/for-you/``. An id that is no stored paper is a
    404 naming it; GET is 405; signed out: the login page, then back to
    ``/for-you/?not_interested=<id>``, which asks again (a GET cannot replay the POST)."""
    if not request.user.is_authenticated:
        return redirect_to_login(f"{reverse('for_you:index')}?not_interested={paper_id}")
    paper = Paper.objects.filter(pk=paper_id).first()
    if paper is None:
        raise Http404(f"No paper has the id {paper_id}.")
    for_you_feedback_create(user=request.user, paper=paper)
    messages.success(request, f"Hidden from your picks: {paper.title}")
    return redirect("for_you:index")
