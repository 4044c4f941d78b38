"""tools/squad_to_beir.py: a SQuAD-style file becomes a BEIR folder that `rag eval --beir` reads,
with the same seeded sample every time."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.beir import beir_load
from tools.squad_to_beir import squad_to_beir

SQUAD = {"data": [
    {"title": "数据导出", "paragraphs": [
        {"id": "P1", "context": "导出限制是每天一万条。",
         "qas": [{"id": "Q1", "question": "导出限制是多少？"}, {"id": "Q2", "question": "每天？"}]},
        {"id": "P2", "context": "审批需要两天。",
         "qas": [{"id": "Q3", "question": "审批多久？"}]}]},
    {"title": "", "paragraphs": [
        {"context": "No id here.", "qas": [{"id": "Q4", "question": "Which paragraph?"}]}]}]}


def test_paragraphs_become_documents_and_questions_judged_queries(tmp_path: Path):
    source = tmp_path / "squad.json"
    source.write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    assert squad_to_beir(source=source, target=tmp_path / "all", split="test", questions=None,
                         seed=13) == (3, 4)
    collection = beir_load(path=tmp_path / "all", split="test")
    assert collection.documents["P1"] == ("数据导出", "导出限制是每天一万条。")
    assert collection.documents["1-0"] == ("", "No id here.")
    assert collection.qrels == {"Q1": {"P1": 1}, "Q2": {"P1": 1}, "Q3": {"P2": 1},
                                "Q4": {"1-0": 1}}


def test_a_sample_is_the_same_for_the_same_seed_and_keeps_every_document(tmp_path: Path):
    source = tmp_path / "squad.json"
    source.write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    squad_to_beir(source=source, target=tmp_path / "a", split="train", questions=2, seed=13)
    squad_to_beir(source=source, target=tmp_path / "b", split="train", questions=2, seed=13)
    first = beir_load(path=tmp_path / "a", split="train")
    assert first.qrels == beir_load(path=tmp_path / "b", split="train").qrels
    assert len(first.queries) == 2 and len(first.documents) == 3
