"""The evaluation panel's import refuses YAML that would expand far beyond its size."""

from __future__ import annotations

import time

from evaluation.models import QuestionSet
from tests.core.test_safe_yaml import ALIAS_BOMB
from tests.workbench.test_evaluation_panel import import_set


def test_a_pasted_alias_bomb_is_refused_at_once_and_nothing_is_stored(researcher):
    started = time.perf_counter()
    response = import_set(researcher, text=ALIAS_BOMB)
    elapsed = time.perf_counter() - started
    html = response.content.decode()
    assert response.status_code == 422
    assert "Nothing was imported" in html and "aliases (*name) are not accepted" in html
    assert not QuestionSet.objects.exists()
    assert elapsed < 10  # refused while parsing, not after expanding 387 million values
