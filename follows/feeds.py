"""Atom feeds (RFC 4287) through Django's syndication framework: one public feed per topic and
one private feed per user at a secret, regenerable URL.

Entries: title (text), link and id (the arXiv abstract page for arXiv papers, else our paper
page; absolute, from ``settings.SITE_URL``), published (submitted, the v1 date), updated (the
latest version's date), the first ``ATOM_AUTHORS`` authors, the abstract as a text summary and
the arXiv categories (primary first, then cross-lists). Titles and abstracts are clipped as on
a paper card (``topics.cards.clip_text``); a clipped summary ends by pointing to the paper's
page.
"""

import datetime as dt
import re

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from papers.duplicates import duplicates_collapse
from topics.cards import CARD_ABSTRACT_CHARS, CARD_TITLE_CHARS, clip_text
from topics.lookups import active_topic_or_redirect
from topics.models import Topic
from topics.selectors import topic_papers

from .feed_selectors import ATOM_ENTRIES, atom_papers
from .feed_services import private_feed_state, private_feed_token
from .models import FeedState
from .selectors import user_papers


def _absolute(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


# Characters XML 1.0 cannot carry; the feed generator refuses them, so they are dropped.
_NOT_XML = re.compile(r"[\x00-\x08\x0B\x0C\x0E-\x1F]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("", text)


def _as_datetime(day: dt.date) -> dt.datetime:
    """Midnight UTC of ``day``: Atom dates are date-times and arXiv gives days."""
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


class PaperAtom1Feed(Atom1Feed):
    """Atom 1.0 with one ``<author>`` per author name (``author_names`` in an item's extra
    fields) and the summary as plain text (``type="text"``), so that nothing in an abstract is
    read as markup."""

    def add_item_elements(self, handler, item):
        super().add_item_elements(handler, {**item, "description": None})
        for name in item.get("author_names", ()):
            handler.startElement("author", {})
            handler.addQuickElement("name", _xml_text(name))
            handler.endElement("author")
        if item["description"]:
            handler.addQuickElement("summary", _xml_text(item["description"]), {"type": "text"})


class PaperFeed(Feed):
    """What both feeds share: Atom, and entries built from :class:`papers.models.Paper`."""

    feed_type = PaperAtom1Feed
    # The feed-level author stands in for entries whose source lists no authors (RFC 4287
    # requires an author for every entry, its own or the feed's).
    author_name = "topicsite"

    def item_title(self, paper):
        # Atom titles are text: the feed generator escapes them once for XML.
        return _xml_text(clip_text(paper.atom_title, CARD_TITLE_CHARS)[0])

    def item_link(self, paper):
        return _absolute(paper.get_absolute_url())

    def item_guid(self, paper):
        return paper.arxiv_url or self.item_link(paper)

    item_guid_is_permalink = False

    def item_description(self, paper):
        abstract, clipped = clip_text(paper.atom_abstract, CARD_ABSTRACT_CHARS)
        if clipped:
            abstract += f"\n\n(The whole abstract: {self.item_link(paper)})"
        return abstract

    def item_pubdate(self, paper):
        return _as_datetime(paper.submitted)

    def item_updateddate(self, paper):
        return _as_datetime(paper.updated or paper.submitted)

    def item_categories(self, paper):
        cross_lists = sorted(c.code for c in paper.cross_lists.all())
        return [paper.primary_category.code, *cross_lists]

    def item_extra_kwargs(self, paper):
        return {"author_names": [a.author.name for a in paper.atom_authorships]}


class TopicAtomFeed(PaperFeed):
    """``/topics/<slug>/feed/``: the latest ``ATOM_ENTRIES`` papers of a topic and its
    descendants (accepted assignments), newest first. Public. 404 for an unknown or inactive
    topic; 301 to the new address for an old slug of a renamed or merged-away topic."""

    def __call__(self, request, slug):
        found = active_topic_or_redirect(request, slug, "topic-feed:atom")
        if isinstance(found, HttpResponse):
            return found
        return super().__call__(request, slug=slug)

    def get_object(self, request, slug):
        return Topic.objects.active().get(slug=slug)

    # A topic's name is typed by curators: XML 1.0 cannot hold control characters in it either.
    def title(self, topic):
        return _xml_text(f"{topic.display_name} · topicsite")

    def subtitle(self, topic):
        return _xml_text(f"The latest papers in {topic.display_name}.")

    def link(self, topic):
        return _absolute(topic.get_absolute_url())

    def feed_url(self, topic):
        return _absolute(reverse("topic-feed:atom", kwargs={"slug": topic.slug}))

    def feed_guid(self, topic):
        return self.feed_url(topic)

    def items(self, topic):
        return atom_papers(topic_papers(topic=topic), limit=ATOM_ENTRIES)


class PrivateAtomFeed(PaperFeed):
    """``/feed/atom/<token>/``: the latest ``ATOM_ENTRIES`` papers of everything the token's
    user follows, as on ``/feed/``. No log-in: the signed token is the credential (see
    ``follows.feed_services``). A malformed, tampered or regenerated-away token gets the
    "no longer valid" page with status 404. Responses are marked private and not for indexing.
    """

    def __call__(self, request, token):
        try:
            response = super().__call__(request, token=token)
        except Http404:
            response = render(request, "follows/feed_invalid.html", status=404)
        response["Cache-Control"] = "private, no-store"
        response["X-Robots-Tag"] = "noindex, nofollow"
        return response

    def get_object(self, request, token):
        state = private_feed_state(token=token)
        if state is None:
            raise FeedState.DoesNotExist("No private feed has this token.")
        return state

    def title(self, state):
        return f"Your feed · topicsite ({state.user.get_username()})"

    def subtitle(self, state):
        return "New papers in the topics, authors and saved searches you follow."

    def link(self, state):
        return _absolute(reverse("feed:index"))

    def feed_url(self, state):
        return _absolute(reverse("feed:atom", kwargs={"token": private_feed_token(state=state)}))

    def feed_guid(self, state):
        return f"{_absolute(reverse('feed:index'))}#user-{state.user_id}"

    def items(self, state):
        # A paper stored under two ids is one entry (papers.duplicates).
        papers = atom_papers(user_papers(user=state.user), limit=ATOM_ENTRIES)
        once = set(duplicates_collapse([paper.pk for paper in papers]))
        return [paper for paper in papers if paper.pk in once]
