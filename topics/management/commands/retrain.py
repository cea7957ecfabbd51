"""``manage.py retrain [--sync [--no-apply]]``: train a new classifier version."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from topics.models import Assignment, ClassifierModel, Topic
from topics.tagging.semantic import TARGET_PRECISION, semantic_active
from topics.tagging.training import classifier_train
from topics.tasks import retrain_classifier


class Command(BaseCommand):
    """Queues ``topics.tasks.retrain_classifier`` (run here on the embedded default), or with
    ``--sync`` calls ``topics.tagging.training.classifier_train`` here. Prints the new version's
    summary; per topic at ``--verbosity 2``. Raises CommandError for ``--no-apply`` without
    ``--sync``."""

    help = (
        "Train, store and activate a new classifier version on the current labels (curator "
        "decisions, rule and import assignments), then re-tag every paper with it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--sync", action="store_true", help="Train in this process instead of a worker."
        )
        parser.add_argument(
            "--no-apply",
            action="store_true",
            help="With --sync: do not queue re-tagging of every paper afterwards.",
        )

    def handle(self, *args, sync, no_apply, verbosity, **options):
        if no_apply and not sync:
            raise CommandError("--no-apply only works with --sync.")
        if sync:
            stored = classifier_train(apply=not no_apply)
        else:
            retrain_classifier.delay()
            if not settings.CELERY_TASK_ALWAYS_EAGER:
                self.stdout.write("Queued classifier retraining on the tag queue.")
                return
            stored = ClassifierModel.objects.filter(active=True).first()
            if stored is None:
                raise CommandError("Retraining stored no classifier (another run held the lock).")
        self._summary(stored, verbosity)
        self._semantic_summary(verbosity)

    def _summary(self, stored: ClassifierModel, verbosity: int):
        metrics = stored.metrics
        self.stdout.write(
            self.style.SUCCESS(
                f"Classifier v{stored.version}: {metrics.get('trained', 0)} topics with a model, "
                f"{metrics.get('fallback', 0)} fall back to their rules; trained on "
                f"{metrics.get('papers', 0)} papers, {metrics.get('labels', 0)} labels."
            )
        )
        if verbosity < 2:
            return
        for figures in sorted(metrics.get("topics", {}).values(), key=lambda f: f["name"]):
            line = f"  {figures['name']}: {figures['status']}, {figures['positives']} positives"
            if figures["status"] == "trained":
                line += (
                    f", threshold {figures['threshold']:.3f}, held-out precision "
                    f"{figures['precision']:.2f} recall {figures['recall']:.2f} "
                    f"F1 {figures['f1']:.2f}"
                )
            self.stdout.write(line)

    def _semantic_summary(self, verbosity: int):
        """The semantic model of the current labels (built from them at once; no training
        needed) and the review queue's size."""
        model = semantic_active()
        pending = Assignment.objects.filter(state=Assignment.State.PENDING).machine_made()
        if model is None:
            self.stdout.write("Semantic tagging is off (no encoder model files).")
        else:
            labelled = sum(1 for figures in model.metrics.values() if figures["positives"])
            self.stdout.write(
                f"Semantic: {model.topic_count} topics, {labelled} with accepted labels, "
                f"{int(model.accepts.sum())} accept on their own (held-out precision >= "
                f"{TARGET_PRECISION}), the others suggest for review."
            )
            if verbosity >= 2:
                names = dict(Topic.objects.values_list("pk", "name"))
                for topic_id, figures in sorted(
                    model.metrics.items(), key=lambda item: names.get(item[0], "")
                ):
                    if figures["positives"]:
                        self.stdout.write(
                            f"  {names.get(topic_id, topic_id)}: {figures['positives']} "
                            f"accepted, {figures['negatives']} rejected, precision "
                            f"{figures['precision']}, "
                            f"{'accepts' if figures['accepts'] else 'suggests'}"
                        )
        self.stdout.write(f"Review queue: {pending.count()} pending machine assignments.")
