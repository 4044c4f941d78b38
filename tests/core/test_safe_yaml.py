"""People's YAML without aliases (core/safe_yaml.py), and the evaluation import that uses it."""

from __future__ import annotations

import time

import pytest
import yaml

from core.errors import InvalidRequest
from core.safe_yaml import YAMLRefused, yaml_load_plain
from evaluation.questions import questions_parse

# 355 bytes that stand for 9**9 (387 million) strings once the aliases are followed.
ALIAS_BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]"
       for previous, name in zip("abcdefgh", "bcdefghi")]
    + ["questions: *i"])


def test_plain_yaml_loads_as_safe_load_does():
    text = "questions:\n  - id: q1\n    question: 导出限制是多少？\n    tags: [a, b]\n"
    assert yaml_load_plain(text) == yaml.safe_load(text)


def test_an_alias_is_refused_while_composing_before_any_value_is_built():
    started = time.perf_counter()
    with pytest.raises(YAMLRefused, match=r"aliases \(\*name\) are not accepted here \(line 2\)"):
        yaml_load_plain(ALIAS_BOMB)
    assert time.perf_counter() - started < 5  # no expansion: milliseconds, not minutes


def test_a_document_of_too_many_values_is_refused():
    with pytest.raises(YAMLRefused, match="more than 1,000 values"):
        yaml_load_plain("[" + ", ".join(["1"] * 1001) + "]", node_limit=1000)
    assert len(yaml_load_plain("[" + ", ".join(["1"] * 999) + "]", node_limit=1000)) == 999


def test_malformed_yaml_is_still_a_yaml_error():
    with pytest.raises(yaml.YAMLError):
        yaml_load_plain("questions: [\n")


def test_the_evaluation_import_refuses_an_alias_bomb_with_the_invalid_request_error():
    with pytest.raises(InvalidRequest) as caught:
        questions_parse(ALIAS_BOMB, source="pasted")
    assert caught.value.message.startswith("pasted: YAML aliases (*name) are not accepted")
    assert caught.value.details == {"errors": [caught.value.message]}
