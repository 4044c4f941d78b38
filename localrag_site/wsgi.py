"""The WSGI application `rag serve` runs: the site, with a statement timeout on every database
connection it opens (commands such as `rag ingest` keep their long statements)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "localrag_site.settings")
application = get_wsgi_application()

from core.config import get_config  # noqa: E402 — needs the settings configured above
from core.db import statement_timeout_apply  # noqa: E402

statement_timeout_apply(seconds=get_config().rag_statement_timeout_seconds)

if get_config().rag_search_index == "on":
    from index.maintenance import background_enable  # noqa: E402

    # A search that finds a base's index missing or behind has it caught up beside the request.
    background_enable()
