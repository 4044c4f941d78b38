from __future__ import annotations

import pytest

from answering.modes import (
    MODE_FALLBACK,
    MODE_NO_ANSWER,
    MODE_RAG,
    NO_ANSWER_MESSAGE,
    mode_decide,
    no_answer_text,
)


@pytest.mark.parametrize(("confidence", "requested", "enabled", "mode"), [
    (0.50, False, False, MODE_RAG),
    (0.50, True, True, MODE_RAG),
    (0.35, False, False, MODE_RAG),
    (0.34, False, True, MODE_NO_ANSWER),
    (0.34, True, False, MODE_NO_ANSWER),
    (0.34, True, True, MODE_FALLBACK),
    (0.0, False, False, MODE_NO_ANSWER),
])
def test_mode_follows_threshold_and_fallback_flags(confidence: float, requested: bool,
                                                   enabled: bool, mode: str) -> None:
    assert mode_decide(confidence=confidence, threshold=0.35, fallback_requested=requested,
                       fallback_enabled=enabled) == mode


def test_no_answer_text_without_matches_is_the_fixed_message() -> None:
    text = no_answer_text(weak_sources=[], fallback_disabled=False)
    assert text == NO_ANSWER_MESSAGE


def test_no_answer_text_names_up_to_three_distinct_sources_in_rank_order() -> None:
    text = no_answer_text(weak_sources=["b.md", "a.md", "b.md", "c.md", "d.md"],
                          fallback_disabled=False)
    assert text == f"{NO_ANSWER_MESSAGE}\nSee also: b.md, a.md, c.md"


def test_no_answer_text_says_fallback_is_disabled() -> None:
    text = no_answer_text(weak_sources=["a.md"], fallback_disabled=True)
    assert text.startswith(f"{NO_ANSWER_MESSAGE}\nSee also: a.md\n")
    last_line = text.splitlines()[-1]
    assert "fallback" in last_line and "disabled" in last_line
