"""`rag watch [PATH] [--kb SLUG]` — keep the index in step with a vault: re-index changed, added,
renamed and deleted files a second or two after each burst of changes, until Ctrl-C."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import get_config
from watching.folders import folders_watch
from watching.sync import SyncNow, watch_folders


class Command(RagCommand):
    help = ("Watch a vault and re-index each file as it changes (one ingest per burst of "
            "changes); a folder that disappears deletes nothing and is watched again when it "
            "comes back. Stops on Ctrl-C or SIGTERM, an ingest under way at its next safe point.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", help="vault folder (default: VAULT_PATH)")
        parser.add_argument("--kb", default=None, metavar="SLUG",
                            help="with PATH: index it into this knowledge base; without PATH: "
                                 "watch every vault folder of the knowledge base")

    def handle(self, *args: Any, path: str | None, kb: str | None, **options: Any) -> None:
        config = get_config()
        folders = watch_folders(path=path, knowledge_base=kb, config=config)
        stop = threading.Event()
        sync = SyncNow(config=config, stop=stop, knowledge_base=kb if path is not None else None)

        def stopping(signum: int, frame: object) -> None:
            self.stderr.write("stopping: an ingest under way stops at its next safe point"
                              if sync.under_way else "stopping")
            signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C again: now
            stop.set()

        signal.signal(signal.SIGTERM, stopping)
        signal.signal(signal.SIGINT, stopping)
        folders_watch(folders, stop=stop, sync=sync, say=self._say, warn=self._warn)

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _warn(self, line: str) -> None:
        self.stderr.write(f"warning: {line}")
        self.stderr.flush()
