"""/sitemap.xml (an index over topics and papers), /robots.txt and /favicon.ico."""

import re

import pytest

from papers.tests.factories import PaperFactory
from topics.tests.factories import TopicFactory

pytestmark = pytest.mark.django_db


def test_sitemap_index_lists_the_topic_and_paper_sitemaps(client):
    response = client.get("/sitemap.xml")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/xml")
    locations = re.findall(r"<loc>([^<]+)</loc>", response.content.decode())
    assert locations == [
        "http://testserver/sitemap-topics.xml",
        "http://testserver/sitemap-papers.xml",
    ]


def test_sitemaps_hold_active_topics_and_live_papers(client):
    topic = TopicFactory(slug="agents")
    TopicFactory(slug="hidden", active=False)
    paper = PaperFactory(arxiv_id="2609.00001")
    PaperFactory(arxiv_id="2609.00002", withdrawn=True)

    topics = client.get("/sitemap-topics.xml").content.decode()
    assert "http://testserver/topics/agents/" in topics and "/topics/hidden/" not in topics
    papers = client.get("/sitemap-papers.xml").content.decode()
    assert re.findall(r"<loc>([^<]+)</loc>", papers) == [
        f"http://testserver{paper.get_absolute_url()}"
    ]
    assert topic.get_absolute_url() in topics


def test_sitemap_bad_page_and_unknown_section_are_404(client):
    assert client.get("/sitemap-papers.xml?p=99").status_code == 404
    assert client.get("/sitemap-papers.xml?p=x").status_code == 404
    assert client.get("/sitemap-nothing.xml").status_code == 404


def test_robots_allows_pages_and_points_at_the_sitemap(client):
    response = client.get("/robots.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert lines[0] == "User-agent: *"
    for path in ("/admin/", "/accounts/", "/api/v1/", "/follows/", "/feed/"):
        assert f"Disallow: {path}" in lines
    assert "Disallow: /" not in lines and "Disallow: /topics/" not in lines
    assert "Sitemap: http://testserver/sitemap.xml" in lines


def test_favicon_ico_redirects_to_a_real_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("img/favicon.ico")
    from django.contrib.staticfiles import finders

    data = open(finders.find("img/favicon.ico"), "rb").read()
    assert data[:4] == b"\x00\x00\x01\x00" and len(data) > 1000  # an ICO image
