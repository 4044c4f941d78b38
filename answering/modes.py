"""The answer mode for what the refusal rule decided, and the fixed texts the server itself
writes."""

from __future__ import annotations

MODE_RAG = "rag"
MODE_NO_ANSWER = "no_answer"
MODE_FALLBACK = "fallback"

# Prefixed by the server to every fallback answer, whatever the model wrote.
FALLBACK_NOTICE = (
    "Note / 注意: this answer is not from the local knowledge base (本地知识库) — it is general "
    "knowledge; verify it independently. 此回答并非来自本地知识库，而是通用知识，请自行核实。\n\n"
)
NO_ANSWER_MESSAGE = (
    "The local knowledge base has no answer to this question. 本地知识库中没有找到该问题的答案。"
)
FALLBACK_DISABLED_MESSAGE = (
    "Fallback to general knowledge was requested, but fallback is disabled on this server. "
    "此服务器已禁用通用知识回退（fallback）。"
)
SEE_ALSO_LIMIT = 3


def mode_decide(*, confidence: float, threshold: float, fallback_requested: bool,
                fallback_enabled: bool, has_sources: bool = True) -> str:
    """rag at or above the threshold (and with at least one source to answer from); otherwise
    fallback only when requested and enabled, else no_answer."""
    return mode_for(grounded=confidence >= threshold, fallback_requested=fallback_requested,
                    fallback_enabled=fallback_enabled, has_sources=has_sources)


def mode_for(*, grounded: bool, fallback_requested: bool, fallback_enabled: bool,
             has_sources: bool = True) -> str:
    """rag when the refusal rule found enough to answer from (answering/refusal.py) and there is
    at least one source; otherwise fallback only when requested and enabled, else no_answer."""
    if has_sources and grounded:
        return MODE_RAG
    if fallback_requested and fallback_enabled:
        return MODE_FALLBACK
    return MODE_NO_ANSWER


def no_answer_text(*, weak_sources: list[str], fallback_disabled: bool) -> str:
    """The fixed no_answer message, naming up to 3 distinct closest sources given in rank order."""
    lines = [NO_ANSWER_MESSAGE]
    closest = list(dict.fromkeys(source for source in weak_sources if source))[:SEE_ALSO_LIMIT]
    if closest:
        lines.append(f"See also: {', '.join(closest)}")
    if fallback_disabled:
        lines.append(FALLBACK_DISABLED_MESSAGE)
    return "\n".join(lines)
