"""`rag review list [--kb SLUG] [--status S] [--kind K] [--json]`, `rag review show TASK_ID
[--json]`, `rag review accept|exclude TASK_ID [--note TEXT] [--json]` and `rag review fix
TASK_ID --text TEXT|--text-file PATH [--json]`: the review queue, as the local operator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser
from django.core.serializers.json import DjangoJSONEncoder

from access.callers import OPERATOR
from core.commands import RagCommand
from core.errors import InvalidRequest
from review.selectors import task_get, tasks_list
from review.services import review_accept, review_exclude, review_fix
from review.types import FIX_MAX_CHARS, KINDS, STATUSES, ReviewAction, ReviewFix, ReviewQuery


class Command(RagCommand):
    help = ("The review queue: OCR pages below RAG_OCR_REVIEW_CONFIDENCE and detected tables; "
            "accept, fix or exclude a page.")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        listing = actions.add_parser("list", help="a page of tasks, oldest first")
        listing.add_argument("--kb", help="one knowledge base's tasks (its slug)")
        listing.add_argument("--status", choices=STATUSES)
        listing.add_argument("--kind", choices=KINDS)
        listing.add_argument("--limit", type=int, default=50)
        listing.add_argument("--offset", type=int, default=0)
        listing.add_argument("--json", action="store_true")
        for name, text in (("show", "one task in full"), ("accept", "accept the page as is"),
                           ("exclude", "take the page out of search"),
                           ("fix", "correct the page's text: a new version of the document")):
            action = actions.add_parser(name, help=text)
            action.add_argument("task_id", type=int)
            action.add_argument("--json", action="store_true")
            if name != "show":
                action.add_argument("--note", help="why (kept with the task)")
            if name == "fix":
                source = action.add_mutually_exclusive_group(required=True)
                source.add_argument("--text", help="the page's corrected text")
                source.add_argument("--text-file", type=Path, help="a UTF-8 file holding it")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "list":
            page = tasks_list(caller=OPERATOR, query=ReviewQuery(
                knowledge_base=options["kb"], status=options["status"], kind=options["kind"],
                limit=options["limit"], offset=options["offset"]))
            if options["json"]:
                self._json(page)
                return
            for task in page["tasks"]:
                self.stdout.write(_line(task))
            self.stdout.write(f"{len(page['tasks'])} of {page['total']} tasks")
            return
        task_id = options["task_id"]
        if action == "show":
            task = task_get(caller=OPERATOR, task_id=task_id)
        elif action == "accept":
            task = review_accept(request=ReviewAction(task_id=task_id, note=options["note"]),
                                 caller=OPERATOR)
        elif action == "exclude":
            task = review_exclude(request=ReviewAction(task_id=task_id, note=options["note"]),
                                  caller=OPERATOR)
        else:
            task = review_fix(request=ReviewFix(task_id=task_id, text=_text(options),
                                                note=options["note"]), caller=OPERATOR)
        if options["json"]:
            self._json(task.as_dict())
            return
        self.stdout.write(_line(task.as_dict()))
        if action == "show":
            for flag in task.flags:
                self.stdout.write(f"  check: {flag['text']}")
            self.stdout.write(task.corrected_text or task.extracted_text)

    def _json(self, payload: Any) -> None:
        self.stdout.write(json.dumps(payload, cls=DjangoJSONEncoder, ensure_ascii=False,
                                     indent=2))


def _line(task: dict[str, Any]) -> str:
    where = f"page {task['page']}" + (f" table {task['table_index'] + 1}"
                                      if task["table_index"] is not None else "")
    confidence = f" confidence {task['confidence']:.2f}" if task["confidence"] is not None \
        else ""
    return (f"#{task['id']} [{task['status']}] {task['kind']} {task['knowledge_base']}/"
            f"{task['source']} {where}{confidence}, {len(task['flags'])} flagged")


def _text(options: dict[str, Any]) -> str:
    if options["text"] is not None:
        return str(options["text"])
    path: Path = options["text_file"]
    try:
        if path.stat().st_size > FIX_MAX_CHARS * 4:
            raise InvalidRequest(f"{path} is larger than a page's text may be")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read {path}: {exc}") from None
