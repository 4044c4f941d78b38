"""A vault of PDF, DOCX and TXT files through the CLI and a real server: the page a chunk came
from reaches `/search`, `/ask`, `/ask/stream` and the CLI's source lines."""

from __future__ import annotations

import json

import httpx

from tests.commands.test_serve import serve  # noqa: F401 - the fixture
from tests.parsing.formats.files import docx_bytes, pdf_bytes

QUESTION = "molybdenite vein stockwork grade"


def report_pdf() -> bytes:
    return pdf_bytes([
        "Regional geology of the district: granodiorite intrusions and volcanic cover. " * 12,
        "Alteration zoning: potassic core, phyllic shell, propylitic halo. " * 12,
        "Molybdenite vein stockwork grades 0.08 percent Mo in hole ZK-3307. " * 12,
    ], title="District Survey", outline=[(0, 0, "1 Geology"), (1, 0, "2 Alteration"),
                                         (2, 0, "3 Molybdenum")])


def test_pages_reach_search_ask_and_the_cli(clean_tables, serve, run_cli, tmp_path):  # noqa: F811
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "district.pdf").write_bytes(report_pdf())
    (vault / "assays.docx").write_bytes(docx_bytes([("heading", 1, "Assays"),
                                                    ("p", "Copper assays by hole.")]))
    (vault / "field.txt").write_bytes("Field notes on the ridge traverse.".encode("gb18030"))
    ingest = run_cli("ingest", str(vault), "--json")
    assert ingest.returncode == 0, ingest.stderr
    assert json.loads(ingest.stdout)["documents_added"] == 3

    server = serve()
    found = httpx.post(f"{server.url}/search", json={"query": QUESTION, "top_k": 3},
                       timeout=10).json()
    top = found["results"][0]
    assert (top["source"], top["heading_path"]) == ("district.pdf", ["3 Molybdenum"])
    assert (top["page_start"], top["page_end"]) == (3, 3)
    others = [result for result in found["results"] if result["source"] != "district.pdf"]
    assert all(result["page_start"] is None and result["page_end"] is None
               for result in others)

    asked = httpx.post(f"{server.url}/ask", json={"question": QUESTION}, timeout=10).json()
    assert asked["mode"] == "rag"
    cited = asked["citations"][0]
    # The three pages' chunks make one block, and a citation names the page of the sentence
    # the answer quotes: the fake model quotes the block's first sentence, page 1's.
    assert cited["quote"].startswith("Regional geology of the district")
    assert (cited["source"], cited["heading_path"], cited["page_start"], cited["page_end"]) \
        == ("district.pdf", ["1 Geology"], 1, 1)

    with httpx.stream("POST", f"{server.url}/ask/stream", json={"question": QUESTION},
                      timeout=10) as response:
        body = "".join(response.iter_text())
    assert '"page_start": 3' in body or '"page_start":3' in body

    human = run_cli("search", QUESTION, "--top-k", "1")
    assert human.returncode == 0, human.stderr
    assert "[1] district.pdf › 3 Molybdenum, p. 3 (" in human.stdout
    answer = run_cli("ask", QUESTION)
    assert "district.pdf › 1 Geology, p. 1" in answer.stdout
