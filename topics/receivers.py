"""Reactions to other apps' signals."""

from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_delete
from django.dispatch import receiver

from papers.models import Affiliation, Author, Authorship, Category, Paper, PaperAffiliation
from papers.signals import papers_stored
from topicsite.pagecache import page_cache_invalidate

from .models import Assignment, Topic


@receiver(papers_stored, dispatch_uid="topics.tag_stored_papers")
def tag_stored_papers(sender, paper_ids, **kwargs):
    """Queue tagging for papers an ingestion batch stored (the signal fires after commit). With
    the broker down the papers stay stored and the failure is logged with the command that tags
    them (``topicsite.publish.task_publish``)."""
    from topicsite.publish import task_publish

    from .tasks import tag_papers

    if paper_ids:
        ids = sorted(paper_ids)
        task_publish(tag_papers, ids, remedy=f"manage.py tag --ids {','.join(map(str, ids))}")


# What the shared pages and cached cards show of these models. Saves one by one (the admin, a
# management command) are caught here; ingestion and the assignment services write in bulk
# and move the version on themselves. Deletes are caught only for the models the admin
# deletes one by one: a receiver would cost Authorship and PaperAffiliation their fast bulk
# delete when ingestion rewrites a paper's authors.
_SHOWN_SAVED = (Topic, Paper, Author, Affiliation, Category, Authorship, PaperAffiliation)
_SHOWN_DELETED = (Topic, Paper, Author, Affiliation, Category)


def pages_after_edit(sender, **kwargs):
    """A row that pages show, saved or deleted one by one: the pages anonymous readers share
    and the cached topic cards show the change once the transaction commits
    (``topicsite.pagecache.page_cache_invalidate``)."""
    transaction.on_commit(page_cache_invalidate)


for _model in _SHOWN_SAVED:
    post_save.connect(
        pages_after_edit, sender=_model, dispatch_uid=f"topics.pages_after_save.{_model.__name__}"
    )
for _model in _SHOWN_DELETED:
    post_delete.connect(
        pages_after_edit,
        sender=_model,
        dispatch_uid=f"topics.pages_after_delete.{_model.__name__}",
    )


@receiver(pre_delete, sender=Paper, dispatch_uid="topics.counts_after_paper_delete")
def counts_after_paper_delete(sender, instance, **kwargs):
    """A paper about to be deleted (its assignments go with it): once that commits, the stored
    counts and momentum of the topics it was in, and of their ancestors, are recounted as
    after any change of assignments. One query on the paper's assignments."""
    from .services import topic_caches_invalidate_on_commit

    topic_ids = Assignment.objects.filter(paper=instance).values_list("topic_id", flat=True)
    topic_caches_invalidate_on_commit(list(topic_ids))
