"""`rag llm use URL|PRESET [--model M] [--key-env VAR | --key-file PATH | --no-key] [--dry-run]
[--force] [--json]` — try an OpenAI-compatible server and make it the one that answers — and
`rag llm status [--json]`, which says which model answers now and whether its server does."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import get_config
from core.errors import EXIT_BAD_INPUT, EXIT_LLM
from ops.llm_keys import KeyRequest
from ops.llm_presets import PRESETS
from ops.llm_switch import LLMStatusReport, LLMUseReport, LLMUseRequest, llm_status, llm_use

_PRESET_NAMES = ", ".join(preset.name for preset in PRESETS)


class Command(RagCommand):
    help = "Switch the answers to a real model after trying it, or say which model answers."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        use = actions.add_parser(
            "use", help="try an OpenAI-compatible server; if it works, write it into .env")
        use.add_argument("target", metavar="URL|PRESET",
                         help=f"the server's base URL (e.g. http://127.0.0.1:11434/v1) or a "
                              f"preset: {_PRESET_NAMES}")
        use.add_argument("--url", default="", help="with a preset: its server elsewhere")
        use.add_argument("--model", default="", help="the model (default: the only one served)")
        keys = use.add_mutually_exclusive_group()
        keys.add_argument("--key-env", default="", metavar="VAR",
                          help="the environment variable that holds the key (.env names it)")
        keys.add_argument("--key-file", default="", metavar="PATH",
                          help="a file (chmod 600) that holds the key (.env names it)")
        keys.add_argument("--no-key", action="store_true",
                          help="send no key (a server on this machine only)")
        use.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                         help="limit of each probe request (default: LLM_TIMEOUT_SECONDS)")
        use.add_argument("--dry-run", action="store_true", help="probe only; write nothing")
        use.add_argument("--force", action="store_true",
                         help="write the settings even when the probe fails")
        use.add_argument("--json", action="store_true", help="print as JSON")
        status = actions.add_parser("status", help="the model that answers now, probed")
        status.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                            help="limit of the probe (default: LLM_TIMEOUT_SECONDS)")
        status.add_argument("--json", action="store_true", help="print as JSON")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if options["timeout"] is not None and not 0 < options["timeout"] <= 600:
            self.stderr.write("error [invalid_request]: --timeout must be between 0 and 600")
            raise SystemExit(EXIT_BAD_INPUT)
        if action == "status":
            self._status(options)
        else:
            self._use(options)

    def _use(self, options: dict[str, Any]) -> None:
        report = llm_use(config=get_config(), request=LLMUseRequest(
            target=options["target"], url=options["url"], model=options["model"],
            key=KeyRequest(key_env=options["key_env"], key_file=options["key_file"],
                           no_key=options["no_key"]),
            dry_run=options["dry_run"], force=options["force"],
            timeout_seconds=options["timeout"]))
        if options["json"]:
            self.write_json(report.as_dict())
        else:
            for line in _use_lines(report):
                self.stdout.write(line)
        failure = report.failure
        if failure is not None and (report.dry_run or not options["force"]):
            self.stderr.write(f"error [{failure.code}]: {failure.message}")
            raise SystemExit(EXIT_BAD_INPUT if failure.code == "llm_model_choice" else EXIT_LLM)

    def _status(self, options: dict[str, Any]) -> None:
        report = llm_status(config=get_config(), timeout_seconds=options["timeout"])
        if options["json"]:
            self.write_json(report.as_dict())
        else:
            for line in _status_lines(report):
                self.stdout.write(line)
        if report.health.status == "down":
            raise SystemExit(EXIT_LLM)


def _use_lines(report: LLMUseReport) -> list[str]:
    preset = f" ({report.preset} preset)" if report.preset else ""
    lines = [f"server: {report.as_dict()['base_url']}{preset}"]
    listing = report.listing
    if listing is not None:
        more = f" and {listing.total - 10} more" if listing.total > 10 else ""
        lines.append(f"models: {listing.total} served in {listing.latency_ms} ms: "
                     f"{', '.join(listing.ids[:10]) or '(none)'}{more}")
    if report.model:
        lines.append(f"model: {report.model}")
    if report.completion is not None:
        text = " ".join(report.completion.text.split())[:60]
        lines.append(f"completion: ok in {report.completion.latency_ms} ms: {text!r}")
    if report.stream is not None:
        first = report.stream.first_text_ms
        lines.append(f"streaming: ok, {report.stream.deltas} pieces, first after "
                     f"{first if first is not None else '-'} ms, all in "
                     f"{report.stream.latency_ms} ms")
    lines.append(f"key: {_key_text(report)}")
    lines.append(f"outbound: {_outbound_text(report.as_dict()['outbound'])}")
    lines += [f"warning: {note}" for note in [*report.key.notes, *report.warnings]]
    if report.failure is not None and report.written:
        lines.append(f"warning: the probe failed ({report.failure.code}: "
                     f"{report.failure.message}); written anyway (--force)")
    if report.dry_run:
        lines.append("dry run: nothing written")
    elif report.written:
        made = " (made from .env.sample, mode 600)" if report.created else ""
        names = ", ".join(report.written)
        lines.append(f"wrote {names} to {report.env_file}{made}")
        lines.append("restart `rag serve` for a running server to use it; "
                     "`rag llm status` checks it")
    elif report.failure is None:
        lines.append(f"{report.env_file} already says so: nothing to write")
    return lines


def _key_text(report: LLMUseReport) -> str:
    plan = report.key
    if plan.source == "none":
        return "none (LLM_API_KEY_REQUIRED=false: the server is on this machine)"
    where = plan.label or "(not set)"
    if plan.source == "variable":
        return f"from {where}; .env names the variable (LLM_API_KEY_ENV), never the key"
    if plan.source == "file":
        return f"from {where}; .env names the file (LLM_API_KEY_FILE), never the key"
    if plan.source == "environment":
        return f"from {where} in this environment; .env holds none"
    return f"from {where}, as set up for this server"


def _outbound_text(outbound: dict[str, Any]) -> str:
    if outbound["local"]:
        return "text sent to this server stays on this machine"
    return (f"{outbound['host']} is outside this machine: questions, and the text of knowledge "
            "bases whose outbound policy is `allowed`, are sent there; bases that are "
            "local-only (the default) are refused until `rag kb update SLUG --outbound allowed` "
            "(or list the host in RAG_OUTBOUND_LOCAL_HOSTS if it is yours)")


def _status_lines(report: LLMStatusReport) -> list[str]:
    shown = report.as_dict()
    health = report.health
    if report.provider != "openai-compatible":
        return [f"provider: {report.provider} (runs in this process: local, no probe)",
                f"model: {report.model}"]
    lines = [f"provider: {report.provider}", f"url: {shown['base_url']}",
             f"model: {report.model or '(not set)'}"]
    if report.key_set:
        lines.append(f"key: set, from {report.key_from}")
    elif report.key_from:
        lines.append(f"key: not set: {report.key_from} (LLM_API_KEY_ENV) is not set here")
    else:
        lines.append("key: not set" + ("" if report.key_needed else
                                      " (none needed: the server is on this machine)"))
    if health.status == "up":
        lines.append(f"server: up, models listed in {health.latency_ms} ms "
                     f"({health.models_total} served, {report.model} among them)")
    else:
        lines.append(f"server: down [{health.error}]: {health.message}")
    if report.outbound is not None:
        lines.append(f"outbound: {_outbound_text(report.outbound)}")
    return lines
