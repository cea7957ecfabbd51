"""The demo taxonomy: a topic per arXiv archive among the stored papers (under a topic per
group), and keyword rules for reference topics whose names pin their meaning down, so tagging
places every stored paper on a topic page."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.text import slugify

from papers.models import Category, Paper

from ..models import Topic
from .taxonomies import TaxonomyImportResult, arxiv_tree_sync

__all__ = ["DEMO_REFERENCE_RULES", "DemoTaxonomyResult", "demo_taxonomy_load"]

# Keyword rules for reference topics whose names pin their meaning down; set only where the
# topic exists and has no rule yet, so a curator's rule is never replaced.
DEMO_REFERENCE_RULES = {
    "Reinforcement Learning": '"reinforcement learning"',
    "Knowledge Distillation": '"knowledge distillation"',
    "Low-Rank Adaptation": '"low-rank adaptation" OR "low rank adaptation"',
    "Supervised Fine-Tuning": (
        '"supervised fine-tuning" OR "supervised finetuning" OR "supervised fine tuning"'
    ),
    "Reinforcement Learning with Verifiable Rewards": (
        '"verifiable reward" OR "verifiable rewards" OR RLVR'
    ),
    "GUI Agents": '"GUI agent" OR "GUI agents"',
    "Procedural Content Generation": '"procedural content generation"',
}


@dataclass
class DemoTaxonomyResult:
    """Counts of what :func:`demo_taxonomy_load` did: ``archives`` found among the stored
    papers, topics created per group and per archive, and topics whose rule was set or changed
    (archive categories, or a :data:`DEMO_REFERENCE_RULES` query)."""

    archives: int = 0
    groups_created: int = 0
    archives_created: int = 0
    rules_set: int = 0


def demo_taxonomy_load() -> DemoTaxonomyResult:
    """Build a topic per arXiv archive present among the stored papers, under a root topic per
    arXiv group, so that tagging places every stored paper on a topic page.

    Archives come from the stored papers' primary categories and cross-lists
    (``Category.archive``/``archive_name``/``group_name``). Each archive topic (named by the
    archive, "High Energy Physics - Theory") gets a rule whose categories are all the stored
    categories of that archive (but those a category topic under it carries, once
    :func:`topics.importers.taxonomies.arxiv_topics_import` made them: the two share one tree) and
    no query. Where an archive has its group's name (``cs``, "Computer Science"), the group topic
    carries the rule itself instead of a same-named child. Topics are found again by name under
    their parent, so a second run creates nothing; slugs come from names and never take a slug
    another topic has. Also sets :data:`DEMO_REFERENCE_RULES` on reference topics that have no rule.

    Returns a :class:`DemoTaxonomyResult`. Queues no tagging: run ``manage.py tag --all``.
    """
    result = DemoTaxonomyResult()
    with transaction.atomic():
        category_ids = set(
            Paper.objects.order_by().values_list("primary_category_id", flat=True).distinct()
        ) | set(
            Paper.cross_lists.through.objects.order_by()
            .values_list("category_id", flat=True)
            .distinct()
        )
        archives = set(
            Category.objects.filter(pk__in=category_ids).values_list("archive", flat=True)
        )
        tree = TaxonomyImportResult()
        arxiv_tree_sync(tree, archives=archives, categories=False)
        result.archives = len(archives)
        result.groups_created = tree.created.get("group", 0)
        result.archives_created = tree.created.get("archive", 0)
        result.rules_set = tree.rules_set

        for name, query in DEMO_REFERENCE_RULES.items():
            topic = Topic.objects.filter(slug=slugify(name)).first()
            if topic and not topic.rule_query.strip() and not topic.rule_categories.exists():
                topic.rule_query = query
                topic.save(update_fields=["rule_query", "updated_at"])
                result.rules_set += 1
    return result
