"""The SQL of the traces: recording, pruning and the statistics of `rag traces stats`."""

TRACE_INSERT = """
INSERT INTO traces (id, operation, channel, caller, user_id, token_id, knowledge_base_ids,
                    status, error_code, mode, parameters, timings_ms, embedding_model,
                    llm_model, prompt_tokens, completion_tokens, token_source, prompt_version,
                    citations, question, answer)
VALUES (%s, %s, %s, %s, %s, %s, %s::int8[], %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s,
        %s, %s, %s::jsonb, %s, %s)
"""

TRACES_PRUNE = "DELETE FROM traces WHERE created_at < now() - make_interval(days => %s)"

TRACES_STAGE_STATS = """
SELECT t.operation, s.key, count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value::text::float8),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY s.value::text::float8)
FROM traces t CROSS JOIN LATERAL jsonb_each(t.timings_ms) AS s
WHERE t.created_at >= now() - make_interval(days => %s)
GROUP BY t.operation, s.key
ORDER BY t.operation, s.key
"""

TRACES_TOKENS_PER_DAY = """
SELECT date_trunc('day', created_at)::date, count(*), coalesce(sum(prompt_tokens), 0),
       coalesce(sum(completion_tokens), 0)
FROM traces
WHERE created_at >= now() - make_interval(days => %s)
GROUP BY 1 ORDER BY 1
"""
