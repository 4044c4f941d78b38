"""A follow-up question made standalone before it is searched.

"那 P2 呢？" after "客户 P1 工单应该怎么升级？" means "客户 P2 工单应该怎么升级？"; searched as it
stands it finds nothing useful. Two ways, chosen by the configured LLM:

- **rule** (the fake LLM, and the fallback when a real one fails): a question that is short
  (fewer than three content terms) or refers back (它, 那, 这个, it, that, they, "what about …")
  carries the previous standalone query. An identifier of the follow-up that has a counterpart
  of the same shape there (P2 for P1, ZK-12 for ZK-7) replaces it; the follow-up's remaining
  content words are appended. Deterministic, so tests and offline demos behave.
- **llm**: the same decision of whether to condense, then CONDENSE_PROMPT over the recent turns
  (within RAG_CONDENSE_TOKEN_BUDGET tokens, oldest dropped first), one call with its own
  deadline (RAG_CONDENSE_TIMEOUT_SECONDS) and no retries. An empty or overlong reply, or any
  error, falls back to the rule.

A question that is already standalone is searched as asked, without a model call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from answering.llm import (
    IN_PROCESS_PROVIDERS,
    FakeLLMClient,
    LLMClient,
    OpenAICompatibleClient,
    get_llm_client,
    llm_outbound_check,
    llm_outbound_record,
)
from answering.slots import llm_slot
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError
from core.text_tokens import decode, encode, tokens_count
from traces.recording import Trace

AS_ASKED, RULE, LLM = "as_asked", "rule", "llm"
CONDENSE_PROMPT = (
    "Rewrite the user's last question as one standalone search query that can be understood "
    "without the conversation. Resolve pronouns and references (它, 那, 这个, it, that, they) "
    "from the earlier turns; keep names, identifiers and numbers exactly as written; write in "
    "the language of the last question. Reply with the query only: no explanation, no quotes."
)
CONDENSED_MAX_CHARS = 300
ANSWER_TOKENS_IN_PROMPT = 200
CARRIED_MAX_CHARS = 200
SHORT_TERMS = 3

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Letters then digits, between non-alphanumerics (CJK text around it counts as a boundary).
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]+)([-_]?)(\d+)(?![A-Za-z0-9])")
# Not 该 or 其: they are also parts of ordinary words (应该, 其他).
ANAPHORS_ZH = ("它们", "他们", "她们", "这个", "那个", "这些", "那些", "这样", "那样", "它",
               "那", "这")
ANAPHORS_EN = frozenset({"it", "its", "that", "this", "they", "them", "their", "those",
                         "these", "he", "she", "his", "her", "there", "one", "ones"})
OPENERS_EN = ("what about", "how about", "and what", "and how", "and who", "what if", "also")
# Words that carry no content of their own in a follow-up: particles and question words.
FILLERS_ZH = ("那么", "还有", "的话", "怎么样", "怎么办", "怎么", "如何", "什么", "为什么", "多少",
              "哪些", "哪个", "是否", "多久", "呢", "吗", "呀", "吧")
STOPWORDS_EN = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did",
    "what", "who", "whom", "which", "how", "when", "where", "why", "about", "and", "or", "but",
    "of", "to", "in", "on", "for", "with", "from", "as", "at", "by", "if", "so", "then", "than",
    "also", "too", "just", "only", "can", "could", "should", "would", "will", "shall", "may",
    "might", "must", "has", "have", "had", "get", "got", "i", "me", "my", "we", "us", "our",
    "you", "your", "s", "t", "re", "ve", "ll", "d", "m", "ok", "okay", "yes", "no", "not",
    "any", "some", "there", "here", "now", "still", "again", "exactly", "please", "tell",
    *ANAPHORS_EN})


@dataclass(frozen=True)
class Condensed:
    query: str
    method: str  # as_asked, rule or llm
    llm_error: str | None = None  # the code of a failed condensation call (then: rule)
    # What the condensing model was sent, when it is a server outside this machine
    # (knowledge/outbound.py): for the trace, as every other call to a server elsewhere.
    outbound: dict[str, Any] | None = None

    def record(self, trace: Trace) -> None:
        trace.outbound_add([self.outbound] if self.outbound is not None else [])


@dataclass(frozen=True)
class Turn:
    question: str
    standalone_query: str
    answer: str
    # The bases the answer's citations name: its text quotes them, so whatever receives the
    # turn is held to their outbound policy, whatever the conversation's scope is now.
    knowledge_bases: tuple[str, ...] = ()


def standalone_query(*, question: str, turns: Sequence[Turn], config: Config,
                     knowledge_base_ids: Sequence[int] = ()) -> Condensed:
    """The query to search for `question` after `turns` (oldest first), searched in the bases
    `knowledge_base_ids`: the model condenses only where their outbound policy lets their
    text (the earlier answers quote it) reach it; elsewhere the rule does."""
    if not turns or not is_follow_up(question):
        return Condensed(query=question, method=AS_ASKED)
    ruled = Condensed(query=rule_condense(question, previous=turns[-1].standalone_query,
                                          anchor=_anchor(turns)), method=RULE)
    if config.llm_provider in IN_PROCESS_PROVIDERS:
        return ruled
    cited = sorted({slug for turn in turns for slug in turn.knowledge_bases})
    sent = None
    try:
        client = _condense_client(config=config)
        llm_outbound_check(config=config, what="the conversation", knowledge_bases=cited,
                           knowledge_base_ids=knowledge_base_ids)
        messages = condense_messages(question=question, turns=turns,
                                     budget=config.rag_condense_token_budget)
        sent = llm_outbound_record(config=config, messages=messages, knowledge_bases=cited)
        with connection_released(), llm_slot(config=config):
            reply = client.complete(messages=messages)
    except LocalRagError as exc:
        return Condensed(query=ruled.query, method=RULE, llm_error=exc.code, outbound=sent)
    query = " ".join(reply.strip().strip("\"'“”「」").split())
    if not query or len(query) > CONDENSED_MAX_CHARS:
        return Condensed(query=ruled.query, method=RULE, llm_error="llm_reply_unusable",
                         outbound=sent)
    return Condensed(query=query, method=LLM, outbound=sent)


def is_follow_up(question: str) -> bool:
    """Whether a question leans on what came before: short, or referring back."""
    lowered = question.lower().strip()
    words = _WORD.findall(lowered)
    if any(lowered.startswith(opener) for opener in OPENERS_EN):
        return True
    if any(word in ANAPHORS_EN for word in words):
        return True
    cjk = "".join(_CJK.findall(question))
    if any(anaphor in cjk for anaphor in ANAPHORS_ZH):
        return True
    return _content_size(question) < SHORT_TERMS


def _content_size(text: str) -> float:
    """Content terms, roughly: English words outside the stop list, and two CJK characters a
    term, fillers removed."""
    words = [word for word in _WORD.findall(text.lower()) if word not in STOPWORDS_EN]
    cjk = "".join(_CJK.findall(_without(text, FILLERS_ZH)))
    return len(words) + len(cjk) / 2


def _anchor(turns: Sequence[Turn]) -> str:
    """The latest question of the conversation that stood on its own (searched as asked): its
    key terms are what follow-ups carry, so a chain of follow-ups does not pile up terms."""
    return next((turn.question for turn in reversed(turns)
                 if turn.standalone_query == turn.question), turns[-1].standalone_query)


def rule_condense(question: str, *, previous: str, anchor: str | None = None) -> str:
    """The conversation carried into a follow-up (see the module docstring): the previous
    standalone query with the follow-up's identifiers put in ("那 P2 呢？" asks the same of
    P2), or else the key terms (content words) of `anchor`, the latest standalone question,
    before the follow-up's own."""
    carried = previous[:CARRIED_MAX_CHARS]
    rest = question
    substituted = False
    for match in _IDENTIFIER.finditer(question):
        prefix = match.group(1).lower()
        counterpart = next((old for old in _IDENTIFIER.finditer(carried)
                            if old.group(1).lower() == prefix and old.group(0) != match.group(0)),
                           None)
        if counterpart is not None:
            carried = carried.replace(counterpart.group(0), match.group(0))
            rest = rest.replace(match.group(0), " ")
            substituted = True
    if not substituted:
        source = (anchor if anchor is not None else previous)[:CARRIED_MAX_CHARS]
        carried = _remainder(source) or source
    remainder = _remainder(rest)
    if not remainder or remainder.lower() in carried.lower():
        return carried
    return f"{carried} {remainder}"


def _remainder(text: str) -> str:
    """The content words of a follow-up: anaphors, fillers, stop words and punctuation gone."""
    kept = []
    for piece in re.findall(rf"{_WORD.pattern}|{_CJK.pattern}", text):
        if _CJK.fullmatch(piece):
            piece = _without(piece, (*FILLERS_ZH, *ANAPHORS_ZH))
            if piece:
                kept.append(piece)
        elif piece.lower() not in STOPWORDS_EN:
            kept.append(piece)
    return " ".join(kept)


def _without(text: str, words: Sequence[str]) -> str:
    for word in words:
        text = text.replace(word, "")
    return text


def condense_messages(*, question: str, turns: Sequence[Turn],
                      budget: int) -> list[dict[str, str]]:
    """The condensation prompt: the recent turns (newest kept first within `budget` tokens,
    each answer cut to ANSWER_TOKENS_IN_PROMPT), then the last question."""
    lines: list[str] = []
    used = tokens_count(question)
    for turn in reversed(turns):
        answer = decode(encode(turn.answer)[:ANSWER_TOKENS_IN_PROMPT])
        pair = f"User: {turn.question}\nAssistant: {answer}"
        cost = tokens_count(pair)
        if used + cost > budget:
            break
        lines.insert(0, pair)
        used += cost
    conversation = "\n".join(lines)
    return [{"role": "system", "content": CONDENSE_PROMPT},
            {"role": "user", "content": f"Conversation:\n{conversation}\n\nLast question:\n"
                                        f"{question}"}]


def _condense_client(*, config: Config) -> LLMClient:
    """The configured LLM with the condensation's own deadline and no retries."""
    client = get_llm_client(config=config)
    if isinstance(client, FakeLLMClient):
        return client
    return OpenAICompatibleClient(
        base_url=config.llm_base_url, model=config.llm_model, api_key=config.llm_api_key,
        timeout_seconds=min(config.llm_timeout_seconds, config.rag_condense_timeout_seconds),
        max_retries=0, max_response_bytes=64 * 1024)
