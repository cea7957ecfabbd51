"""Helpers for tests that follow an API list's ``next`` links."""


def walk(client, url: str) -> tuple[list[str], set[int]]:
    """Every paper id along ``next`` from ``url`` (each page must answer 200), and the set of
    ``meta.count`` values the pages gave (one value when the count is stable)."""
    seen, counts = [], set()
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        seen += [paper["id"] for paper in body["results"]]
        counts.add(body["meta"]["count"])
        url = body["next"]
    return seen, counts
