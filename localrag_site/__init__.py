"""Project wiring: settings, URLs, the API root, WSGI/ASGI and the `rag` entry point."""
