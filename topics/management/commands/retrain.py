"""``manage.py retrain [--sync [--no-apply]]``: train a new classifier version."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from topics.models import ClassifierModel
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
