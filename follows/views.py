"""Follow pages: follow a topic or an author from its page (plain form, or JSON for
``static/js/follow.js``),
the user's follows page with saved searches and digest frequencies, export and import.

Every view that changes something is a POST; a follow id that is not the user's own is a 404.
"""

import functools
import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from papers.models import Author
from topics.models import Topic

from . import selectors
from .feed_services import private_feed_url
from .forms import DigestFrequencyForm, ImportForm, SavedSearchForm
from .models import Follow
from .services import (
    author_current,
    follow_author_create,
    follow_author_delete,
    follow_create,
    follow_delete,
    follow_search_create,
    follow_update,
    follows_import,
)


def _wants_json(request) -> bool:
    """The client asked for JSON first (``Accept: application/json``, as follow.js sends);
    a browser's ``text/html, ..., */*`` is not."""
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"


def _login_required_post(view):
    """Anonymous POSTs go to the login page with ``next`` set to the follows page (a GET of
    the POST's own URL afterwards could not replay it)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(reverse("follows:list"))
        return view(request, *args, **kwargs)

    return wrapper


@require_POST
def follow_toggle(request, slug):
    """POST ``/follows/topics/<slug>/``: follow or unfollow an active topic.

    The form sends ``action`` = ``follow`` or ``unfollow`` so a repeated submission leaves the
    same state; without ``action`` the current state is flipped. A plain form submission goes
    back to the topic page; a request that asks for JSON (``Accept: application/json``) gets
    ``{"following": bool, "follower_count": int}``. Anonymous users are sent to the login page
    with ``next`` set to the topic's follow confirmation page (:func:`follow_confirm`), so the
    intent survives the log-in (JSON: 401 with ``{"error", "login_url"}``).
    404 for an unknown or inactive topic, 400 for any other ``action``; GET is 405.
    """
    topic = get_object_or_404(Topic.objects.active(), slug=slug)
    return _follow_toggled(
        request,
        noun="topics",
        login_next=_confirm_path(topic),
        following=lambda: Follow.objects.filter(user=request.user, topic=topic).exists(),
        follow=lambda: follow_create(user=request.user, topic=topic).topic.display_name,
        unfollow=lambda: follow_delete(user=request.user, topic=topic) or topic.display_name,
        follower_count=lambda: selectors.follower_count(topic=topic),
        back=lambda: topic,
    )


def _follow_toggled(
    request, *, noun, login_next, following, follow, unfollow, follower_count, back
):
    """The follow/unfollow answer shared by topics and authors: ``action`` ``follow`` or
    ``unfollow`` (none: flip ``following()``); ``follow()`` / ``unfollow()`` act and return
    the name to show; JSON ``{"following", "follower_count"}`` when asked for, else a message
    and a redirect to ``back()``. Anonymous: to the login page and ``login_next`` (JSON 401);
    any other ``action``: 400."""
    wants_json = _wants_json(request)
    if not request.user.is_authenticated:
        if wants_json:
            login_url = redirect_to_login(login_next)["Location"]
            return JsonResponse(
                {"error": f"Log in to follow {noun}.", "login_url": login_url}, status=401
            )
        return redirect_to_login(login_next)
    action = request.POST.get("action")
    if action is None:
        action = "unfollow" if following() else "follow"
    if action == "follow":
        message = f"You now follow {follow()}."
    elif action == "unfollow":
        message = f"You no longer follow {unfollow()}."
    else:
        if wants_json:
            return JsonResponse({"error": "action must be 'follow' or 'unfollow'."}, status=400)
        return HttpResponseBadRequest("action must be 'follow' or 'unfollow'.")
    if wants_json:
        return JsonResponse({"following": action == "follow", "follower_count": follower_count()})
    messages.success(request, message)
    return redirect(back())


def _confirm_path(topic: Topic) -> str:
    return reverse("follows:confirm", kwargs={"slug": topic.slug})


@require_GET
@login_required
def follow_confirm(request, slug):
    """GET ``/follows/topics/<slug>/confirm/``: "Follow <topic>?" with the POST form that
    follows it (then back to the topic page), or, when the user follows it already, a note
    and a link back. Where a signed-out reader's "Follow this topic" leads after logging in
    (the log-in page's ``next``): the intent is kept, and the follow itself stays a POST with a
    CSRF token. Anonymous: to the log-in page and back here; unknown or inactive topic: 404.
    """
    topic = get_object_or_404(Topic.objects.active(), slug=slug)
    following = Follow.objects.filter(user=request.user, topic=topic).exists()
    return render(request, "follows/follow_confirm.html", {"topic": topic, "following": following})


@require_POST
def follow_author_toggle(request, pk):
    """POST ``/follows/authors/<pk>/``: follow or unfollow an author, as
    :func:`follow_toggle` does a topic (``action`` = ``follow`` or ``unfollow``, or none to
    flip; JSON ``{"following": bool, "follower_count": int}`` when asked for; anonymous users
    to the login page, JSON 401). Following a merged-away author follows the author it was
    merged into. 404 for an unknown author, 400 for any other ``action``; GET is 405.
    """
    # A merged-away name (a page opened before the merge) stands for its survivor, which the
    # follow is on: "following" and "unfollow" must look there too, not at the old name.
    author = author_current(get_object_or_404(Author, pk=pk))
    current = [author]

    def follow():
        current[0] = follow_author_create(user=request.user, author=author).author
        return current[0].name

    return _follow_toggled(
        request,
        noun="authors",
        login_next=author.get_absolute_url(),
        following=lambda: Follow.objects.filter(user=request.user, author=author).exists(),
        follow=follow,
        unfollow=lambda: follow_author_delete(user=request.user, author=author) or author.name,
        follower_count=lambda: selectors.author_follower_count(author=current[0]),
        back=lambda: current[0],
    )


def _render_list(request, *, search_form=None, import_form=None, status=200):
    follows = selectors.user_follows(user=request.user)
    context = {
        "topic_follows": [f for f in follows if f.kind == Follow.Kind.TOPIC],
        "author_follows": [f for f in follows if f.kind == Follow.Kind.AUTHOR],
        "search_follows": [f for f in follows if f.kind == Follow.Kind.SEARCH],
        "frequencies": Follow.Frequency.choices,
        "search_form": search_form or SavedSearchForm(),
        "import_form": import_form or ImportForm(),
        "private_feed_url": private_feed_url(user=request.user),
    }
    return render(request, "follows/follow_list.html", context, status=status)


@require_GET
@login_required
def follow_list(request):
    """GET ``/follows/``: the user's followed topics, authors and saved searches, each with its
    digest frequency and an unfollow button; forms to add a saved search and to import follows.
    A fixed number of queries whatever the number of follows."""
    return _render_list(request)


@require_POST
@_login_required_post
def search_create(request):
    """POST ``/follows/searches/``: follow a saved search (``SavedSearchForm``), then back to
    the follows page. A bad query, unknown topics or categories: the page again (400) with the
    errors next to their fields, the query's with the reason and position."""
    form = SavedSearchForm(request.POST)
    if form.is_valid():
        followed = set(
            Follow.objects.filter(user=request.user, kind=Follow.Kind.SEARCH).values_list(
                "pk", flat=True
            )
        )
        try:
            follow = follow_search_create(user=request.user, **form.cleaned_data)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            if follow.pk in followed:
                # The service keeps an existing follow as it is: say so rather than claim a
                # change of limits or frequency that did not happen.
                messages.info(
                    request,
                    f"You already follow the search {follow.label}; its limits and digest "
                    "frequency stay as they were. Unfollow it first to follow it with others.",
                )
            else:
                messages.success(request, f"You now follow the search {follow.label}.")
            return redirect("follows:list")
    return _render_list(request, search_form=form, status=400)


@require_POST
@_login_required_post
def follow_frequency(request, pk):
    """POST ``/follows/<pk>/frequency/``: set one of the user's follows' digest frequency
    (``daily``, ``weekly``, ``off``). 404 for a follow that is not the user's, 400 for a bad
    value."""
    follow = get_object_or_404(
        Follow.objects.select_related("topic", "author"), pk=pk, user=request.user
    )
    form = DigestFrequencyForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("digest_frequency must be daily, weekly or off.")
    follow_update(follow=follow, digest_frequency=form.cleaned_data["digest_frequency"])
    messages.success(
        request, f"Digest for {follow.label}: {follow.get_digest_frequency_display().lower()}."
    )
    return redirect("follows:list")


@require_POST
@_login_required_post
def follow_remove(request, pk):
    """POST ``/follows/<pk>/delete/``: unfollow one of the user's follows (topic, author or
    saved search). 404 for a follow that is not the user's."""
    follow = get_object_or_404(
        Follow.objects.select_related("topic", "author"), pk=pk, user=request.user
    )
    follow_delete(user=request.user, follow=follow)
    messages.success(request, f"You no longer follow {follow.label}.")
    return redirect("follows:list")


@require_GET
@login_required
def follows_export_view(request):
    """GET ``/follows/export.json``: the user's own follows as a JSON download
    (``follows.selectors.follows_export``)."""
    data = selectors.follows_export(user=request.user)
    response = HttpResponse(
        json.dumps(data, ensure_ascii=False, indent=2), content_type="application/json"
    )
    filename = f"topicsite-follows-{timezone.localdate():%Y-%m-%d}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_POST
@_login_required_post
def follows_import_view(request):
    """POST ``/follows/import/`` (multipart, field ``file``): add the follows of an export file.
    All or nothing: a bad file is refused as a whole (the follows page again, 400, with a
    message naming each bad entry)."""
    form = ImportForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            # Read one byte past the cap so the service sees the file is too large without
            # reading all of an enormous upload.
            content = upload.read(settings.FOLLOWS_IMPORT_MAX_BYTES + 1)
            created = follows_import(user=request.user, content=content)
        except ValidationError as error:
            form.add_error("file", error)
        else:
            messages.success(
                request, f"Imported {created} new follow{'s' if created != 1 else ''}."
            )
            return redirect("follows:list")
    return _render_list(request, import_form=form, status=400)
