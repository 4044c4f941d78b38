#!/usr/bin/env python
"""Django's command-line utility; the same entry point as the `rag` console script."""

from localrag_site.cli import main

if __name__ == "__main__":
    main()
