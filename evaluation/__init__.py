"""Evaluation: how well retrieval and refusal work, measured on judged questions.

Question sets in the `rag eval` YAML format and their runs as background jobs (with their
models), the public BEIR collections with a BM25 reference, the ablation of retrieval settings,
the fitting of fusion and reranker weights, the follow-up evaluation of conversations, and the
`rag eval` and `rag conversations` commands. It sits above the ask path and only reads it.
"""
