"""The web workbench: people ask, read sources, tune retrieval, evaluate and manage their
knowledge bases in the browser, through the same services as the API, the CLI and MCP."""
