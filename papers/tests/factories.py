"""factory_boy factories for papers. Categories come from the real arXiv taxonomy codes."""

import datetime as dt

import factory
import numpy as np

from papers.models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    Paper,
    PaperAffiliation,
    PaperEmbedding,
)


class CategoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Category
        django_get_or_create = ("code",)

    code = "cs.CL"
    name = factory.LazyAttribute(lambda o: f"Category {o.code}")
    archive = factory.LazyAttribute(lambda o: o.code.split(".")[0])
    archive_name = factory.LazyAttribute(lambda o: f"Archive {o.archive}")
    group = "grp_cs"
    group_name = "Computer Science"


class PaperFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Paper

    arxiv_id = factory.Sequence(lambda n: f"2609.{n:05d}")
    title = factory.Sequence(lambda n: f"A study of topic number {n}")
    title_raw = factory.SelfAttribute("title")
    abstract = "We study language model agents trained with reinforcement learning."
    abstract_raw = factory.SelfAttribute("abstract")
    primary_category = factory.SubFactory(CategoryFactory)
    submitted = dt.date(2026, 9, 29)
    updated = factory.SelfAttribute("submitted")


class AuthorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Author
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"Author {n}")


class AffiliationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Affiliation
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"University {n}")


class AuthorshipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Authorship

    paper = factory.SubFactory(PaperFactory)
    author = factory.SubFactory(AuthorFactory)
    position = factory.Sequence(lambda n: n)


class PaperAffiliationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PaperAffiliation

    paper = factory.SubFactory(PaperFactory)
    affiliation = factory.SubFactory(AffiliationFactory)
    position = factory.Sequence(lambda n: n)


def big_collaboration_paper(*, authors: int = 5000, **fields) -> Paper:
    """A paper with ``authors`` authors (each with one affiliation of 60, and as many paper
    affiliations), written in bulk, as a HEP or astro-ph collaboration paper has them."""
    paper = PaperFactory(author_count=authors, **fields)
    stored = Author.objects.bulk_create(
        Author(name=f"Collaborator {paper.pk}-{i:05d}") for i in range(authors)
    )
    institutes = [
        AffiliationFactory(name=f"Institute {paper.pk}-{i}") for i in range(min(authors, 60))
    ]
    authorships = Authorship.objects.bulk_create(
        Authorship(paper=paper, author=author, position=i) for i, author in enumerate(stored)
    )
    Authorship.affiliations.through.objects.bulk_create(
        Authorship.affiliations.through(
            authorship_id=authorship.pk, affiliation_id=institutes[i % len(institutes)].pk
        )
        for i, authorship in enumerate(authorships)
    )
    PaperAffiliation.objects.bulk_create(
        PaperAffiliation(paper=paper, affiliation=institute, position=i)
        for i, institute in enumerate(institutes)
    )
    return paper


def embedding_near(paper, direction, rng, *, scale: float = 0.05, model: str = "test-model"):
    """Store for ``paper`` a unit vector near ``direction`` (a 1-D array; Gaussian noise of
    standard deviation ``scale`` per component from the numpy Generator ``rng``) as its
    ``PaperEmbedding`` of ``model``, and return the paper: papers placed in a known
    neighbourhood for tests of similarity, clustering and "for you"."""
    vector = np.asarray(direction, dtype=float) + rng.normal(scale=scale, size=len(direction))
    vector = (vector / np.linalg.norm(vector)).astype("<f4")
    PaperEmbedding.objects.create(
        paper=paper,
        model=model,
        dimension=len(direction),
        text_sha256="0" * 64,
        vector=vector.tobytes(),
    )
    return paper
