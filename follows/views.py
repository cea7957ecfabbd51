"""Follow and unfollow a topic from its page; plain HTML forms, no JavaScript."""

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from topics.models import Topic

from .models import Follow
from .services import follow_create, follow_delete


@require_POST
def follow_toggle(request, slug):
    """POST ``/follows/topics/<slug>/``: follow or unfollow an active topic, then go back to
    its page.

    The form sends ``action`` = ``follow`` or ``unfollow`` so a repeated submission leaves the
    same state; without ``action`` the current state is flipped. Anonymous users are sent to
    the login page with ``next`` set to the topic page (a GET there could not replay the POST).
    404 for an unknown or inactive topic, 400 for any other ``action``; GET is 405.
    """
    topic = get_object_or_404(Topic.objects.active(), slug=slug)
    if not request.user.is_authenticated:
        return redirect_to_login(topic.get_absolute_url())
    action = request.POST.get("action")
    if action is None:
        following = Follow.objects.filter(user=request.user, topic=topic).exists()
        action = "unfollow" if following else "follow"
    if action == "follow":
        follow_create(user=request.user, topic=topic)
        messages.success(request, f"You now follow {topic.display_name}.")
    elif action == "unfollow":
        follow_delete(user=request.user, topic=topic)
        messages.success(request, f"You no longer follow {topic.display_name}.")
    else:
        return HttpResponseBadRequest("action must be 'follow' or 'unfollow'.")
    return redirect(topic)
