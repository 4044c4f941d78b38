"""The SQL of the traces: recording, pruning and the statistics of `rag traces stats`."""

TRACE_INSERT = """
INSERT INTO traces (id, operation, channel, caller, user_id, token_id, knowledge_base_ids,
                    status, error_code, mode, parameters, timings_ms, embedding_model,
                    llm_model, prompt_tokens, completion_tokens, token_source, prompt_version,
                    citations, question, answer, cost_amount, cost_currency)
VALUES (%s, %s, %s, %s, %s, %s, %s::int8[], %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s,
        %s, %s, %s::jsonb, %s, %s, %s, %s)
"""

TRACES_PRUNE = "DELETE FROM traces WHERE created_at < now() - make_interval(days => %s)"

TRACES_STAGE_STATS = """
SELECT t.operation, s.key, count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value::text::float8),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY s.value::text::float8)
FROM traces t CROSS JOIN LATERAL jsonb_each(t.timings_ms) AS s
WHERE t.created_at >= %s
GROUP BY t.operation, s.key
ORDER BY t.operation, s.key
"""

# Calls, tokens and cost per day, per knowledge base and per model since a time, one row per
# key and currency (NULL: the calls without a price); selectors.py folds the currencies of a key.
TRACES_TOKENS_PER_DAY = """
SELECT date_trunc('day', created_at)::date, cost_currency, count(*),
       coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), sum(cost_amount)
FROM traces
WHERE created_at >= %s
GROUP BY 1, 2 ORDER BY 1, 2
"""

# A trace that searched several bases counts in each of them.
TRACES_TOKENS_PER_BASE = """
SELECT b.base_id, t.cost_currency, count(*),
       coalesce(sum(t.prompt_tokens), 0), coalesce(sum(t.completion_tokens), 0),
       sum(t.cost_amount)
FROM traces t CROSS JOIN LATERAL unnest(t.knowledge_base_ids) AS b(base_id)
WHERE t.created_at >= %s
GROUP BY 1, 2 ORDER BY 1, 2
"""

TRACES_TOKENS_PER_MODEL = """
SELECT llm_model, cost_currency, count(*),
       coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), sum(cost_amount)
FROM traces
WHERE created_at >= %s AND llm_model IS NOT NULL
GROUP BY 1, 2 ORDER BY 1, 2
"""
