"""Cost in traces: a priced model's tokens are kept with the trace as {amount, currency}, an
unpriced one's as null, and `rag traces stats` adds calls, tokens and cost up per day,
knowledge base and model in SQL."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection

from knowledge.bases import kb_create
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, post
from tests.traces.test_traces import no_earlier_traces, traces  # noqa: F401
from traces.recording import traced

PRICES = json.dumps({"stub-model": {"input_per_1k": 0.5, "output_per_1k": 2, "currency": "EUR"},
                     "gpt-x": {"input_per_1k": 0.01, "output_per_1k": 0.03}})


@pytest.fixture
def priced_llm(config_override):
    """The stub OpenAI-compatible server, reporting its usage, as the configured LLM at the
    prices given."""
    with StubOpenAI() as stub:
        stub.usage = {"prompt_tokens": 300, "completion_tokens": 50, "total_tokens": 350}

        def priced(prices: str) -> None:
            config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                            llm_model="stub-model", llm_api_key="sk-stub",
                            RAG_MODEL_PRICES=prices)

        yield priced


def test_an_answer_of_a_priced_model_keeps_its_cost(client, sample_index, priced_llm, capsys):
    priced_llm(PRICES)
    post(client, "/ask", {"question": IN_DOMAIN})
    (trace,) = traces()
    # 300 × 0.5 / 1000 + 50 × 2 / 1000
    assert (trace["cost_amount"], trace["cost_currency"]) == (pytest.approx(0.25), "EUR")
    call_command("traces", "show", trace["id"], "--json")
    assert json.loads(capsys.readouterr().out)["trace"]["cost"] == {
        "amount": pytest.approx(0.25), "currency": "EUR"}
    call_command("traces", "show", trace["id"])
    assert "cost: 0.2500 EUR" in capsys.readouterr().out


def test_an_answer_of_a_model_without_a_price_costs_null_not_zero(client, sample_index,
                                                                  priced_llm, capsys):
    priced_llm(json.dumps({"another-model": {"input_per_1k": 1}}))
    post(client, "/ask", {"question": IN_DOMAIN})
    (trace,) = traces()
    assert trace["prompt_tokens"] == 300
    assert trace["cost_amount"] is None and trace["cost_currency"] is None
    call_command("traces", "show", trace["id"], "--json")
    assert json.loads(capsys.readouterr().out)["trace"]["cost"] is None


def record(*, model: str | None, bases: list[int], prompt: int | None,
           completion: int | None) -> None:
    with traced(operation="ask", channel="cli") as trace:
        trace.llm_model, trace.knowledge_base_ids = model, bases
        trace.prompt_tokens, trace.completion_tokens = prompt, completion


def test_stats_add_tokens_and_cost_up_per_day_base_and_model(db, config_override, capsys):
    config_override(RAG_MODEL_PRICES=PRICES)
    handbook, wiki = (kb_create(slug=slug).id for slug in ("handbook", "wiki"))
    record(model="openai-compatible/stub-model", bases=[handbook], prompt=1000, completion=100)
    record(model="openai-compatible/gpt-x", bases=[handbook, wiki], prompt=2000, completion=1000)
    record(model="openai-compatible/unpriced", bases=[wiki], prompt=10, completion=5)
    record(model=None, bases=[wiki], prompt=None, completion=None)  # a search
    with connection.cursor() as cursor:  # one of them yesterday
        cursor.execute("UPDATE traces SET created_at = created_at - interval '1 day' "
                       "WHERE llm_model = 'openai-compatible/unpriced'")
    call_command("traces", "stats", "--json")
    stats = json.loads(capsys.readouterr().out)
    by_model = {row["model"]: row for row in stats["tokens_per_model"]}
    assert by_model["openai-compatible/stub-model"]["costs"] == [
        {"amount": pytest.approx(0.7), "currency": "EUR"}]  # 0.5 + 0.2
    assert by_model["openai-compatible/gpt-x"]["costs"] == [
        {"amount": pytest.approx(0.05), "currency": "USD"}]  # 0.02 + 0.03
    assert by_model["openai-compatible/unpriced"]["costs"] == []
    assert by_model["openai-compatible/unpriced"]["unpriced_calls"] == 1
    assert len(by_model) == 3  # the search called no model
    by_base = {row["knowledge_base"]: row for row in stats["tokens_per_knowledge_base"]}
    assert (by_base["handbook"]["calls"], by_base["handbook"]["prompt_tokens"],
            by_base["handbook"]["completion_tokens"]) == (2, 3000, 1100)
    assert sorted(cost["currency"] for cost in by_base["handbook"]["costs"]) == ["EUR", "USD"]
    assert (by_base["wiki"]["calls"], by_base["wiki"]["prompt_tokens"],
            by_base["wiki"]["unpriced_calls"]) == (3, 2010, 2)
    yesterday, today = stats["tokens_per_day"]
    assert (yesterday["calls"], yesterday["prompt_tokens"], yesterday["costs"]) == (1, 10, [])
    assert (today["calls"], today["prompt_tokens"], today["completion_tokens"]) == (3, 3000, 1100)
    call_command("traces", "stats", "--since", today["day"], "--json")
    since = json.loads(capsys.readouterr().out)
    assert [row["day"] for row in since["tokens_per_day"]] == [today["day"]]
    assert since["days"] is None and since["since"].startswith(today["day"])
    call_command("traces", "stats")
    table = capsys.readouterr().out
    assert "0.0500 USD" in table and "(1 calls unpriced)" in table and "handbook" in table


def test_stats_refuse_a_since_that_is_no_date(db):
    with pytest.raises(Exception, match="not a date"):
        call_command("traces", "stats", "--since", "last week")


def test_db_init_adds_the_cost_columns_to_a_traces_table_from_before_them(
        client, sample_index, priced_llm, schema_from_before):
    from ops.db_init import db_init

    with connection.cursor() as cursor:  # as a database initialised before them (rolled back)
        cursor.execute("ALTER TABLE traces DROP COLUMN cost_amount, DROP COLUMN cost_currency")
    schema_from_before("traces", "0004_trace_cost")
    db_init()
    priced_llm(PRICES)
    post(client, "/ask", {"question": IN_DOMAIN})
    (trace,) = traces()
    assert (trace["cost_amount"], trace["cost_currency"]) == (pytest.approx(0.25), "EUR")
