"""RAG_MODEL_PRICES: a bounded JSON object of prices per model, refused whole with an error
naming the setting when any part is off; and the cost of a call at those prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.config import ConfigError, config_load
from core.prices import PRICES_MAX_CHARS, PRICES_MAX_MODELS, ModelPrice, llm_cost, model_price

GPT_X = {"input_per_1k": 0.002, "output_per_1k": 0.006, "currency": "EUR"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / ".env.sample").write_text("")
    return tmp_path


def prices_of(project: Path, text: str):
    return config_load(environ={"RAG_MODEL_PRICES": text}, start_dir=project).rag_model_prices


def test_prices_are_read_per_model_with_usd_and_no_output_price_by_default(project):
    prices = prices_of(project, json.dumps({"gpt-x": GPT_X, "bge-m3": {"input_per_1k": 1}}))
    assert prices == {"gpt-x": ModelPrice(0.002, 0.006, "EUR"),
                      "bge-m3": ModelPrice(1.0, 0.0, "USD")}


def test_unset_prices_are_none_at_all(project):
    assert prices_of(project, "") == {}


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "is not valid JSON"),
    ('["gpt-x"]', "must be a JSON object keyed by model name"),
    ('{"gpt-x": 0.002}', "must be an object with input_per_1k"),
    ('{"gpt-x": {"output_per_1k": 0.006}}', "needs input_per_1k"),
    ('{"gpt-x": {"input_per_1k": -0.001}}', "between 0 and"),
    ('{"gpt-x": {"input_per_1k": NaN}}', "NaN is not a price"),
    ('{"gpt-x": {"input_per_1k": 1, "output_per_1k": Infinity}}', "Infinity is not a price"),
    ('{"gpt-x": {"input_per_1k": 1e400}}', "between 0 and"),
    ('{"gpt-x": {"input_per_1k": "0.002"}}', "must be a number"),
    ('{"gpt-x": {"input_per_1k": true}}', "must be a number"),
    ('{"gpt-x": {"input_per_1k": 1, "ouput_per_1k": 2}}', "unknown keys ouput_per_1k"),
    ('{"gpt-x": {"input_per_1k": 1, "currency": "dollars"}}', "three-letter code"),
    ('{"": {"input_per_1k": 1}}', "a model name must be"),
    (json.dumps({"m" * 201: {"input_per_1k": 1}}), "a model name must be"),
    (json.dumps({f"m{n}": {"input_per_1k": 1} for n in range(PRICES_MAX_MODELS + 1)}),
     f"more than {PRICES_MAX_MODELS} models"),
    ("{" + " " * PRICES_MAX_CHARS + "}", f"longer than {PRICES_MAX_CHARS} characters"),
    ("[" * 5000 + "]" * 5000, "RAG_MODEL_PRICES"),
])
def test_hostile_prices_stop_the_configuration_naming_the_setting(project, text, fragment):
    with pytest.raises(ConfigError) as err:
        prices_of(project, text)
    assert err.value.variable == "RAG_MODEL_PRICES"
    assert fragment in err.value.message and "RAG_MODEL_PRICES" in err.value.message


PRICES = {"gpt-x": ModelPrice(input_per_1k=0.002, output_per_1k=0.006, currency="USD")}


def test_a_call_costs_its_input_and_output_tokens_each_at_their_price():
    cost = llm_cost(prices=PRICES, model="gpt-x", prompt_tokens=1500, completion_tokens=500)
    assert cost == {"amount": pytest.approx(0.006), "currency": "USD"}  # 0.003 + 0.003


def test_a_trace_names_the_model_with_its_provider_and_still_finds_its_price():
    assert model_price(PRICES, "openai-compatible/gpt-x") is PRICES["gpt-x"]
    assert model_price(PRICES, "openai-compatible/gpt-y") is None


@pytest.mark.parametrize("model, prompt, completion", [
    ("gpt-y", 100, 10), (None, 100, 10), ("gpt-x", None, None)])
def test_without_a_price_or_tokens_the_cost_is_unknown_not_zero(model, prompt, completion):
    assert llm_cost(prices=PRICES, model=model, prompt_tokens=prompt,
                    completion_tokens=completion) is None
