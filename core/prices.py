"""What a model's tokens cost: RAG_MODEL_PRICES, read once with the configuration, and the cost
of one call (`llm_cost`) that traces and conversation messages keep.

Prices come from the environment, which an operator may fill from anywhere, so the parser bounds
the text, the number of models, each name and each price, and refuses what it does not know
(an unknown key is more likely a typo of `output_per_1k` than something to ignore silently).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config_parse import ConfigError, Parser

PRICES_MAX_CHARS = 65_536
PRICES_MAX_MODELS = 200
MODEL_NAME_MAX_CHARS = 200
PRICE_MAX = 1_000_000.0  # per 1,000 tokens, in any currency
DEFAULT_CURRENCY = "USD"
PRICE_KEYS = ("input_per_1k", "output_per_1k", "currency")
_CURRENCY = re.compile(r"[A-Z]{3}")
# Traces name a model "provider/model"; RAG_MODEL_PRICES names it as LLM_MODEL does.
_PROVIDER_PREFIXES = ("openai-compatible/", "fake/", "extractive/")


@dataclass(frozen=True)
class ModelPrice:
    """The price of 1,000 tokens read (input) and written (output) by one model."""

    input_per_1k: float
    output_per_1k: float
    currency: str


class ModelPrices(Parser[Mapping[str, ModelPrice]]):
    """A JSON object: model name -> {"input_per_1k", "output_per_1k"?, "currency"?}."""

    def parse(self, name: str, text: str, *, base: Path) -> Mapping[str, ModelPrice]:
        if not text.strip():
            return {}
        if len(text) > PRICES_MAX_CHARS:
            raise ConfigError(f"{name} is longer than {PRICES_MAX_CHARS} characters",
                              variable=name)
        try:
            value = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"{name} is not valid JSON: {exc}", variable=name) from None
        if not isinstance(value, dict):
            raise ConfigError(f"{name} must be a JSON object keyed by model name",
                              variable=name)
        if len(value) > PRICES_MAX_MODELS:
            raise ConfigError(f"{name} prices more than {PRICES_MAX_MODELS} models",
                              variable=name)
        return {model: _price(name, model, entry) for model, entry in value.items()}


def _no_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not a price")


def _price(name: str, model: str, entry: Any) -> ModelPrice:
    where = f"{name}[{model[:MODEL_NAME_MAX_CHARS]!r}]"
    if not model.strip() or len(model) > MODEL_NAME_MAX_CHARS:
        raise ConfigError(f"{name}: a model name must be 1 to {MODEL_NAME_MAX_CHARS} "
                          "characters", variable=name)
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object with input_per_1k", variable=name)
    unknown = sorted(set(entry) - set(PRICE_KEYS))
    if unknown:
        raise ConfigError(f"{where} has unknown keys {', '.join(unknown)}; use "
                          f"{', '.join(PRICE_KEYS)}", variable=name)
    if "input_per_1k" not in entry:
        raise ConfigError(f"{where} needs input_per_1k", variable=name)
    currency = entry.get("currency", DEFAULT_CURRENCY)
    if not isinstance(currency, str) or not _CURRENCY.fullmatch(currency):
        raise ConfigError(f"{where}: currency must be a three-letter code such as USD",
                          variable=name)
    return ModelPrice(input_per_1k=_amount(name, where, "input_per_1k", entry["input_per_1k"]),
                      output_per_1k=_amount(name, where, "output_per_1k",
                                            entry.get("output_per_1k", 0)),
                      currency=currency)


def _amount(name: str, where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}.{key} must be a number", variable=name)
    amount = float(value)
    if not (math.isfinite(amount) and 0 <= amount <= PRICE_MAX):
        raise ConfigError(f"{where}.{key} must be between 0 and {PRICE_MAX:g}", variable=name)
    return amount


def model_price(prices: Mapping[str, ModelPrice], model: str | None) -> ModelPrice | None:
    """The price of `model` as LLM_MODEL, EMBEDDING_MODEL or RERANK_MODEL names it, or as a
    trace does ("provider/model"); None when it has none."""
    if not model:
        return None
    if model in prices:
        return prices[model]
    for prefix in _PROVIDER_PREFIXES:
        if model.startswith(prefix):
            return prices.get(model.removeprefix(prefix))
    return None


def llm_cost(*, prices: Mapping[str, ModelPrice], model: str | None, prompt_tokens: int | None,
             completion_tokens: int | None) -> dict[str, Any] | None:
    """{amount, currency} of one model call, input and output tokens each at their price;
    None (not 0) when the model has no price or no tokens were counted: unknown, not free."""
    price = model_price(prices, model)
    if price is None or (prompt_tokens is None and completion_tokens is None):
        return None
    amount = ((prompt_tokens or 0) * price.input_per_1k
              + (completion_tokens or 0) * price.output_per_1k) / 1000
    return {"amount": round(amount, 8), "currency": price.currency}
