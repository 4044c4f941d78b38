"""Project wiring: settings, URLs, the API root, WSGI/ASGI and the `rag` entry point.

Importing this package plugs the knowledge app's embedding-provider table into core's
configuration (core imports no app, so it cannot look the table up itself). Every way in — `rag`,
manage.py, WSGI/ASGI, the test settings — imports this package first, so EMBEDDING_PROVIDER is
always validated against the same table.
"""

from core.config import embedding_providers_use
from knowledge.embeddings.providers import PROVIDERS

embedding_providers_use(PROVIDERS)
