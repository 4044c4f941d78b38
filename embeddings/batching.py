"""Batches for a local model: passages sorted by token length and cut by a token budget.

A transformer pads every passage of a batch to the longest one, so a batch that mixes a
70-token note with a 256-token one spends much of its arithmetic on padding. Sorting by the
tokenizer's own count (not by characters: a Chinese character is about one token, an English
word about five characters) and cutting batches at a budget of padded tokens keeps the padding
small, and keeps a batch's activations small enough that the allocator reuses their memory
instead of mapping fresh pages for every batch. A passage's vector does not depend on the batch
it lands in, so the result is that of one plain `encode` in the input order.
Nothing here imports torch: the encoder and its tokenizer are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# Padded tokens per forward pass (passages x longest), measured with all-MiniLM-L6-v2 on
# 2 CPU cores (docs/benchmarks.md): 1,024 did as well, 4,096 or no budget about 10% worse.
BATCH_TOKENS = 2048


def token_lengths(*, encoder: Any, texts: Sequence[str]) -> list[int]:
    """Each text's length in the encoder's tokens, cut at its maximum sequence length; in
    characters (what sentence-transformers sorts by) when it has no callable tokenizer."""
    tokenizer = getattr(encoder, "tokenizer", None)
    if not callable(tokenizer):
        return [len(text) for text in texts]
    limit = getattr(encoder, "max_seq_length", None)
    ids = tokenizer(list(texts), truncation=limit is not None, max_length=limit,
                    return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    return [len(row) for row in ids]


def token_batches(*, lengths: Sequence[int], max_passages: int,
                  max_tokens: int = BATCH_TOKENS) -> list[list[int]]:
    """The passages' indices grouped into batches, longest first: at most `max_passages` per
    batch and at most `max_tokens` once each is padded to the batch's longest (a passage longer
    than the budget gets a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda index: (-lengths[index], index))
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in order:
        # Longest first, so the batch's first passage sets the padded width.
        width = lengths[batch[0]] if batch else lengths[index]
        if batch and (len(batch) >= max_passages or (len(batch) + 1) * width > max_tokens):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


def batches_encode(*, texts: Sequence[str], lengths: Sequence[int], max_passages: int,
                   encode: Callable[[list[str]], list[list[float]]],
                   progress: bool = False) -> list[list[float]]:
    """`encode` run once per batch of `token_batches`; the vectors come back in the order of
    `texts`, with a progress bar on stderr when `progress`."""
    vectors: list[list[float]] = [[] for _ in texts]
    bar = _progress_bar(total=len(texts)) if progress else None
    try:
        for batch in token_batches(lengths=lengths, max_passages=max_passages):
            for index, vector in zip(batch, encode([texts[index] for index in batch]),
                                     strict=True):
                vectors[index] = vector
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return vectors


def _progress_bar(*, total: int) -> Any:
    # tqdm comes with sentence-transformers, which is installed wherever a local model runs.
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="Embedding", unit="passage")
