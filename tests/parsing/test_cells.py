"""Numbers with units are found for a spot check; plain numbers, years and words are not."""

from __future__ import annotations

import pytest

from parsing.cells import cells_flag, quantities_find, text_flag


@pytest.mark.parametrize("text", ["12 kg", "3.5 mm", "220 V", "45%", "¥1,200", "30 天",
                                  "1,250.5 MPa", "8元"])
def test_a_number_with_a_unit_is_flagged(text):
    assert quantities_find(f"value {text} here") == [text]


@pytest.mark.parametrize("text", ["2024", "hole ZK-1042", "3 men", "page 7", "v1.2"])
def test_numbers_without_units_are_not_flagged(text):
    assert quantities_find(text) == []


def test_table_cells_are_flagged_with_their_place():
    flags = cells_flag([["Item", "Mass"], ["Core", "12 kg"], ["Box", "n/a"]])
    assert flags == [{"row": 1, "column": 1, "text": "12 kg", "quantities": ["12 kg"]}]


def test_page_flags_carry_offsets():
    text = "Vein at 42 m, grade 1.3%."
    assert [(flag["text"], text[flag["start"]:flag["end"]]) for flag in text_flag(text)] == [
        ("42 m", "42 m"), ("1.3%", "1.3%")]
