"""The personal feed page and the regeneration of its private Atom feed's secret URL."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from .feed_selectors import feed_card_papers, feed_mark, feed_rank
from .feed_services import feed_visit, private_feed_key_regenerate, private_feed_url

PAPERS_PER_PAGE = 30


@require_safe
@login_required
def feed_index(request):
    """``/feed/``: the papers of everything the user follows (topics and saved searches),
    newest first and grouped by submitted day, within a day most relevant first
    (``feed_selectors.feed_rank``), ``PAPERS_PER_PAGE`` a page (``?page=N``); each
    card names the follows that matched it and papers stored before the previous visit are
    marked seen. Shows the private Atom feed's URL with a button to regenerate it.

    Each request counts as part of a visit (``feed_services.feed_visit``). The query count does
    not depend on the number of papers on the page.
    """
    state = feed_visit(user=request.user)
    paginator = Paginator(feed_card_papers(user=request.user), PAPERS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    papers = feed_mark(user=request.user, papers=page, seen_before=state.seen_before)
    papers = feed_rank(user=request.user, items=papers)
    context = {
        "page": page,
        "papers": papers,
        "paper_total": paginator.count,
        "follow_count": request.user.follows.count(),
        "private_feed_url": private_feed_url(user=request.user, state=state),
    }
    return render(request, "follows/feed.html", context)


@login_required
@require_POST
def private_feed_regenerate(request):
    """POST ``/feed/atom/regenerate/``: give the signed-in user's private Atom feed a new
    secret URL (the old one stops working), then back to ``/follows/`` when the form came from
    there (``next``), else ``/feed/``. Only ever the requesting user's own key; GET is 405."""
    private_feed_key_regenerate(user=request.user)
    messages.success(
        request, "Your private feed has a new address. The old address no longer works."
    )
    if request.POST.get("next") == reverse("follows:list"):
        return redirect("follows:list")
    return redirect("feed:index")
