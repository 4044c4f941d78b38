"""Install the local-model runtime's torch for `make test` without pulling CUDA onto a CPU box.

PyPI's Linux torch wheel is the CUDA build: with its `nvidia-*` dependencies, several GB. On a
Linux machine without an NVIDIA GPU this installs the CPU build from the PyTorch CPU index
instead (about 190 MB). When that index cannot be reached within a few seconds (a mirror-only
network), it falls back to pip's own configuration — but first asks pip, without installing,
what that would bring in, and stops with the fix if it would be a CUDA build. `TORCH_INDEX`
(from the Makefile) always wins.

Standard library only: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_TIMEOUT_SECONDS = 4.0
PIP = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]


@dataclass(frozen=True)
class TorchSource:
    index_url: str | None  # None: pip's own configuration
    reason: str
    check_for_cuda: bool  # ask pip first whether it would bring a CUDA build


def nvidia_gpu_present() -> bool:
    """An NVIDIA driver is loaded (or its tool is installed)."""
    return (Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()
            or shutil.which("nvidia-smi") is not None)


def index_reachable(url: str, *, timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """The index answers within `timeout` seconds (pip itself would retry for minutes)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/torch/", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def torch_source_choose(*, requested: str, system: str, gpu: bool,
                        reachable: Callable[[str], bool]) -> TorchSource:
    """Where torch comes from: the index the operator asked for; pip's default where PyPI's
    wheel is what the machine needs (a GPU, or not Linux); else the CPU index, or pip's
    default with a CUDA check when the CPU index is out of reach."""
    if requested:
        return TorchSource(requested, f"TORCH_INDEX={requested}", check_for_cuda=False)
    if system != "Linux":
        return TorchSource(None, f"{system}: PyPI's torch wheel is the CPU build",
                           check_for_cuda=False)
    if gpu:
        return TorchSource(None, "NVIDIA GPU found: PyPI's CUDA build", check_for_cuda=False)
    if reachable(CPU_INDEX):
        return TorchSource(CPU_INDEX, "no NVIDIA GPU: the CPU build from the PyTorch CPU index",
                           check_for_cuda=False)
    return TorchSource(None, f"no NVIDIA GPU and {CPU_INDEX} unreachable: pip's configured "
                             "index, if it offers a CPU build", check_for_cuda=True)


def cuda_packages(report: dict) -> list[str]:
    """The CUDA pieces in a `pip install --dry-run --report` report: nvidia-* packages or a
    torch whose version names a CUDA build (`+cu121`)."""
    found = []
    for item in report.get("install", []):
        metadata = item.get("metadata", {})
        name, version = str(metadata.get("name", "")).lower(), str(metadata.get("version", ""))
        if name.startswith("nvidia-") or (name == "torch" and "+cu" in version):
            found.append(f"{name} {version}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the torch version to install")
    parser.add_argument("--index-url", default=os.environ.get("TORCH_INDEX", ""))
    args = parser.parse_args(argv)
    source = torch_source_choose(requested=args.index_url, system=platform.system(),
                                 gpu=nvidia_gpu_present(), reachable=index_reachable)
    print(f"torch {args.version}: {source.reason}", flush=True)
    requirement = f"torch=={args.version}"
    if source.check_for_cuda:
        dry_run = subprocess.run([*PIP, "--dry-run", "--ignore-installed", "--report", "-",
                                  requirement], capture_output=True, text=True)
        if dry_run.returncode != 0:
            sys.stderr.write(dry_run.stderr)
            return dry_run.returncode
        cuda = cuda_packages(json.loads(dry_run.stdout or "{}"))
        if cuda:
            sys.stderr.write(
                f"refusing to install a CUDA build of torch on a machine without an NVIDIA GPU "
                f"({', '.join(cuda[:4])}…: several GB). Make {CPU_INDEX} reachable, or run "
                f"`make test TORCH_INDEX=<an index with CPU wheels>`, or provide a CPU wheel "
                "through pip's find-links.\n")
            return 2
    index = ["--index-url", source.index_url] if source.index_url else []
    return subprocess.run([*PIP, *index, requirement]).returncode


if __name__ == "__main__":
    raise SystemExit(main())
