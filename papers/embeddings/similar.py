"""Similar papers: the live papers whose vectors are nearest to a paper's own."""

from __future__ import annotations

import numpy as np

from papers.models import Paper, PaperEmbedding

from .index import nearest, nearest_papers
from .vectors import vector_from_bytes

SIMILAR_COUNT = 10
# What a similar paper shows (its link, title, date and primary category): loading the 30 or
# so candidates whole cost about as much again as the rest of the call on a loaded machine.
LISTED_FIELDS = ("arxiv_id", "title", "submitted", "primary_category__code")


def _own_vector(paper_id: int) -> tuple[str, np.ndarray] | None:
    row = PaperEmbedding.objects.filter(paper_id=paper_id).values_list("model", "vector").first()
    return None if row is None else (row[0], vector_from_bytes(row[1]))


def similar_ranked(paper_id: int, k: int = SIMILAR_COUNT) -> list[tuple[int, float]]:
    """``[(paper id, cosine similarity)]``, best first: the ``k`` live papers (neither
    withdrawn nor deleted) nearest to paper ``paper_id``, the paper itself excluded, searched
    among vectors of the model the paper's own vector was made with (no encoder is loaded).
    Empty when the paper has no vector yet. Two queries with an index file, four without
    (``papers.embeddings.index.nearest``). Raises ValueError when ``k`` < 1."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    own = _own_vector(paper_id)
    if own is None:
        return []
    model, vector = own
    return nearest(vector, k, exclude=[paper_id], model=model)


def similar_papers(paper: Paper, k: int = SIMILAR_COUNT) -> list[tuple[Paper, float]]:
    """``[(Paper, cosine similarity)]``, best first, as :func:`similar_ranked`, each paper
    with only :data:`LISTED_FIELDS` loaded (other fields cost a query each), in the same two
    queries (four without an index file).
    Raises ValueError when ``k`` < 1."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    own = _own_vector(paper.pk)
    if own is None:
        return []
    model, vector = own
    return nearest_papers(
        vector,
        k,
        exclude=[paper.pk],
        model=model,
        papers=Paper.objects.select_related("primary_category").only(*LISTED_FIELDS),
    )
