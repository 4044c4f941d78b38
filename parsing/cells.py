"""Numbers with units in extracted text: the cells a reviewer checks by eye.

OCR and table extraction misread exactly these: a dropped decimal point turns 3.5 mm into
35 mm, and a unit read as a digit changes the value. A flag is the cell's text and the matched
quantity; nothing is corrected here.
"""

from __future__ import annotations

import re

# A number (thousands separators, decimals) with a unit after it, or a currency sign before it.
# Units: SI and common measures, percent, and Chinese measure words.
_UNIT_AFTER = (r"%|‰|℃|°C|°F|°|kg|mg|g|t|km|cm|mm|µm|um|nm|m²|m2|m³|m3|m|ml|mL|l|L|kW|kWh|W|"
               r"MW|kV|mV|V|mA|A|Hz|kHz|MHz|GHz|Pa|kPa|MPa|bar|h|min|s|ms|KB|MB|GB|TB|dB|"
               r"元|万元|亿元|万|亿|天|年|月|日|小时|分钟|秒|个|件|台|套|次|人|公斤|千克|克|吨|"
               r"米|厘米|毫米|公里|千米|平方米|立方米|升|毫升|伏|瓦|千瓦|度")
_QUANTITY = re.compile(
    r"(?:[¥$€£￥]\s?\d[\d,]*(?:\.\d+)?)"
    r"|(?:(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:" + _UNIT_AFTER + r")(?![A-Za-z]))")
FLAGS_MAX = 200  # per task: a page of figures is checked as a page, not cell by cell


def quantities_find(text: str) -> list[str]:
    """The numbers with units (or currency signs) in `text`, in order: "12 kg", "45%",
    "¥1,200", "30 天"."""
    return [match.group(0) for match in _QUANTITY.finditer(text)]


def cells_flag(rows: tuple[tuple[str, ...], ...] | list[list[str]]) -> list[dict[str, object]]:
    """Cells of a table that hold a number with a unit: row, column, text, the quantities."""
    flags: list[dict[str, object]] = []
    for row_index, row in enumerate(rows):
        for column, cell in enumerate(row):
            found = quantities_find(cell)
            if found:
                flags.append({"row": row_index, "column": column, "text": cell,
                              "quantities": found})
                if len(flags) >= FLAGS_MAX:
                    return flags
    return flags


def text_flag(text: str) -> list[dict[str, object]]:
    """The numbers with units in a page's text, each with its offset."""
    return [{"start": match.start(), "end": match.end(), "text": match.group(0)}
            for match in list(_QUANTITY.finditer(text))[:FLAGS_MAX]]
