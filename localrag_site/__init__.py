"""Project wiring: settings, URLs, the API root, WSGI/ASGI and the `rag` entry point.

Importing this package plugs the knowledge app into core, which imports no app and so cannot look
them up itself: the embedding-provider table into the configuration, and the background-jobs
worker, the folder watch and the "is any API token issued?" check into `rag serve`. Every way
in — `rag`, manage.py, WSGI/ASGI, the test settings — imports this package first, so
EMBEDDING_PROVIDER is always validated against the same table.
"""

from core.config import embedding_providers_use
from core.serving import (
    BackgroundWatcher,
    BackgroundWorker,
    serve_tokens_check_use,
    serve_watcher_use,
    serve_worker_use,
)
from knowledge.embeddings.providers import PROVIDERS

embedding_providers_use(PROVIDERS)


def _jobs_worker() -> BackgroundWorker:
    # Imported when `rag serve` starts a worker, not by every command: it loads the database layer.
    from jobs.worker import Worker

    return Worker()


def _folder_watcher() -> BackgroundWatcher:
    # Imported when `rag serve` starts with RAG_WATCH, not by every command.
    import logging

    from knowledge.watch_sync import ServeWatcher

    logger = logging.getLogger("localrag.watch")
    return ServeWatcher(say=logger.info, warn=logger.warning)


def _tokens_issued(config) -> bool:
    from access.callers import access_control_on

    return access_control_on(config=config)


serve_worker_use(_jobs_worker)
serve_watcher_use(_folder_watcher)
serve_tokens_check_use(_tokens_issued)
