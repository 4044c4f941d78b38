"""Access control: every query reads only the knowledge bases its caller may (callers.py), API
tokens are issued and revoked by api_tokens.py, and the API authenticates bearers in auth.py."""
