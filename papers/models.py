"""arXiv records as stored: categories, papers (one row per canonical arXiv identifier), their
versions, authors with ordered authorships, and the affiliations given on each paper."""

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.expressions import Col
from django.db.models.functions import Greatest, Least
from django.urls import reverse
from django.utils.text import slugify
from simple_history.models import HistoricalRecords

from papers.parsers import split_dois
from topicsite.models import TimeStampedModel

from .querysets import LIVE, PaperQuerySet


class Category(models.Model):
    """An arXiv category by its canonical code (``cs.CL``, ``hep-th``, ``math-ph``).

    Aliases (``math.MP``) and subsumed legacy archives (``cmp-lg``) are resolved to canonical codes
    before anything is stored, so only canonical codes appear here.
    """

    code = models.CharField(max_length=32, unique=True)
    name = models.CharField(max_length=200)
    archive = models.CharField(max_length=32, db_index=True)
    archive_name = models.CharField(max_length=200)
    group = models.CharField(max_length=32)
    group_name = models.CharField(max_length=200)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["code"]
        verbose_name_plural = "categories"

    def __str__(self):
        return f"{self.code} ({self.name})"


class _DatabaseOnlyColumn(Col):
    """A column Django's model state does not hold: named by the field, not ``field.column``."""

    def as_sql(self, compiler, connection):
        identifiers = (self.alias, self.target.name) if self.alias else (self.target.name,)
        return ".".join(map(compiler.quote_name_unless_alias, identifiers)), []


class StoredSearchVectorField(SearchVectorField):
    """A ``tsvector`` column that PostgreSQL computes and Django never loads or writes.

    Papers migration 0005 adds it on PostgreSQL only, as ``GENERATED ALWAYS AS
    (setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english',
    abstract), 'B')) STORED`` with a GIN index, so every write path (the ORM, the backfill's
    COPY) keeps it current. To Django the field is virtual (no column of its own: never
    selected, inserted or updated, and absent on SQLite), yet queries can match and rank on
    it: ``Paper.objects.filter(search_vector=SearchQuery(...))``, ``F("search_vector")``.
    Reading it on an instance gives None.
    """

    def __init__(self, *args, **kwargs):
        kwargs.update(null=True, blank=True, editable=False, serialize=False)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        for key in ("null", "blank", "editable", "serialize"):
            kwargs.pop(key, None)
        return name, path, args, kwargs

    def get_attname_column(self):
        return self.get_attname(), None

    def db_type(self, connection):
        return None  # the migration adds the column itself, on PostgreSQL only

    def contribute_to_class(self, cls, name, **kwargs):
        super().contribute_to_class(cls, name, **kwargs)
        setattr(cls, self.attname, None)

    def get_col(self, alias, output_field=None):
        return _DatabaseOnlyColumn(alias, self, output_field or self)


class Paper(TimeStampedModel):
    """One paper, whatever the source or version it came from.

    ``arxiv_id`` is the canonical identifier without version (``2409.01234``, ``hep-th/9901001``);
    papers imported from outside arXiv (the reference page) have none and are keyed by
    ``import_key`` instead. ``submitted`` is the v1 date, ``updated`` the latest version's date.
    ``withdrawn``: the latest version is a withdrawal notice; ``deleted_at``: when a harvest
    saw arXiv report the record deleted. Either keeps the paper out of counts, momentum,
    "latest papers", feeds and digests (``Paper.objects.live()``), never off its own page.
    ``latest_version`` is the version the stored metadata describes, None when no source said
    (OAI ``arXiv`` and ``oai_dc`` records carry no version). ``doi`` is the DOI field as the
    source wrote it, ``dois`` the valid DOIs in it. Quality flags a curator can filter on:
    ``text_repaired`` (double-encoded text was repaired: the raw text is in ``title_raw``,
    ``abstract_raw`` and the authorships' ``name_raw``), ``title_missing`` (the source gave
    no title: ``title`` is :data:`TITLE_PLACEHOLDER`).
    """

    TITLE_PLACEHOLDER = "[No title: the source gave none]"

    arxiv_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    import_key = models.CharField(max_length=128, unique=True, null=True, blank=True)
    latest_version = models.PositiveSmallIntegerField(
        default=1, null=True, blank=True, help_text="Empty when no source said which version."
    )
    title = models.TextField()
    title_raw = models.TextField(blank=True)
    abstract = models.TextField(blank=True)
    abstract_raw = models.TextField(blank=True)
    comments = models.TextField(blank=True)
    journal_ref = models.TextField(blank=True)
    doi = models.CharField(max_length=255, blank=True, help_text="The DOI field as received.")
    # Database defaults too, so that writers listing columns (bench, COPY) may leave them out.
    dois = models.JSONField(
        default=list, db_default=[], blank=True, help_text="The valid DOIs of the field."
    )
    report_no = models.CharField(max_length=255, blank=True)
    license = models.CharField(max_length=255, blank=True)
    submitter = models.CharField(max_length=255, blank=True)
    # No index of its own: paper_category_newest_idx (Meta.indexes) leads with it.
    primary_category = models.ForeignKey(
        Category, on_delete=models.PROTECT, related_name="primary_papers", db_index=False
    )
    cross_lists = models.ManyToManyField(Category, related_name="cross_listed_papers", blank=True)
    # Indexed by paper_newest_idx (submitted, id) and paper_live_submitted_idx (Meta.indexes).
    submitted = models.DateField()
    updated = models.DateField(null=True, blank=True)
    announced = models.DateField(null=True, blank=True)
    # Indexed with deleted_at by paper_not_live_idx (Meta.indexes).
    withdrawn = models.BooleanField(default=False)
    # When an OAI-PMH harvest saw the record reported deleted (header status="deleted"); the
    # row stays, hidden where withdrawn papers are (papers.querysets.LIVE).
    deleted_at = models.DateTimeField(null=True, blank=True)
    text_repaired = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Double-encoded text (mojibake) was repaired on ingestion.",
    )
    title_missing = models.BooleanField(
        default=False,
        db_default=False,
        help_text="The source gave no title; a placeholder is shown.",
    )
    author_count = models.PositiveIntegerField(default=0)
    affiliation_count = models.PositiveIntegerField(default=0)
    datestamp = models.DateField(null=True, blank=True, help_text="Last OAI datestamp seen.")
    source = models.CharField(max_length=32, blank=True, help_text="Format last stored from.")
    search_vector = StoredSearchVectorField()

    objects = PaperQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(arxiv_id__isnull=False) | models.Q(import_key__isnull=False),
                name="paper_has_identifier",
            ),
        ]
        indexes = [
            models.Index(fields=["-submitted", "-id"], name="paper_newest_idx"),
            models.Index(
                fields=["primary_category", "-submitted", "-id"], name="paper_category_newest_idx"
            ),
            # All new papers that count in a window (momentum's share, the topics index): an
            # index-only range scan, as the plain submitted index gave before papers could be
            # withdrawn or deleted.
            models.Index(
                fields=["submitted"],
                condition=models.Q(withdrawn=False, deleted_at__isnull=True),
                name="paper_live_submitted_idx",
            ),
            # The few papers that do not count (withdrawn or deleted): an author's papers that
            # count are their authorships less these (papers.author_selectors), read from the
            # authorships' index and this small one instead of each paper's row.
            models.Index(fields=["id"], condition=~LIVE, name="paper_not_live_idx"),
        ]

    def __str__(self):
        return f"{self.arxiv_id or self.import_key}: {self.title[:80]}"

    @property
    def identifier(self) -> str:
        """The arXiv identifier, or ``local:<pk>`` for papers from outside arXiv (the id the
        API, the ask answers and the admin all use; their page is ``/papers/local/<pk>/``)."""
        return self.arxiv_id or f"local:{self.pk}"

    def get_absolute_url(self):
        if self.arxiv_id:
            return reverse("papers:detail", kwargs={"arxiv_id": self.arxiv_id})
        return reverse("papers:detail-local", kwargs={"pk": self.pk})

    @property
    def doi_links(self) -> list[str]:
        """The DOIs to link: ``dois``, or those of ``doi`` when the list was never filled (a
        paper written by hand or in the admin)."""
        return self.dois or split_dois(self.doi)[0]

    @property
    def arxiv_url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv_id}" if self.arxiv_id else ""

    @property
    def is_live(self) -> bool:
        """The paper counts (``papers.querysets.LIVE`` on this instance): neither withdrawn
        nor deleted."""
        return not self.withdrawn and self.deleted_at is None

    @property
    def pdf_url(self) -> str:
        """The PDF on arXiv; empty for a withdrawn or deleted paper (arXiv serves a
        withdrawal notice or nothing) and for papers not on arXiv."""
        return f"https://arxiv.org/pdf/{self.arxiv_id}" if self.arxiv_id and self.is_live else ""


class PaperVersion(models.Model):
    """A version of a paper (``number`` 1 is v1); ``submitted`` is when arXiv received it."""

    # No index of its own: unique_paper_version (paper, number) leads with it.
    paper = models.ForeignKey(
        Paper, on_delete=models.CASCADE, related_name="versions", db_index=False
    )
    number = models.PositiveSmallIntegerField()
    submitted = models.DateTimeField(null=True, blank=True)
    size_kb = models.PositiveIntegerField(null=True, blank=True)
    source_type = models.CharField(max_length=8, blank=True)

    class Meta:
        ordering = ["paper", "number"]
        constraints = [
            models.UniqueConstraint(fields=["paper", "number"], name="unique_paper_version"),
        ]

    def __str__(self):
        return f"{self.paper.identifier}v{self.number}"


def author_slug(name: str) -> str:
    """The cosmetic part of an author page's address: ``name`` in ASCII lowercase words
    (``naoum-c-bacalis``), at most 80 characters; ``author`` for a name with no Latin letters
    or digits."""
    return slugify(name)[:80].strip("-") or "author"


class Author(models.Model):
    """A person by the display name sources give (``Naoum C. Bacalis``).

    Name variants of one person (initials, accents, "Jr.") are separate rows until a curator
    merges them (``papers.author_services.authors_merge``; nothing merges them by itself): a
    merged-away author keeps its row and name as a **variant** of the survivor,
    ``merged_into``. Its authorships have moved to the survivor, its page address redirects
    there, and ingestion that meets its name again credits the survivor. ``merged_into`` always
    names an author that is not itself merged (merges flatten chains). Edits, merges and
    splits are in ``history`` (django-simple-history), with who did them and why.
    """

    name = models.CharField(max_length=300, unique=True)
    keyname = models.CharField(max_length=200, blank=True)
    forenames = models.CharField(max_length=200, blank=True)
    suffix = models.CharField(max_length=50, blank=True)
    merged_into = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="variants",
        help_text="Set by a curator's merge: this name is a variant of that author.",
    )

    history = HistoricalRecords()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(merged_into=models.F("id")), name="author_not_merged_into_self"
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("authors:detail", kwargs={"pk": self.pk, "slug": self.slug})

    @property
    def slug(self) -> str:
        """The cosmetic part of the page address (:func:`author_slug` of the name)."""
        return author_slug(self.name)


class Affiliation(models.Model):
    """An institution by the name given on papers."""

    name = models.CharField(max_length=500, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Authorship(models.Model):
    """An author's place (``position``, 0-based) on a paper, with the affiliations given there."""

    # No index of its own: unique_author_position (paper, position) leads with it.
    paper = models.ForeignKey(
        Paper, on_delete=models.CASCADE, related_name="authorships", db_index=False
    )
    # No index of its own: authorship_author_newest_idx (author, -submitted, -paper) leads
    # with it.
    author = models.ForeignKey(
        Author, on_delete=models.PROTECT, related_name="authorships", db_index=False
    )
    position = models.PositiveIntegerField()
    name_raw = models.TextField(
        blank=True,
        default="",
        db_default="",
        help_text="The name as the source wrote it, when that differs from the name.",
    )
    affiliations = models.ManyToManyField(Affiliation, blank=True, related_name="authorships")
    # The paper's submitted date, kept by database triggers (papers migration 0015) whoever
    # writes: set on insert and when the authorship moves to another paper, rewritten when
    # the paper's date changes. Only for the author-newest index; read the paper's.
    submitted = models.DateField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["paper", "position"]
        constraints = [
            models.UniqueConstraint(fields=["paper", "position"], name="unique_author_position"),
        ]
        indexes = [
            # An author's papers newest first, read from the index alone: the API's author=
            # filter walks it per matching author (papers.author_selectors).
            models.Index(
                fields=["author", "-submitted", "-paper"], name="authorship_author_newest_idx"
            ),
        ]

    def __str__(self):
        return f"{self.author} on {self.paper.identifier}"


class PaperAffiliation(models.Model):
    """The affiliations of a paper, in order of first mention (0-based ``position``).

    Derived from authorships for arXiv records; given directly where a source lists affiliations
    per paper (the reference page).
    """

    # No index of its own: both unique constraints lead with it.
    paper = models.ForeignKey(
        Paper, on_delete=models.CASCADE, related_name="paper_affiliations", db_index=False
    )
    # Indexed with the date and the paper (Meta).
    affiliation = models.ForeignKey(
        Affiliation, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    position = models.PositiveIntegerField()
    # The paper's submitted date, kept by database triggers (papers migration 0019) whoever
    # writes the row, as Authorship.submitted is (0015): an affiliation's papers newest first
    # are a range of paper_affil_affil_newest_idx (the API's ``affiliation=`` list).
    submitted = models.DateField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["paper", "position"]
        indexes = [
            # Counting an affiliation's papers reads this index alone, as the (affiliation,
            # paper) index it replaced (0016) did.
            models.Index(
                fields=["affiliation", "-submitted", "-paper"], name="paper_affil_affil_newest_idx"
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["paper", "position"], name="unique_paper_affiliation_position"
            ),
            models.UniqueConstraint(
                fields=["paper", "affiliation"], name="unique_paper_affiliation"
            ),
        ]

    def __str__(self):
        return f"{self.affiliation} on {self.paper.identifier}"


class HarvestRun(TimeStampedModel):
    """One harvest of a source, stored so that it can be watched, resumed and audited.

    - ``kind`` and ``params``: what is harvested, as ``papers.sources.sources_for`` takes them
      (plain JSON; OAI ``sets`` and an incremental ``from`` are resolved when the run is made);
    - ``status``: pending (made, or paused to continue in a new task), running, succeeded,
      incomplete (ran to its end, but arXiv did not deliver all it was asked for: see
      ``gaps``), failed (kept resumable: its checkpoint is where the last stored page left it);
    - ``gaps``: what was asked for and not delivered, one object per gap: ``source`` (URL or
      file), ``query`` (the API query or id asked for), ``offset`` (0-based position in the
      result set where the gap starts, ``null`` for a single id), ``record`` and ``message``;
    - ``window_from`` / ``window_until``: the datestamp window an OAI list harvest covers (both
      days included; ``window_from`` empty: from the repository's first record); empty for
      other harvests;
    - the checkpoint, saved in the same transaction as each page's records: ``pages_done``, the
      ``records_*`` counts, ``resumption_token`` (the OAI token of the next page, blank when
      none), ``last_datestamp`` (the newest OAI datestamp stored) and ``position`` (where to
      resume: ``{"source": index of the source, "state": the source's own position}``);
    - ``errors``: messages naming the record or page (rejected records, unparseable pages,
      refused or failed requests), the first ``ERRORS_KEPT``; ``error_count`` counts them all;
    - ``task_id``: the Celery task that made the run, so a task delivered again after its
      worker died resumes this run instead of starting another;
    - ``attempt``: executions so far; each execution writes its pages only while it is the
      latest, so an older execution that is still alive stops at its next page.
    """

    ERRORS_KEPT = 1000

    class Kind(models.TextChoices):
        OAI = "oai", "OAI-PMH"
        ATOM = "atom", "arXiv API"
        SNAPSHOT = "snapshot", "Snapshot file"
        RECORDED = "recorded", "Recorded responses"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        INCOMPLETE = "incomplete", "Incomplete (gaps)"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    task_id = models.CharField(max_length=255, blank=True, default="")
    attempt = models.PositiveIntegerField(default=0)
    pages_done = models.PositiveIntegerField(default=0)
    records_created = models.PositiveIntegerField(default=0)
    records_updated = models.PositiveIntegerField(default=0)
    records_unchanged = models.PositiveIntegerField(default=0)
    records_rejected = models.PositiveIntegerField(default=0)
    records_deleted = models.PositiveIntegerField(
        default=0,
        help_text="Records the source reported deleted (stored ones are marked, kept).",
    )
    records_duplicate = models.PositiveIntegerField(
        default=0, help_text="Records that repeated a paper already in the same page or batch."
    )
    resumption_token = models.TextField(blank=True)
    last_datestamp = models.DateField(null=True, blank=True)
    position = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    error_count = models.PositiveIntegerField(default=0)
    gaps = models.JSONField(
        default=list, blank=True, help_text="What was asked for and not delivered."
    )
    window_from = models.DateField(
        null=True, blank=True, help_text="First OAI datestamp covered (empty: from the start)."
    )
    window_until = models.DateField(null=True, blank=True, help_text="Last OAI datestamp covered.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task_id"],
                condition=~models.Q(task_id=""),
                name="unique_harvest_run_task",
            ),
        ]
        indexes = [models.Index(fields=["kind", "status"], name="harvest_run_kind_status_idx")]

    def __str__(self):
        return f"Harvest run #{self.pk} ({self.kind}, {self.status})"

    @property
    def records_done(self) -> int:
        """Records stored or found unchanged or rejected so far."""
        return (
            self.records_created
            + self.records_updated
            + self.records_unchanged
            + self.records_rejected
        )

    @property
    def is_finished(self) -> bool:
        """The run went through to its end: succeeded, or incomplete with its gaps recorded."""
        return self.status in (self.Status.SUCCEEDED, self.Status.INCOMPLETE)

    @property
    def is_resumable(self) -> bool:
        """Every run that has not finished can be resumed (a running one is taken over)."""
        return not self.is_finished


class PaperEmbedding(models.Model):
    """A paper's sentence embedding, the source of truth the nearest-neighbour index is built
    from: one row per paper, written in one transaction with the model and the text it came from.

    ``vector`` holds ``dimension`` little-endian float32 values (L2-normalised, so a dot product
    is the cosine similarity); ``model`` names the encoder that made it (its name and variant,
    as ``papers.embeddings.encoder.Encoder.model_id`` gives it); ``text_sha256`` is the SHA-256
    of the exact text embedded (``papers.embeddings.encoder.paper_text``), so a paper is
    re-embedded only when its title or abstract changed or the model did.
    """

    paper = models.OneToOneField(
        Paper, on_delete=models.CASCADE, primary_key=True, related_name="embedding"
    )
    model = models.CharField(max_length=200)
    dimension = models.PositiveSmallIntegerField()
    text_sha256 = models.CharField(max_length=64)
    vector = models.BinaryField()
    embedded_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["model", "embedded_at"], name="embedding_model_time_idx")]

    def __str__(self):
        return f"{self.paper_id} ({self.model}, {self.dimension} dims)"


class PaperDuplicate(models.Model):
    """Two stored papers that are the same paper under two ids (an arXiv identifier and a
    local or snapshot copy, or two arXiv identifiers for the same text), found by
    ``papers.duplicates.duplicates_detect``.

    ``original`` is the one kept wherever a paper is sent once (digests, the feed): the arXiv
    one, else the earlier submitted, else the older row; ``paper`` is its copy. ``similarity``
    is the TF-IDF cosine of their titles and abstracts in [0, 1]. ``decision``: ``detected``
    (linked by detection, counts as a duplicate), ``confirmed`` or ``rejected`` by a curator
    (final: detection never changes a decided pair; a rejected pair is not a duplicate).
    One row per unordered pair.
    """

    class Decision(models.TextChoices):
        DETECTED = "detected", "Detected"
        CONFIRMED = "confirmed", "Confirmed by a curator"
        REJECTED = "rejected", "Rejected by a curator"

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="duplicate_of_links")
    original = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="copy_links")
    similarity = models.FloatField(help_text="TF-IDF cosine of title and abstract, 0 to 1.")
    detected_at = models.DateTimeField(auto_now_add=True, db_index=True)
    decision = models.CharField(
        max_length=16, choices=Decision.choices, default=Decision.DETECTED, db_index=True
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-detected_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                Least("paper", "original"),
                Greatest("paper", "original"),
                name="unique_duplicate_pair",
            ),
            models.CheckConstraint(
                condition=~models.Q(paper=models.F("original")), name="duplicate_of_another_paper"
            ),
        ]

    def __str__(self):
        return f"{self.paper.identifier} = {self.original.identifier} ({self.similarity:.2f})"
