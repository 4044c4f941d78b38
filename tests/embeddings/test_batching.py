"""Length-sorted batches for the local models, without a model: the grouping, its limits, and
the vectors coming back in the order of the texts."""

from __future__ import annotations

import random

from embeddings.batching import (
    BATCH_TOKENS,
    batches_encode,
    token_batches,
    token_lengths,
)


def test_every_passage_is_in_exactly_one_batch_longest_first():
    rng = random.Random(7)
    lengths = [rng.randint(1, 256) for _ in range(200)]
    batches = token_batches(lengths=lengths, max_passages=16)
    flat = [index for batch in batches for index in batch]
    assert sorted(flat) == list(range(200))
    assert [lengths[index] for index in flat] == sorted(lengths, reverse=True)


def test_a_batch_holds_at_most_max_passages_and_the_token_budget_once_padded():
    rng = random.Random(11)
    lengths = [rng.randint(1, 256) for _ in range(300)]
    batches = token_batches(lengths=lengths, max_passages=16, max_tokens=1024)
    for batch in batches:
        assert len(batch) <= 16
        assert len(batch) * max(lengths[index] for index in batch) <= 1024
    # The budget cuts the long passages into small batches and leaves the short ones at 16.
    assert len(batches[0]) == 1024 // max(lengths)
    assert len(batches[-1]) in range(1, 17) and len(batches[-2]) == 16


def test_a_passage_longer_than_the_budget_gets_a_batch_of_its_own():
    assert token_batches(lengths=[10, 5000, 10], max_passages=16, max_tokens=100) == [[1], [0, 2]]


def test_equal_lengths_keep_their_input_order_and_fill_batches_of_max_passages():
    assert token_batches(lengths=[3] * 5, max_passages=2) == [[0, 1], [2, 3], [4]]
    assert BATCH_TOKENS >= 256  # one passage at the longest a MiniLM reads still fits


def test_vectors_come_back_in_the_order_of_the_texts():
    texts = ["a" * n for n in (3, 9, 1, 7, 7, 2)]
    calls = []

    def encode(batch):
        calls.append(batch)
        return [[float(len(text))] for text in batch]

    vectors = batches_encode(texts=texts, lengths=[len(text) for text in texts], max_passages=4,
                             encode=encode)
    assert vectors == [[3.0], [9.0], [1.0], [7.0], [7.0], [2.0]]
    assert calls == [["a" * 9, "a" * 7, "a" * 7, "a" * 3], ["a" * 2, "a"]]


class _Tokenizer:
    def __init__(self):
        self.calls = []

    def __call__(self, texts, **options):
        self.calls.append(options)
        return {"input_ids": [text.split()[:options["max_length"]] for text in texts]}


class _Encoder:
    max_seq_length = 3

    def __init__(self):
        self.tokenizer = _Tokenizer()


def test_lengths_are_counted_in_the_encoders_tokens_cut_at_its_maximum():
    encoder = _Encoder()
    assert token_lengths(encoder=encoder, texts=["one two", "a b c d e", "x"]) == [2, 3, 1]
    assert encoder.tokenizer.calls[0]["truncation"] is True


def test_an_encoder_without_a_tokenizer_is_measured_in_characters():
    assert token_lengths(encoder=object(), texts=["abc", "", "数据库"]) == [3, 0, 3]
