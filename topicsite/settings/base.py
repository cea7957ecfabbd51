"""Settings shared by every environment. Everything that varies comes from the environment.

Variables: ``DATABASE_URL`` (unset: a SQLite file under ``var/``), ``REDIS_URL`` (unset: Celery
runs tasks eagerly in-process and the cache is local memory), ``DJANGO_SECRET_KEY``,
``DJANGO_DEBUG``, ``DJANGO_ALLOWED_HOSTS``, ``ARXIV_*`` (harvest settings).
"""

from pathlib import Path

from kombu import Queue

from .env import env, env_bool, env_database, env_int, env_list, env_redis_url

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "django_celery_beat",
    "simple_history",
    "allauth",
    "allauth.account",
    "corsheaders",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
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
    "whitenoise.middleware.WhiteNoiseMiddleware",
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
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_redis_url("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "topicsite",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

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

# --- accounts (django-allauth; issue 5) ---

# --- follows, feed and Atom feeds (issue 5) ---

# --- digests (issue 5) ---

# --- api (DRF, django-filter, drf-spectacular, CORS; issue 6) ---

# --- ask (issue 7) ---

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
CELERY_TASK_QUEUES = (Queue("default"), Queue("harvest"), Queue("tag"))
CELERY_TASK_ROUTES = {
    "papers.tasks.*": {"queue": "harvest"},
    "topics.tasks.*": {"queue": "tag"},
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
