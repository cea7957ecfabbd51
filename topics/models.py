"""The topic taxonomy and the assignments of papers to topics."""

from django.conf import settings
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords

from papers.models import Category, Paper
from topicsite.models import TimeStampedModel

from .querysets import AssignmentQuerySet, TopicQuerySet


class Topic(TimeStampedModel):
    """A node of the taxonomy.

    ``short_name`` is an abbreviation shown before the name in breadcrumbs ("LLM" for "Large
    Language Model"). ``path`` is the materialised path of primary keys from the root
    (``"3/17/"``), kept by ``topics.services`` so descendants are one prefix query.
    ``keywords``: comma-separated terms; with the name and description, what the topic's
    meaning is embedded from (:mod:`topics.tagging.semantic`).
    The rule: ``rule_query`` (keywords over title and abstract: phrases in quotes, OR, NOT,
    parentheses) and ``rule_categories`` (papers must have one of them, primary or cross-list).
    An empty query with categories matches every paper in those categories.
    """

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    short_name = models.CharField(max_length=32, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    path = models.CharField(max_length=255, db_index=True, editable=False, default="")
    description = models.TextField(blank=True)
    # Comma-separated terms that say what the topic is about, beside its name and
    # description: part of the text its meaning is embedded from (topics.tagging.semantic).
    keywords = models.TextField(
        blank=True,
        help_text="Comma-separated terms that say what the topic is about (its meaning for "
        "semantic tagging, with the name and description).",
    )
    rule_query = models.TextField(blank=True)
    rule_categories = models.ManyToManyField(Category, blank=True, related_name="topics")
    active = models.BooleanField(default=True)

    objects = TopicQuerySet.as_manager()
    history = HistoricalRecords(m2m_fields=[rule_categories])

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(
                fields=["path"], name="topic_path_prefix_idx", opclasses=["varchar_pattern_ops"]
            )
        ]

    def __str__(self):
        return self.display_name

    @property
    def display_name(self) -> str:
        """``"LLM: Large Language Model"`` with a short name, else the name."""
        return f"{self.short_name}: {self.name}" if self.short_name else self.name

    @property
    def has_rule(self) -> bool:
        return bool(self.rule_query.strip()) or self.rule_categories.exists()

    def get_absolute_url(self):
        return reverse("topics:detail", kwargs={"slug": self.slug})


class Assignment(TimeStampedModel):
    """A paper placed in a topic, with where it came from and its state.

    ``source``: rule / classifier / semantic / curator / import. ``state``: accepted, pending
    review (a machine's suggestion) or rejected. ``score`` is in [0, 1] where a machine
    produced it. ``evidence`` says why a machine placed it: ``{"rule": query}``,
    ``{"terms": [[word, weight], ...]}`` (classifier), ``{"cosine": c, "nearest": [paper pks],
    "labels": n}`` (semantic); ``{}`` otherwise. A **curator decision** is an assignment
    whose ``decided_by`` is set: re-tagging never changes or deletes it.
    """

    class Source(models.TextChoices):
        RULE = "rule", "Rule"
        CLASSIFIER = "classifier", "Classifier"
        SEMANTIC = "semantic", "Semantic similarity"
        CURATOR = "curator", "Curator"
        IMPORT = "import", "Import"

    class State(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        # Machine-made and close to the classifier's threshold, or a semantic suggestion for a
        # topic whose precision is not yet known: not shown until a curator decides.
        PENDING = "pending", "Pending review"
        REJECTED = "rejected", "Rejected"

    # No single-column indexes: ``unique_paper_topic`` leads with the paper and
    # ``assignment_topic_state_idx`` with the topic, so two more would only slow every write
    # (tagging inserts thousands of assignments a second).
    paper = models.ForeignKey(
        Paper, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    topic = models.ForeignKey(
        Topic, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACCEPTED)
    score = models.FloatField(null=True, blank=True)
    # Indexed only where set (assignment_decided_by_idx): machine-made rows, nearly all of
    # them, have no decider, and tagging inserts thousands a second.
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assignment_decisions",
        db_index=False,
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    evidence = models.JSONField(default=dict, db_default={}, blank=True)
    # The paper's ``submitted``, copied by database triggers (migration 0005) on every insert
    # that does not give it and whenever the paper's date changes, so a topic's newest papers
    # are one index scan. An insert that gives it (tagging's bulk SQL, which joins the paper)
    # gives ``paper_live`` from the same row (migration 0013).
    submitted = models.DateField(null=True, blank=True, editable=False)
    # Whether the paper counts (papers.querysets.LIVE: neither withdrawn nor deleted), copied
    # by database triggers (migration 0006) like ``submitted``, so that counts and the newest
    # papers leave such papers out without reading the papers table.
    paper_live = models.BooleanField(default=True, db_default=True, editable=False)

    objects = AssignmentQuerySet.as_manager()
    # The history is read by paper, by topic, by assignment and by date (the admin's
    # tables); never by creation time or decider, so those columns go unindexed there.
    history = HistoricalRecords(
        excluded_fields=["submitted", "paper_live", "evidence"],
        no_db_index=["created_at", "decided_by"],
    )

    class Meta:
        ordering = ["topic", "paper"]
        constraints = [
            models.UniqueConstraint(fields=["paper", "topic"], name="unique_paper_topic"),
            models.CheckConstraint(
                condition=models.Q(score__isnull=True) | models.Q(score__gte=0, score__lte=1),
                name="assignment_score_in_unit_interval",
            ),
        ]
        indexes = [
            models.Index(fields=["topic", "state"], name="assignment_topic_state_idx"),
            # A curator's decisions (and the SET NULL when a user is deleted).
            models.Index(
                fields=["decided_by"],
                condition=models.Q(decided_by__isnull=False),
                name="assignment_decided_by_idx",
            ),
            # A topic's accepted papers that count, newest first: the topic page's cards,
            # its paper count and momentum's per-day counts read this index alone.
            models.Index(
                fields=["topic", "-submitted", "-paper"],
                condition=models.Q(state="accepted", paper_live=True),
                name="assignment_topic_newest_idx",
            ),
        ]

    def __str__(self):
        return f"{self.paper.identifier} → {self.topic.name} ({self.state}, {self.source})"

    @property
    def is_curator_decision(self) -> bool:
        return self.decided_by_id is not None


class AssignmentReport(models.Model):
    """A signed-in reader's report that ``assignment`` puts its paper in the wrong topic,
    with an optional ``note`` (at most :data:`NOTE_MAX_LENGTH` characters). One per reader and
    assignment. A report is **open** while no curator has decided the assignment since
    ``created_at``; open reports put the assignment in the admin's review queue
    (``AssignmentQuerySet.reported``)."""

    NOTE_MAX_LENGTH = 500

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="reports")
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignment_reports"
    )
    note = models.CharField(max_length=NOTE_MAX_LENGTH, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "reporter"], name="unique_assignment_reporter"
            ),
        ]

    def __str__(self):
        return f"{self.reporter} reports assignment {self.assignment_id}"


class TopicStats(models.Model):
    """Precomputed figures of a topic: ``paper_count``, the distinct papers accepted in the
    topic or a descendant (what ``topics.selectors.topic_papers`` counts), and its momentum.

    ``generation`` is bumped whenever the count may have changed (after tagging, curation or a
    move commits); the count is current when ``counted_generation`` equals it. Kept by
    ``topics.selectors.topic_paper_count`` and ``topics.caches``; see there.
    """

    topic = models.OneToOneField(
        Topic, primary_key=True, on_delete=models.CASCADE, related_name="stats"
    )
    paper_count = models.PositiveIntegerField(default=0)
    generation = models.PositiveBigIntegerField(default=1)
    counted_generation = models.PositiveBigIntegerField(default=0)
    counted_at = models.DateTimeField(null=True, blank=True)
    # The topic's momentum as ``topics.momentum.topic_momentum_stored`` last computed it, and
    # what it was computed on: "<as_of>:<newest paper id>:<generation>".
    momentum = models.JSONField(default=dict, blank=True)
    momentum_key = models.CharField(max_length=64, blank=True)

    class Meta:
        verbose_name_plural = "topic stats"

    def __str__(self):
        return f"{self.topic_id}: {self.paper_count} papers"

    @property
    def is_current(self) -> bool:
        return self.counted_generation == self.generation


class TopicRedirect(models.Model):
    """An old slug of a renamed or merged-away topic; its URL answers 301 to ``topic``."""

    old_slug = models.SlugField(max_length=200, unique=True)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="redirects")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["old_slug"]

    def __str__(self):
        return f"{self.old_slug} → {self.topic.slug}"


class ClassifierModel(TimeStampedModel):
    """A trained classifier, versioned and stored so that every worker uses the same one.

    ``artifact`` holds the serialised model (TF-IDF vectoriser and one linear model per topic,
    with per-topic thresholds); ``metrics`` the held-out figures per topic; only one row is
    ``active`` at a time (the newest successful training).
    """

    version = models.PositiveIntegerField(unique=True)
    artifact = models.BinaryField()
    metrics = models.JSONField(default=dict, blank=True)
    topic_count = models.PositiveIntegerField(default=0)
    label_count = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=False, db_index=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["active"],
                condition=models.Q(active=True),
                name="one_active_classifier",
            ),
        ]

    def __str__(self):
        return f"classifier v{self.version}{' (active)' if self.active else ''}"


class EmergingCluster(TimeStampedModel):
    """A cluster of recent papers that no topic fits (``topics.emerging``): a candidate for a
    new topic, shown to curators in the admin and adoptable as a topic in one action.

    Computed over the papers submitted in ``window_start`` to ``window_end`` (both included);
    ``size`` papers (``papers``, through :class:`EmergingClusterPaper`), of which
    ``recent_count`` were submitted in the last four weeks of the window and ``previous_count``
    in the four before; ``growth`` is ``(recent_count + 1) / (previous_count + 1)`` (above 1:
    growing). ``terms``: the suggested name terms, best first (c-TF-IDF over the cluster's
    titles and abstracts against the other recent papers); ``name``: the suggested topic name
    made from them; ``example_titles``: the titles of the papers nearest its centre.
    ``adopted_topic``: the topic a curator made of it (kept as a record when the clusters are
    recomputed; the others are replaced).
    """

    name = models.CharField(max_length=200)
    terms = models.JSONField(default=list, blank=True)
    example_titles = models.JSONField(default=list, blank=True)
    size = models.PositiveIntegerField()
    recent_count = models.PositiveIntegerField()
    previous_count = models.PositiveIntegerField()
    growth = models.FloatField()
    window_start = models.DateField()
    window_end = models.DateField()
    papers = models.ManyToManyField(Paper, through="EmergingClusterPaper", related_name="+")
    adopted_topic = models.ForeignKey(
        Topic, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    adopted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    adopted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-growth", "-size", "pk"]

    def __str__(self):
        return f"{self.name} ({self.size} papers, growth {self.growth:.1f}×)"


class EmergingClusterPaper(models.Model):
    """A paper of an :class:`EmergingCluster`, with its cosine ``similarity`` to the cluster's
    centre (in [-1, 1]; the papers nearest the centre are the examples)."""

    cluster = models.ForeignKey(EmergingCluster, on_delete=models.CASCADE, related_name="members")
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="+")
    similarity = models.FloatField()

    class Meta:
        ordering = ["cluster", "-similarity", "paper"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "paper"], name="unique_emerging_paper"),
        ]

    def __str__(self):
        return f"{self.paper_id} in emerging cluster {self.cluster_id}"
