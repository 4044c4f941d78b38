"""Metadata filters of a search: which documents of the caller's knowledge bases a search may
return, by frontmatter field, tags, format, folder, title and dates.

A request's `filters` object is checked here (bounded, every error naming its field), then
resolved by one statement over `documents` to the matching document ids of the caller's bases
(retrieval/sql.py FILTER_DOCUMENTS); each channel's statement then reads only their chunks, next
to the base scope, before anything is ranked, so a filtered search still returns `top_k`
results when that many chunks match.

Semantics (docs/search.md "Filters"): every given key narrows the search (AND).
- `frontmatter`: {field: condition}. A scalar is equality, a list one-of, an object a range
  and/or equality ({"gte", "gt", "lte", "lt", "eq", "in"}). A number also matches the same
  number written as a string ("2021"), and a field holding a list matches when one of its
  items does. A range with numbers compares numerically; with strings, as text, which orders
  ISO dates (2021-05-03) correctly. For PDF and DOCX the fields come from the file's own
  metadata (author, created, modified, title, subject, keywords) and a sidecar
  `<file>.meta.yaml`.
- `tags`: every one of these tags (case-insensitive, `#` optional); `tags_any`: one of them.
- `format`: one of markdown, pdf, docx, txt.
- `folder`: the document's path starts with this folder (one of, when a list).
- `title`: the title holds this text (case-insensitive): a PDF's or DOCX's title, a note's
  frontmatter `title`, else the name it is cited by (an upload's name, else its path).
- `ingested` / `updated`: {"gte", "gt", "lte", "lt"} ISO dates or date-times (UTC when no offset
  is given), on when the document was first indexed / last stored.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import psycopg
from psycopg.rows import class_row

from core.db import db_errors_translated
from core.errors import InvalidRequest
from knowledge.db_schema import index_connection
from retrieval import sql

FORMATS = ("markdown", "pdf", "docx", "txt")
RANGE_OPERATORS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}
FIELD_OPERATORS = (*RANGE_OPERATORS, "eq", "in")
# Bounds of one request's filters: each is far above what a person writes, and keeps the
# statement they become small.
MAX_FIELDS = 20  # frontmatter fields
MAX_VALUES = 100  # values of one one-of list (and tags)
MAX_TEXT = 500  # characters of one value, key, folder or title
MAX_KEY = 200


@dataclass(frozen=True)
class DocumentFilter:
    """A checked `filters` object: SQL conditions on `documents d` and their bound values."""

    conditions: tuple[str, ...]
    params: dict[str, Any]
    # The request's filters, normalised: what traces and explain outputs record.
    described: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilteredScope:
    """The documents a filtered search may return, and how many chunks they hold."""

    document_ids: list[int]
    chunks: int


@dataclass(frozen=True, slots=True)
class _AdmittedRow:
    document_ids: list[int] | None  # None: no document matched
    chunks: int | None


def filters_parse(raw: Any) -> DocumentFilter | None:
    """The checked filters of a request (None when absent or empty); InvalidRequest naming the
    field (`filters.frontmatter.year`) for anything malformed."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        _invalid("filters", "must be an object")
    builder = _Builder()
    known = {"frontmatter", "tags", "tags_any", "format", "folder", "title", "ingested",
             "updated"}
    for key in raw:
        if key not in known:
            _invalid(f"filters.{key}", f"is not a filter; use one of {', '.join(sorted(known))}")
    if raw.get("frontmatter") is not None:
        builder.frontmatter(raw["frontmatter"])
    if raw.get("tags") is not None:
        builder.tags(raw["tags"], name="tags", every=True)
    if raw.get("tags_any") is not None:
        builder.tags(raw["tags_any"], name="tags_any", every=False)
    if raw.get("format") is not None:
        builder.formats(raw["format"])
    if raw.get("folder") is not None:
        builder.folders(raw["folder"])
    if raw.get("title") is not None:
        builder.title(raw["title"])
    for name, column in (("ingested", "created_at"), ("updated", "updated_at")):
        if raw.get(name) is not None:
            builder.dates(raw[name], name=name, column=column)
    if not builder.conditions:
        return None
    return DocumentFilter(conditions=tuple(builder.conditions), params=builder.params,
                         described=builder.described)


def filters_from_json(text: str | None) -> DocumentFilter | None:
    """`--filters '{"folder": "reports/"}'` of the commands: the API's `filters`, as JSON."""
    if text is None:
        return None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(f"filters is not JSON: {exc}", details={"field": "filters"}) from None
    return filters_parse(raw)


def filtered_scope(*, filters: DocumentFilter,
                   knowledge_base_ids: Sequence[int]) -> FilteredScope:
    """The documents of `knowledge_base_ids` that `filters` admits (one statement)."""
    statement = sql.FILTER_DOCUMENTS.format(conditions="\n    AND ".join(filters.conditions))
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn, row_factory=class_row(_AdmittedRow)) as cursor:
            cursor.execute(statement, {**filters.params, "kb_ids": list(knowledge_base_ids)})
            row = cursor.fetchone()
    assert row is not None  # an aggregate returns one row
    return FilteredScope(document_ids=list(row.document_ids or []), chunks=int(row.chunks or 0))


def _invalid(name: str, problem: str) -> NoReturn:
    raise InvalidRequest(f"{name} {problem}", details={"field": name})


def _text(value: Any, *, name: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or not value.strip():
        _invalid(name, "must be a non-empty string")
    if len(value) > limit:
        _invalid(name, f"is longer than {limit} characters")
    if "\x00" in value:
        _invalid(name, "must not contain a NUL character (\\x00)")
    return value.strip()


def _texts(value: Any, *, name: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items:
        _invalid(name, "must not be an empty list")
    if len(items) > MAX_VALUES:
        _invalid(name, f"has more than {MAX_VALUES} values")
    return [_text(item, name=name) for item in items]


def _scalar(value: Any, *, name: str) -> str | float | bool:
    """A frontmatter value to compare with: a string, a finite number or a boolean."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or abs(value) > 1e15:
            _invalid(name, "must be a finite number of at most 15 digits")
        return float(value)
    if isinstance(value, str):
        return _text(value, name=name)
    _invalid(name, "must be a string, a number or a boolean")


def _path_string(text: str) -> str:
    """A jsonpath string literal: JSON's escaping, which jsonpath reads the same way."""
    return json.dumps(text, ensure_ascii=False)


def _path_number(number: float) -> str:
    return repr(int(number)) if number.is_integer() else repr(number)


def _equal_terms(value: str | float | bool) -> list[str]:
    """jsonpath comparisons of the current item with `value`: a number also as its string, a
    string that is a number also as that number."""
    if isinstance(value, bool):
        return [f"@ == {'true' if value else 'false'}"]
    if isinstance(value, float):
        return [f"@ == {_path_number(value)}", f"@ == {_path_string(_path_number(value))}"]
    terms = [f"@ == {_path_string(value)}"]
    try:
        number = float(value)
    except ValueError:
        return terms
    if math.isfinite(number) and abs(number) <= 1e15:
        terms.append(f"@ == {_path_number(number)}")
    return terms


class _Builder:
    def __init__(self) -> None:
        self.conditions: list[str] = []
        self.params: dict[str, Any] = {}
        self.described: dict[str, Any] = {}

    def bind(self, value: Any) -> str:
        name = f"filter_{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    def frontmatter(self, raw: Any) -> None:
        if not isinstance(raw, dict) or not raw:
            _invalid("filters.frontmatter", "must be a non-empty object of field: condition")
        if len(raw) > MAX_FIELDS:
            _invalid("filters.frontmatter", f"has more than {MAX_FIELDS} fields")
        described: dict[str, Any] = {}
        for key, condition in raw.items():
            name = f"filters.frontmatter.{key}"
            key = _text(key, name=name, limit=MAX_KEY)
            accessor = f"$.{_path_string(key)}"
            for path in self._field_paths(accessor, condition, name=name):
                self.conditions.append(f"d.frontmatter @? {self.bind(path)}::jsonpath")
            described[key] = condition
        self.described["frontmatter"] = described

    def _field_paths(self, accessor: str, condition: Any, *, name: str) -> list[str]:
        """The jsonpath tests (each must hold) of one field's condition."""
        if isinstance(condition, list):
            return [self._one_of(accessor, condition, name=name)]
        if not isinstance(condition, dict):
            return [self._one_of(accessor, [condition], name=name)]
        if not condition:
            _invalid(name, "must not be an empty object")
        for operator in condition:
            if operator not in FIELD_OPERATORS:
                _invalid(f"{name}.{operator}",
                         f"is not an operator; use one of {', '.join(FIELD_OPERATORS)}")
        paths = []
        if "eq" in condition:
            paths.append(self._one_of(accessor, [condition["eq"]], name=f"{name}.eq"))
        if "in" in condition:
            if not isinstance(condition["in"], list):
                _invalid(f"{name}.in", "must be a list")
            paths.append(self._one_of(accessor, condition["in"], name=f"{name}.in"))
        bounds = [(operator, condition[operator]) for operator in RANGE_OPERATORS
                  if operator in condition]
        if bounds:
            paths.append(self._range(accessor, bounds, name=name))
        return paths

    def _one_of(self, accessor: str, values: list[Any], *, name: str) -> str:
        if not values:
            _invalid(name, "must not be an empty list")
        if len(values) > MAX_VALUES:
            _invalid(name, f"has more than {MAX_VALUES} values")
        terms = [term for value in values for term in _equal_terms(_scalar(value, name=name))]
        return f"{accessor} ? ({' || '.join(terms)})"

    def _range(self, accessor: str, bounds: list[tuple[str, Any]], *, name: str) -> str:
        kinds = set()
        tests = []
        for operator, value in bounds:
            bound = _scalar(value, name=f"{name}.{operator}")
            if isinstance(bound, bool):
                _invalid(f"{name}.{operator}", "must be a number or a string")
            kinds.add(type(bound))
            literal = _path_number(bound) if isinstance(bound, float) else _path_string(bound)
            tests.append(f"@ {RANGE_OPERATORS[operator]} {literal}")
        if len(kinds) > 1:
            _invalid(name, "compares with numbers and strings at once; use one kind")
        # Numbers: the field's value as a number, whether stored as 2021 or "2021" (lax mode
        # skips a value that is not one).
        item = f"{accessor}.double()" if float in kinds else accessor
        return f"{item} ? ({' && '.join(tests)})"

    def tags(self, raw: Any, *, name: str, every: bool) -> None:
        tags = [tag.lstrip("#").lower() for tag in _texts(raw, name=f"filters.{name}")]
        if not all(tags):
            _invalid(f"filters.{name}", "must name tags, not only `#`")
        operator = "@>" if every else "&&"
        self.conditions.append(f"d.tags {operator} {self.bind(tags)}::text[]")
        self.described[name] = tags

    def formats(self, raw: Any) -> None:
        formats = [value.lower() for value in _texts(raw, name="filters.format")]
        for value in formats:
            if value not in FORMATS:
                _invalid("filters.format", f"has {value!r}; use one of {', '.join(FORMATS)}")
        self.conditions.append(f"d.format = ANY({self.bind(formats)}::text[])")
        self.described["format"] = formats

    def folders(self, raw: Any) -> None:
        folders = []
        for value in _texts(raw, name="filters.folder"):
            folder = value.replace("\\", "/").strip("/")
            while folder.startswith("./"):
                folder = folder[2:].lstrip("/")
            if not folder or folder == ".":
                _invalid("filters.folder", "must name a folder inside the vault")
            folders.append(folder + "/")
        # LIKE with the folder's own % and _ escaped: a prefix the path index can find.
        tests = " OR ".join(f"d.relative_path LIKE {self.bind(_like_escape(folder) + '%')}"
                            for folder in folders)
        self.conditions.append(f"({tests})")
        self.described["folder"] = folders

    def title(self, raw: Any) -> None:
        title = _text(raw, name="filters.title")
        # The expression of the trigram index on documents (knowledge's migration 0016).
        pattern = f"%{_like_escape(title.lower())}%"
        self.conditions.append("lower(coalesce(d.title, d.frontmatter ->> 'title', "
                               f"d.source_name, d.relative_path)) LIKE {self.bind(pattern)}")
        self.described["title"] = title

    def dates(self, raw: Any, *, name: str, column: str) -> None:
        if not isinstance(raw, dict) or not raw:
            _invalid(f"filters.{name}", "must be an object of gte/gt/lte/lt: ISO date")
        described = {}
        for operator, value in raw.items():
            field_name = f"filters.{name}.{operator}"
            if operator not in RANGE_OPERATORS:
                _invalid(field_name, f"is not an operator; use one of "
                                     f"{', '.join(RANGE_OPERATORS)}")
            moment = _moment(value, name=field_name)
            self.conditions.append(
                f"d.{column} {RANGE_OPERATORS[operator]} {self.bind(moment)}::timestamptz")
            described[operator] = moment.isoformat()
        self.described[name] = described


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _moment(value: Any, *, name: str) -> dt.datetime:
    """An ISO date (its midnight, UTC) or date-time (UTC when it names no offset)."""
    text = _text(value, name=name, limit=40)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        _invalid(name, f"is not an ISO date or date-time: {text!r}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
