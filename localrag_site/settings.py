"""Django settings: everything comes from the typed config object (core.config)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import django_stubs_ext
from django.core.management.utils import get_random_secret_key

from core.config import get_config
from core.dburl import database_settings
from core.replicas import ALIAS_PREFIX as REPLICA_ALIAS_PREFIX
from core.replicas import replica_database_settings

# Lets the admins be declared as `admin.ModelAdmin[Model]` (the generic types django-stubs gives
# them) at runtime too: it only adds `__class_getitem__` to those Django classes.
django_stubs_ext.monkeypatch()

CONFIG = get_config()
BASE_DIR = Path(__file__).resolve().parent.parent

# Signs the sessions of the workbench's people and the admin: kept in `.env` (0600, written by
# `rag serve` on its first start) so that nobody is signed out by a restart. A process started
# without one (a command, a test) signs with a key of its own, which nothing outlives.
SECRET_KEY = CONFIG.rag_secret_key or get_random_secret_key()
DEBUG = False
# Host names the server answers to: loopback by default, which also keeps web pages from
# reaching the API through DNS rebinding. Add names/addresses to RAG_ALLOWED_HOSTS when serving
# beyond this machine.
ALLOWED_HOSTS = list(CONFIG.rag_allowed_hosts)

INSTALLED_APPS = [
    # The append-only audit log (audit/): every change, failed sign-in and lock-out. First, so
    # that its `changepassword` and `createsuperuser` (Django's, audited) are the ones run.
    "audit",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    # Serves /docs from its bundled Swagger UI files instead of a CDN (offline sites).
    "ninja",
    "core",
    "jobs",
    "traces",
    "access",
    # Failed sign-ins counted in PostgreSQL, per account and per address (access/throttling.py).
    "axes",
    "embeddings",
    "knowledge",
    # The review queue: OCR pages and tables a maintainer checks (review/).
    "review",
    # Vault folders watched and synced as their files change (watching/).
    "watching",
    # The search index that ranks candidates, derived from PostgreSQL (index/).
    "index.apps.IndexConfig",
    "retrieval",
    "answering",
    "conversations",
    "evaluation",
    "ops",
    # The web workbench; django_htmx ships htmx itself (no CDN, works offline).
    "django_htmx",
    "workbench",
]

MIDDLEWARE = [
    "localrag_site.http_errors.MethodNotAllowedMiddleware",
    "localrag_site.tracing.TraceMiddleware",
    "localrag_site.read_primary.ReadPrimaryMiddleware",
    "localrag_site.http_errors.JsonBodyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The people's pages in English or Chinese (Accept-Language, or the switch's cookie); the
    # API's paths stay in English with their headers unchanged (workbench/language.py).
    "workbench.language.PeopleLocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who acts, from where, in which request: what audit entries carry (audit/context.py).
    "audit.middleware.AuditContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "workbench.security.ContentSecurityPolicyMiddleware",
    # Last, as django-axes requires: it answers a locked-out sign-in with 429.
    "axes.middleware.AxesMiddleware",
]

# Sign-ins go through django-axes first: an account or address past RAG_LOGIN_FAILURE_LIMIT
# failures is refused for RAG_LOGIN_LOCKOUT_MINUTES, right password or not; the counts live in
# PostgreSQL (every worker process sees them) and the admin lists and clears them under Axes.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = CONFIG.rag_login_failure_limit
AXES_COOLOFF_TIME = timedelta(minutes=CONFIG.rag_login_lockout_minutes)
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "access.throttling.axes_client_address"
AXES_USERNAME_CALLABLE = "access.throttling.axes_username"
AXES_COOLOFF_MESSAGE = ("Too many failed sign-ins for this account or from this address: try "
                        "again later, or ask an administrator to clear the lock.")

# The workbench signs people in with Django's own login (people are the users that grants and
# tokens belong to; they need not be staff).
LOGIN_URL = "workbench:login"
LOGIN_REDIRECT_URL = "workbench:ask"
LOGOUT_REDIRECT_URL = "workbench:login"
# Behind a TLS-terminating proxy (RAG_TLS_PROXY): its X-Forwarded-Proto says https, and the
# cookies go over https only. Trusted only because the operator says the server is reachable
# through that proxy alone, which sets the header itself.
if CONFIG.rag_tls_proxy:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = CONFIG.rag_hsts_seconds
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# A refused CSRF check outside the admin and the workbench answers in the API's error body.
CSRF_FAILURE_VIEW = "localrag_site.http_errors.csrf_failure"

ROOT_URLCONF = "localrag_site.urls"
WSGI_APPLICATION = "localrag_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

DATABASES = {"default": database_settings(CONFIG.database_url),
             # Read replicas for searches only (core/replicas.py); the router keeps every write,
             # and every read outside a search, on the primary.
             **{f"{REPLICA_ALIAS_PREFIX}{number}": replica_database_settings(url)
                for number, url in enumerate(CONFIG.database_replica_urls, start=1)}}
DATABASE_ROUTERS = ["core.replicas.ReplicaRouter"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Request bodies over 1 MB are answered 413 payload_too_large by the API.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

# The workbench and the admin speak English (the default) and Simplified Chinese; the
# translations live in workbench/locale (the .po and its compiled .mo, both committed).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
# Dates keep the workbench's compact forms in English and take Chinese ones in Chinese.
FORMAT_MODULE_PATH = ["workbench.formats"]
LANGUAGE_COOKIE_SAMESITE = "Lax"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# gunicorn serves no static files itself; the admin's CSS/JS are served by the app (see urls.py).
STATIC_ROOT = BASE_DIR / ".local" / "static"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # One JSON object per line, with the trace id of the request it belongs to (core/logs.py).
    "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "loggers": {
        "localrag": {"handlers": ["console"], "level": "INFO", "propagate": True},
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # pypdf logs every repair of a damaged PDF; the ingest's warning names what matters.
        "pypdf": {"level": "ERROR"},
    },
}
