"""Similar papers: the live papers whose vectors are nearest to a paper's own."""

from __future__ import annotations

from papers.models import Paper, PaperEmbedding

from .index import nearest
from .vectors import vector_from_bytes

SIMILAR_COUNT = 10


def similar_ranked(paper_id: int, k: int = SIMILAR_COUNT) -> list[tuple[int, float]]:
    """``[(paper id, cosine similarity)]``, best first: the ``k`` live papers (neither
    withdrawn nor deleted) nearest to paper ``paper_id``, the paper itself excluded, searched
    among vectors of the model the paper's own vector was made with (no encoder is loaded).
    Empty when the paper has no vector yet. Two queries with an index file, four without
    (``papers.embeddings.index.nearest``). Raises ValueError when ``k`` < 1."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    row = PaperEmbedding.objects.filter(paper_id=paper_id).values_list("model", "vector").first()
    if row is None:
        return []
    model, data = row
    return nearest(vector_from_bytes(data), k, exclude=[paper_id], model=model)


def similar_papers(paper: Paper, k: int = SIMILAR_COUNT) -> list[tuple[Paper, float]]:
    """``[(Paper, cosine similarity)]``, best first, as :func:`similar_ranked`, each paper
    with its primary category loaded: one query more, whatever ``k``."""
    ranked = similar_ranked(paper.pk, k)
    if not ranked:
        return []
    found = Paper.objects.select_related("primary_category").in_bulk([pid for pid, _ in ranked])
    return [(found[pid], score) for pid, score in ranked if pid in found]
