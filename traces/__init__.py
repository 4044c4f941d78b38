"""A trace of every search and answer: recorded by recording.py, summarised by selectors.py,
looked at in the read-only admin and pruned by `rag traces prune` or past its retention."""
