"""Template tags ``follows`` lends to other apps' pages (``topics`` knows nothing of follows;
its templates load this library)."""

from django import template

from topicsite.holes import hole_html

from ..models import Follow
from ..selectors import author_follower_count

register = template.Library()


@register.simple_tag(takes_context=True)
def follow_button(context, topic):
    """``{% follow_button topic %}``: the follower count ("12 followers", never who they are)
    and, for a signed-in user, a POST form whose button reads "Follow this topic", or
    "Unfollow this topic" when they follow it (``static/js/follow.js`` submits it in place
    where JavaScript runs); for anyone else a "Follow this topic" link to the log-in page that
    continues to the topic's follow confirmation page (``follows.views.follow_confirm``: the
    intent survives the log-in; no form here, so the page holds no CSRF token and anonymous
    readers can share one cached copy: ``topicsite.pagecache``). A personal hole
    (``follows.holes.follow_topic_buttons``): left as a hole in a page rendered to be shared
    by signed-in readers. One query.
    """
    return hole_html(context.get("request"), "follow-topic", topic.pk)


@register.inclusion_tag("follows/_author_follow_button.html", takes_context=True)
def author_follow_button(context, author):
    """``{% author_follow_button author %}``: as :func:`follow_button`, for an author ("Follow
    this author" / "Unfollow this author", its follower count; a log-in link for anyone not
    signed in). Two queries for a signed-in user, one otherwise."""
    request = context["request"]
    user = request.user
    following = user.is_authenticated and Follow.objects.filter(user=user, author=author).exists()
    return {
        "author": author,
        "follower_count": author_follower_count(author=author),
        "following": following,
        "signed_in": user.is_authenticated,
        "request_path": request.path,
    }
