"""Where `make test` takes torch from: never a CUDA build on a CPU machine unless asked."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ops.embedded_pg import free_port
from tools.torch_install import CPU_INDEX, cuda_packages, index_reachable, torch_source_choose


def never(url: str) -> bool:
    raise AssertionError("the CPU index must not be probed here")


def test_an_explicit_index_always_wins():
    source = torch_source_choose(requested="https://mirror/cpu", system="Linux", gpu=False,
                                 reachable=never)
    assert (source.index_url, source.check_for_cuda) == ("https://mirror/cpu", False)


@pytest.mark.parametrize(("system", "gpu"), [("Linux", True), ("Darwin", False),
                                             ("Windows", False)])
def test_pypi_default_where_its_wheel_is_the_right_one(system, gpu):
    source = torch_source_choose(requested="", system=system, gpu=gpu, reachable=never)
    assert (source.index_url, source.check_for_cuda) == (None, False)


def test_linux_without_a_gpu_takes_the_cpu_index():
    source = torch_source_choose(requested="", system="Linux", gpu=False,
                                 reachable=lambda url: url == CPU_INDEX)
    assert (source.index_url, source.check_for_cuda) == (CPU_INDEX, False)


def test_unreachable_cpu_index_falls_back_to_pip_with_a_cuda_check():
    source = torch_source_choose(requested="", system="Linux", gpu=False,
                                 reachable=lambda url: False)
    assert (source.index_url, source.check_for_cuda) == (None, True)


def test_cuda_pieces_are_found_in_a_pip_report():
    cuda = {"install": [{"metadata": {"name": "torch", "version": "2.13.0"}},
                        {"metadata": {"name": "nvidia-cublas-cu12", "version": "12.8.4.1"}},
                        {"metadata": {"name": "sympy", "version": "1.14.0"}}]}
    assert cuda_packages(cuda) == ["nvidia-cublas-cu12 12.8.4.1"]
    assert cuda_packages({"install": [{"metadata": {"name": "torch",
                                                    "version": "2.13.0+cu128"}}]})
    cpu = {"install": [{"metadata": {"name": "torch", "version": "2.13.0+cpu"}},
                       {"metadata": {"name": "filelock", "version": "3.20.0"}}]}
    assert cuda_packages(cpu) == []


def test_reachability_is_an_answer_from_the_index():
    class Index(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 — the http.server API
            self.send_response(200 if self.path == "/cpu/torch/" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert index_reachable(f"{base}/cpu") is True
        assert index_reachable(f"{base}/other") is False
    finally:
        server.shutdown()
    assert index_reachable(f"http://127.0.0.1:{free_port()}/cpu", timeout=1) is False
