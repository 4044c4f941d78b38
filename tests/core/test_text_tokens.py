"""Token counting is cl100k_base and never touches the network."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.harness import ROOT
from tests.test_architecture import LAYERS

PROBE = """
import socket
def refuse(*args, **kwargs):
    raise RuntimeError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import os, tempfile
os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp()  # empty cache: nothing to reuse
from core.text_tokens import tokens_count, encode
print(tokens_count("hello world"), encode("hello world"), tokens_count("客户 P1 工单"))
"""


def test_counting_tokens_needs_no_network():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    # The ids are cl100k_base's: "hello" = 15339, " world" = 1917.
    assert result.stdout.split()[:3] == ["2", "[15339,", "1917]"]


def test_no_module_calls_tiktoken_directly():
    uses_tiktoken = re.compile(r"^\s*(from|import)\s+tiktoken\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for package in LAYERS
        for path in (ROOT / package).rglob("*.py")
        if uses_tiktoken.search(path.read_text()) and path != ROOT / "core" / "text_tokens.py"
    ]
    assert offenders == []

