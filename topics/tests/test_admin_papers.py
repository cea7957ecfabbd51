"""The paper admin as topics extends it (``topics.admin.papers``): the paper's assignments
and their history on its page, and the topic filter on the paper list."""

import pytest
from django.urls import reverse

from papers.tests.factories import PaperFactory
from topics.tests.conftest import (
    ASSIGNMENTS,
    PAPERS,
    PENDING,
    REJECTED,
    action,
)
from topics.tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


def test_the_paper_page_shows_its_assignments_and_their_history(curator_client, curator, tree):
    paper = PaperFactory(arxiv_id="2609.99999")
    machine = AssignmentFactory(
        paper=paper, topic=tree["planning"], source="classifier", score=0.42, state=PENDING
    )
    action(curator_client, ASSIGNMENTS, "reject", [machine])

    page = curator_client.get(
        reverse("admin:papers_paper_change", args=[paper.pk])
    ).content.decode()

    inline = page[page.index('id="assignments-group"') :]
    for text in ("Planning", "Classifier", "Rejected", "0.42"):
        assert text in inline
    history = page[page.index('class="assignment-history"') :]
    assert history.index("ada") < history.index("(system)")  # newest first: the decision
    assert "Changed" in history and "Created" in history
    assert f"{reverse('admin:topics_assignment_add')}?paper={paper.pk}" in page


def test_papers_filter_by_topic_subtree_without_rejected(curator_client, tree):
    in_search = PaperFactory(title="in search")
    in_planning = PaperFactory(title="pending in planning")
    rejected = PaperFactory(title="rejected")
    PaperFactory(title="nowhere")
    AssignmentFactory(paper=in_search, topic=tree["search"])
    AssignmentFactory(paper=in_planning, topic=tree["planning"], state=PENDING)
    AssignmentFactory(paper=in_search, topic=tree["planning"])  # once, though twice in it
    AssignmentFactory(paper=rejected, topic=tree["planning"], state=REJECTED)

    response = curator_client.get(reverse(PAPERS), {"topic": tree["planning"].pk})

    assert {p.title for p in response.context["cl"].result_list} == {
        "in search",
        "pending in planning",
    }
    assert response.context["cl"].result_count == 2
