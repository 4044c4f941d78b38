"""`rag conversations eval FILE`: how well follow-up questions are searched.

Each conversation of the file (eval/conversations.yaml) is replayed turn by turn. A turn is
searched twice: as asked, and as the conversation makes it (conversations/condense.py, with the
standalone queries of the earlier turns; the earlier answers are not generated, so an LLM
condensation sees the questions only). hit@1 is whether the top result is from one of the turn's
expected_sources and, where the turn gives expected_heading, whether the result's own heading
contains it (`hit@1`); `doc hit@1` asks the first only. Follow-ups (every turn after the first)
are what condensation changes; first turns are the same both ways.

The file's conversations are split by their position: odd (c01, c03, …) is `dev`, for working
on the rule; even is `test`, for reporting. Scores per split and language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from access.callers import Scope
from conversations.condense import AS_ASKED, Turn, standalone_query
from core.config import Config
from core.errors import InvalidRequest
from core.safe_yaml import YAMLRefused, yaml_load_plain
from retrieval.services import search
from retrieval.types import RetrievalRequest

SPLITS = ("dev", "test", "all")
EVAL_FILE_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class EvalTurn:
    question: str
    expected_sources: tuple[str, ...]
    expected_heading: str | None


@dataclass(frozen=True)
class EvalConversation:
    id: str
    lang: str
    split: str
    turns: tuple[EvalTurn, ...]


def conversations_eval_load(path: Path) -> list[EvalConversation]:
    """The conversations of an evaluation file, each checked, each with its split."""
    if not path.is_file() or path.stat().st_size > EVAL_FILE_MAX_BYTES:
        raise InvalidRequest(f"{path} is not a file of at most {EVAL_FILE_MAX_BYTES} bytes")
    try:
        data = yaml_load_plain(path.read_text(encoding="utf-8"))
        conversations = []
        for position, item in enumerate(data["conversations"]):
            turns = tuple(EvalTurn(question=str(turn["question"]),
                                   expected_sources=tuple(map(str, turn["expected_sources"])),
                                   expected_heading=turn.get("expected_heading"))
                          for turn in item["turns"])
            if not turns:
                raise ValueError(f"conversation {item['id']} has no turns")
            conversations.append(EvalConversation(id=str(item["id"]), lang=str(item["lang"]),
                                                  split="dev" if position % 2 == 0 else "test",
                                                  turns=turns))
    except (YAMLRefused, ValueError, KeyError, TypeError) as exc:
        raise InvalidRequest(f"{path}: not a conversations evaluation file ({exc!r})") from exc
    return conversations


def conversations_eval(*, conversations: Sequence[EvalConversation], config: Config,
                       scope: Scope, split: str = "all") -> dict[str, Any]:
    """hit@1 of follow-ups searched as asked and as condensed, per split and language, and
    every follow-up turn with both queries and both top results."""
    if split not in SPLITS:
        raise InvalidRequest(f"split must be one of {', '.join(SPLITS)}")
    rows = []
    for conversation in conversations:
        if split != "all" and conversation.split != split:
            continue
        turns: list[Turn] = []
        for index, turn in enumerate(conversation.turns):
            condensed = standalone_query(question=turn.question, turns=turns, config=config)
            alone = _hit(turn, query=turn.question, config=config, scope=scope)
            condensed_hit = alone if condensed.method == AS_ASKED else _hit(
                turn, query=condensed.query, config=config, scope=scope)
            turns.append(Turn(question=turn.question, standalone_query=condensed.query,
                              answer=""))
            rows.append({"conversation": conversation.id, "split": conversation.split,
                         "lang": conversation.lang, "turn": index + 1,
                         "follow_up": index > 0, "question": turn.question,
                         "standalone_query": condensed.query, "condensation": condensed.method,
                         "hit_as_asked": alone[0], "hit_condensed": condensed_hit[0],
                         "doc_hit_as_asked": alone[1], "doc_hit_condensed": condensed_hit[1],
                         "top_as_asked": alone[2], "top_condensed": condensed_hit[2]})
    return {"split": split, "summary": _summary(rows), "turns": rows}


def _hit(turn: EvalTurn, *, query: str, config: Config,
         scope: Scope) -> tuple[bool, bool, str]:
    """(hit, document hit, the top result) of one query."""
    outcome = search(RetrievalRequest(query=query, scope=scope, top_k=1), config=config)
    if not outcome.results:
        return False, False, ""
    top = outcome.results[0]
    document = top.source in turn.expected_sources
    hit = document and (turn.expected_heading is None or turn.expected_heading in top.heading)
    return hit, document, f"{top.source} › {top.heading}"


def _summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (split, language) group of follow-ups, and one for all of them."""
    follow_ups = [row for row in rows if row["follow_up"]]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in follow_ups:
        groups.setdefault((row["split"], row["lang"]), []).append(row)
    groups[("all", "all")] = follow_ups
    lines = []
    for (split, lang), members in sorted(groups.items()):
        count = len(members)
        lines.append({"split": split, "lang": lang, "follow_ups": count,
                      "condensed": sum(row["condensation"] != AS_ASKED for row in members),
                      "hit_at_1_as_asked": _rate(members, "hit_as_asked"),
                      "hit_at_1_condensed": _rate(members, "hit_condensed"),
                      "doc_hit_at_1_as_asked": _rate(members, "doc_hit_as_asked"),
                      "doc_hit_at_1_condensed": _rate(members, "doc_hit_condensed")})
    return lines


def _rate(rows: list[dict[str, Any]], key: str) -> float:
    return round(sum(row[key] for row in rows) / len(rows), 3) if rows else 0.0
