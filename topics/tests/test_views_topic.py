"""The topic page, the index and the ask page, rendered through the test client."""

import datetime as dt
import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers.tests.factories import (
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db


def text_of(page):
    """The page's visible text, as the reference-page checker reads it."""
    page = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"(?s)<[^>]+>", " ", page))).strip()


def card_paper(
    *,
    topics,
    submitted=dt.date(2026, 9, 29),
    title=None,
    category="cs.CL",
    authors=3,
    author_count=3,
    affiliations=3,
    affiliation_count=3,
    state=Assignment.State.ACCEPTED,
):
    """A paper with ``authors`` authorships and ``affiliations`` paper affiliations stored,
    assigned to every topic in ``topics``."""
    extra = {"title": title} if title else {}
    paper = PaperFactory(
        submitted=submitted,
        primary_category=CategoryFactory(code=category),
        author_count=author_count,
        affiliation_count=affiliation_count,
        **extra,
    )
    for position in range(authors):
        AuthorshipFactory(paper=paper, position=position)
    for position in range(affiliations):
        PaperAffiliationFactory(paper=paper, position=position)
    for topic in topics:
        AssignmentFactory(paper=paper, topic=topic, state=state)
    return paper


def get(client, url):
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def count_queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


# Titles with characters that must be escaped in HTML and come back unchanged as text.
REFERENCE_TITLES = [
    f'Agent training study {i}: tools & memory for <long-horizon> "agents"' for i in range(30)
]


def test_reference_like_page_holds_every_element_of_the_reference_page(client):
    parent = TopicFactory(name="Large Language Model", short_name="LLM", slug="llm")
    topic = TopicFactory(name="LLM Agent Training", slug="llm-agent-training", parent=parent)
    vocabulary = [TopicFactory(name=f"Vocabulary topic {i}") for i in range(24)]
    dates = [dt.date(2026, 9, 29) - dt.timedelta(days=i * 18 // 29) for i in range(30)]
    assert dates[-1] == dt.date(2026, 9, 11)
    for i, (title, submitted) in enumerate(zip(REFERENCE_TITLES, dates, strict=True)):
        card_paper(
            topics=[topic, *vocabulary[i % 24 : i % 24 + 3]],
            submitted=submitted,
            title=title,
            category="cs.CL" if i % 2 == 0 else "cs.AI",
            author_count=143 if i == 25 else 16,
            affiliation_count=12,
        )
    # Other papers of the same weeks: the share's denominator.
    for _ in range(3):
        PaperFactory(submitted=dt.date(2026, 9, 20))

    page = get(client, reverse("topics:detail", kwargs={"slug": topic.slug}))
    text = text_of(page)

    # The checks of the reference-page checker (tools/check_reference_page.py), as assertions.
    n = len(REFERENCE_TITLES)
    assert re.search(r"LLM\s*:\s*Large Language Model", text)
    assert "Follow this topic" in text
    assert "Ask about this topic" in text
    mom = re.search(r"(\d+) papers? in the last four weeks[,.]", text)
    assert mom and int(mom.group(1)) >= n
    assert re.search(
        r"(up|down) \d+% on the four weeks before|no change on the four weeks before"
        r"|new in the last four weeks",
        text,
    )
    assert re.search(r"(<\s*)?\d+(\.\d)?% of all new papers", text)
    assert re.search(r"(?i)<svg\b", page)
    assert "Jul 13" in text and "Week of Sep 28" in text
    assert re.search(rf"Latest papers\s*{n}\b", text)
    assert all(html.unescape(title) in text for title in REFERENCE_TITLES)
    assert all(x in text for x in ("+13", "+140", "+9"))
    assert "Sep 29, 2026" in text and "cs.CL" in text
    assert len(set(re.findall(r'href="(/topics/[^"/]+/?)"', page))) >= 20

    # And the exact figures this data gives.
    assert (
        "30 papers in the last four weeks, none in the four weeks before "
        "(new in the last four weeks). 90.9% of all new papers."
    ) in text
    assert '<nav aria-label="Breadcrumb"' in page
    assert f'href="{parent.get_absolute_url()}"' in page
    assert 'role="img"' in page and "<title" in page and "<desc" in page


def test_chart_gives_every_weekly_count_to_screen_readers(client):
    topic = TopicFactory()
    card_paper(topics=[topic], submitted=dt.date(2026, 9, 29))
    card_paper(topics=[topic], submitted=dt.date(2026, 9, 28))
    card_paper(topics=[topic], submitted=dt.date(2026, 7, 14))

    page = get(client, topic.get_absolute_url())

    rows = re.findall(r'<tr><th scope="row">(Week of \w+ \d+)</th><td>(\d+)</td></tr>', page)
    assert len(rows) == 12
    assert rows[0] == ("Week of Jul 13", "1")
    assert rows[-1] == ("Week of Sep 28", "2")
    assert sum(int(count) for _, count in rows) == 3
    assert page.count('class="chart-bar"') == 12


def test_card_shows_date_category_abstract_authors_affiliations_and_chips(client):
    topic = TopicFactory(name="LLM Agent Training")
    other = TopicFactory(name="Tool Use", slug="tool-use")
    inactive = TopicFactory(name="Retired Topic", active=False)
    rejected = TopicFactory(name="Rejected Topic")
    paper = card_paper(
        topics=[topic, other, inactive],
        submitted=dt.date(2026, 9, 29),
        category="cs.CL",
        authors=3,
        author_count=16,
        affiliations=3,
        affiliation_count=12,
    )
    AssignmentFactory(paper=paper, topic=rejected, state=Assignment.State.REJECTED)
    long_abstract = " ".join(f"word{i}" for i in range(80)) + "\n\nA second paragraph."
    type(paper).objects.filter(pk=paper.pk).update(abstract=long_abstract)

    page = get(client, topic.get_absolute_url())
    card = re.search(r"(?s)<article class=\"card\">.*?</article>", page).group(0)
    card_text = text_of(card)

    assert "Sep 29, 2026" in card_text
    assert "cs.CL" in card_text
    assert f'href="{paper.get_absolute_url()}"' in card
    details = re.search(r"(?s)<details.*?<summary>(.*?)</summary>(.*?)</details>", card)
    assert "word0" in details.group(1) and "word79" not in details.group(1)
    assert "word79" in details.group(2)
    # The full abstract as paragraphs, escaped once (not "&lt;p&gt;" shown as text).
    assert "<p>A second paragraph.</p>" in details.group(2)
    assert details.group(2).strip().startswith("<p>word0 ") and "&lt;p&gt;" not in card
    authors = [a.author for a in paper.authorships.order_by("position")]
    # Each name links to its author page (the tags around a name leave a space before commas
    # in this plain-text reading).
    assert ", ".join(a.name for a in authors) + " +13" in card_text.replace(" ,", ",")
    for author in authors:
        assert f'<a href="{author.get_absolute_url()}">{author.name}</a>' in card
    affiliations = [a.affiliation.name for a in paper.paper_affiliations.order_by("position")]
    assert "; ".join(affiliations) + " +9" in card_text
    chips = re.findall(r'<li><a href="(/topics/[^"]+/)">([^<]+)</a></li>', card)
    assert chips == [
        (topic.get_absolute_url(), "LLM Agent Training"),
        ("/topics/tool-use/", "Tool Use"),
    ]


def test_no_plus_when_all_authors_and_affiliations_are_shown(client):
    topic = TopicFactory()
    card_paper(topics=[topic], authors=2, author_count=2, affiliations=0, affiliation_count=0)

    card = re.search(r"(?s)<article.*?</article>", get(client, topic.get_absolute_url()))
    assert "+" not in text_of(card.group(0))
    assert 'class="affiliations"' not in card.group(0)


def test_parent_page_lists_descendants_papers_once_newest_first(client):
    parent = TopicFactory(name="Parent")
    child_a = TopicFactory(parent=parent, name="Child A")
    child_b = TopicFactory(parent=parent, name="Child B")
    grandchild = TopicFactory(parent=child_a, name="Grandchild")
    elsewhere = TopicFactory(name="Elsewhere")
    shared = card_paper(topics=[child_a, child_b], submitted=dt.date(2026, 9, 20), title="Shared")
    older = card_paper(topics=[grandchild], submitted=dt.date(2026, 9, 1), title="Older")
    same_day_first = card_paper(topics=[parent], submitted=dt.date(2026, 9, 25), title="Tie one")
    same_day_second = card_paper(topics=[child_b], submitted=dt.date(2026, 9, 25), title="Tie two")
    card_paper(topics=[child_a], title="Rejected", state=Assignment.State.REJECTED)
    card_paper(topics=[elsewhere], title="Elsewhere paper")

    page = get(client, parent.get_absolute_url())
    titles = re.findall(r'<h3 class="card-title"><a href="[^"]+">([^<]+)</a></h3>', page)

    # Newest first; on the same day, the later id first.
    assert same_day_second.pk > same_day_first.pk
    assert titles == ["Tie two", "Tie one", "Shared", "Older"]
    assert re.search(r"Latest papers\s*4\b", text_of(page))
    assert shared.title in titles and older.title in titles
    # Child topics are listed with links; the grandchild is not a direct child.
    subtopics = re.search(r'(?s)<section class="subtopics".*?</section>', page).group(0)
    assert re.findall(r'<a href="([^"]+)">', subtopics) == [
        child_a.get_absolute_url(),
        child_b.get_absolute_url(),
    ]

    child_page = text_of(get(client, child_a.get_absolute_url()))
    assert re.search(r"Latest papers\s*2\b", child_page)
    assert "Tie one" not in child_page


def test_breadcrumb_lists_ancestors_root_first(client):
    root = TopicFactory(name="Artificial Intelligence", short_name="AI")
    middle = TopicFactory(name="Large Language Model", short_name="LLM", parent=root)
    leaf = TopicFactory(name="LLM Agent Training", parent=middle)

    page = get(client, leaf.get_absolute_url())
    crumbs = re.search(r'(?s)<nav aria-label="Breadcrumb".*?</nav>', page).group(0)

    assert text_of(crumbs) == (
        "Topics AI: Artificial Intelligence LLM: Large Language Model LLM Agent Training"
    )
    assert '<li aria-current="page">LLM Agent Training</li>' in crumbs
    assert re.search(r"<h1>LLM Agent Training</h1>", page)


def test_pages_of_thirty_with_plain_next_and_previous_links(client):
    topic = TopicFactory()
    for day in range(31):
        card_paper(topics=[topic], submitted=dt.date(2026, 9, 29) - dt.timedelta(days=day))

    first = get(client, topic.get_absolute_url())
    second = get(client, topic.get_absolute_url() + "?page=2")

    assert first.count('<article class="card">') == 30
    assert 'href="?page=2"' in first and 'rel="prev"' not in first
    assert second.count('<article class="card">') == 1
    assert 'href="?page=1"' in second and 'rel="next"' not in second
    assert "Aug 30, 2026" in text_of(second)
    assert re.search(r"Latest papers\s*31\b", text_of(second))


@pytest.mark.parametrize("logged_in", [False, True])
def test_query_count_does_not_grow_with_cards_or_chips(client, logged_in):
    if logged_in:
        client.force_login(UserFactory())
    small, large = TopicFactory(), TopicFactory()
    chips = [TopicFactory() for _ in range(8)]
    for i in range(3):
        card_paper(topics=[small, *chips[i : i + 2]])
    for i in range(30):
        card_paper(topics=[large, *chips[i % 6 : i % 6 + 3]], author_count=9)

    small_count = count_queries(client, small.get_absolute_url())
    large_count = count_queries(client, large.get_absolute_url())

    assert small_count == large_count
    # Sanity: the bigger page really rendered its 30 cards and their chips.
    page = get(client, large.get_absolute_url())
    assert page.count('<article class="card">') == 30
    assert len(set(re.findall(r'href="(/topics/[^"/]+/?)"', page))) >= 7


def test_unknown_or_inactive_topic_is_404(client):
    inactive = TopicFactory(active=False)
    assert client.get("/topics/no-such-topic/").status_code == 404
    assert client.get(f"/topics/{inactive.slug}/").status_code == 404
    assert client.get(f"/topics/{inactive.slug}/ask/").status_code == 404


def test_paper_text_is_escaped(client):
    topic = TopicFactory(description="<b>bold</b> description")
    paper = card_paper(topics=[topic], title="<script>alert('title')</script>")
    type(paper).objects.filter(pk=paper.pk).update(abstract="<img src=x onerror=alert(1)>")

    page = get(client, topic.get_absolute_url())

    assert "<script>alert" not in page
    # Titles are escaped by topicsite.bidi.isolate (Django's escape: ' as &#x27;).
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt;" in page
    assert "<img src=x" not in page
    assert "<p>&lt;img src=x onerror=alert(1)&gt;</p>" in page  # escaped once, in a paragraph
    assert "<b>bold</b>" not in page


def test_index_lists_active_topics_as_a_tree_with_distinct_subtree_counts(client):
    root = TopicFactory(name="Large Language Model", short_name="LLM")
    child_a = TopicFactory(name="Agents", parent=root)
    child_b = TopicFactory(name="Benchmarks", parent=root)
    TopicFactory(name="Hidden", parent=root, active=False)
    other_root = TopicFactory(name="Astrophysics")
    shared = card_paper(topics=[child_a, child_b])
    AssignmentFactory(paper=shared, topic=root)
    card_paper(topics=[child_a])
    card_paper(topics=[child_b], state=Assignment.State.REJECTED)

    page = get(client, reverse("topics:index"))
    text = text_of(page)

    assert "Hidden" not in text
    assert text.index("Astrophysics") < text.index("LLM: Large Language Model")
    assert "LLM: Large Language Model 2 papers" in text
    assert "Agents 2 papers" in text
    assert "Benchmarks 1 paper" in text
    assert "Astrophysics 0 papers" in text
    assert other_root.get_absolute_url() in page
    # Children sit in a list nested inside their parent's item.
    nested = re.search(
        rf'(?s)<a href="{root.get_absolute_url()}">.*?<ul class="topic-tree">(.*?)</ul>', page
    ).group(1)
    assert child_a.get_absolute_url() in nested and child_b.get_absolute_url() in nested


def test_index_query_count_is_constant(client):
    TopicFactory()
    few = count_queries(client, reverse("topics:index"))
    parent = TopicFactory()
    for _ in range(10):
        child = TopicFactory(parent=parent)
        card_paper(topics=[child, TopicFactory(parent=child)])

    # New topics have no stored counts yet: counted and stored (topics.selectors.topic_tree:
    # the count, the stats rows created and read back, the counts stored) beside the
    # fingerprint and momentum, whatever the number of topics.
    assert count_queries(client, reverse("topics:index")) == few == 9


def test_unknown_topic_gets_the_sites_own_404_page(client):
    response = client.get("/topics/no-such-topic/")

    assert response.status_code == 404
    assert "Browse all topics" in response.content.decode()


def test_momentum_block_says_which_date_the_windows_end_on(client):
    topic = TopicFactory(slug="dated")
    AssignmentFactory(topic=topic, paper=PaperFactory(submitted=dt.date(2026, 9, 29)))

    html = client.get("/topics/dated/").content.decode()

    assert "Four-week windows ending Sep 29, 2026" in html
