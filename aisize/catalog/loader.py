"""Load a catalog CSV into typed records, validating every cell.

The record dataclass is the schema. A field's name says its unit dimension
(``memory_bytes``, ``read_bandwidth_bytes_per_s``); the CSV states the figure in
the unit of its source, either in the header (``memory [GiB]``) or in a paired
column (``bandwidth`` + ``bandwidth_unit``) when the unit varies by row. The
loader converts to base units. A field with a default may be left out of the
table or left empty in a row: it takes the default. Any problem (missing or unknown column, missing,
non-numeric or negative value, unknown unit, missing source, duplicate id) is a
:class:`CatalogError` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import re
import types
import typing
from pathlib import Path

from aisize.catalog.records import RANGES
from aisize.units import BASE_SUFFIX, UNITS

# Longest suffix first so "_bytes_per_s" wins over "_per_s".
_SUFFIXES = sorted(((f"_{s}", d) for d, s in BASE_SUFFIX.items() if d not in ("count", "ratio")),
                   key=lambda sd: -len(sd[0]))
_HEADER = re.compile(r"^\s*(?P<stem>[a-z0-9_]+)\s*(\[(?P<unit>[^\]]+)\])?\s*$")
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


class CatalogError(ValueError):
    """A catalog table is malformed; the message names file, line and column."""

    def __init__(self, path: Path, message: str, line: int | None = None, column: str | None = None):
        where = str(path) + (f", line {line}" if line else "") + (f", column {column!r}" if column else "")
        super().__init__(f"{where}: {message}")


def _field_kind(name: str, tp) -> tuple[str, str | None, bool]:
    """(kind, dimension, optional) for a dataclass field.

    kind is "quantity" (has a unit dimension), "int", "float", "bool" or "str".
    """
    optional = False
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        tp = args[0]
    if tp is str:
        return "str", None, optional
    if tp is bool:
        return "bool", None, optional
    if tp is int:
        return "int", None, optional
    for suffix, dimension in _SUFFIXES:
        if name.endswith(suffix):
            return "quantity", dimension, optional
    return "float", None, optional


def _stem(name: str, dimension: str | None) -> str:
    if dimension is None:
        return name
    return name[: -len(BASE_SUFFIX[dimension]) - 1]


class _Column(typing.NamedTuple):
    field: str
    kind: str
    dimension: str | None
    optional: bool
    header: str  # the CSV column holding the figure
    unit: str | None  # unit from the header, or None if a unit column is used
    unit_header: str | None  # paired per-row unit column
    default: object  # the field's default (empty cell), or dataclasses.MISSING when required


def _plan_columns(path: Path, record_type: type, headers: list[str]) -> list[_Column]:
    parsed = {}
    for h in headers:
        m = _HEADER.match(h or "")
        if not m:
            raise CatalogError(path, f"column header {h!r} is not 'name' or 'name [unit]'", line=1)
        parsed[m["stem"]] = (h, m["unit"].strip() if m["unit"] else None)
    hints = typing.get_type_hints(record_type)
    columns, used = [], set()
    for f in dataclasses.fields(record_type):
        kind, dimension, optional = _field_kind(f.name, hints[f.name])
        stem = _stem(f.name, dimension)
        if stem not in parsed and f.default is not dataclasses.MISSING:
            continue  # a column added later: tables written before it keep the default
        if stem not in parsed:
            raise CatalogError(path, f"missing column {stem!r} (for field {f.name})", line=1)
        header, unit = parsed[stem]
        used.add(stem)
        unit_header = None
        if kind == "quantity" and unit is None:
            if f"{stem}_unit" not in parsed:
                raise CatalogError(path, f"column {stem!r} needs a unit: write '{stem} [unit]' or add "
                                   f"a '{stem}_unit' column", line=1, column=header)
            unit_header = parsed[f"{stem}_unit"][0]
            used.add(f"{stem}_unit")
        elif unit is not None:
            _check_unit(path, unit, dimension if kind == "quantity" else "count", 1, header)
        columns.append(_Column(f.name, kind, dimension, optional, header, unit, unit_header, f.default))
    extra = sorted(set(parsed) - used)
    if extra:
        raise CatalogError(path, f"unknown column(s) {extra}; this table has "
                           f"{[c.header for c in columns]}", line=1)
    return columns


def _check_unit(path: Path, unit: str, dimension: str, line: int, column: str) -> float:
    allowed = [u for u, spec in UNITS.items() if spec.dimension == dimension]
    if unit not in UNITS or UNITS[unit].dimension != dimension:
        raise CatalogError(path, f"unknown unit {unit!r} for a {dimension} figure; allowed: {allowed}",
                           line=line, column=column)
    return UNITS[unit].factor


def _number(path: Path, text: str, line: int, column: str) -> float:
    try:
        value = float(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise CatalogError(path, f"value {text!r} is not a number", line=line, column=column) from None
    if not math.isfinite(value) or value < 0:
        raise CatalogError(path, f"value {text!r} must be a finite number >= 0", line=line, column=column)
    return value


def _cell(path: Path, col: _Column, row: dict, line: int):
    text = (row.get(col.header) or "").strip()
    if not text:
        if col.default is not dataclasses.MISSING:
            return col.default
        if col.optional:
            return None
        what = "source" if col.field == "source" else "value"
        raise CatalogError(path, f"missing {what} (required)", line=line, column=col.header)
    if col.kind == "str":
        return text
    if col.kind == "bool":
        if text.lower() not in _TRUE | _FALSE:
            raise CatalogError(path, f"value {text!r} is not true/false", line=line, column=col.header)
        return text.lower() in _TRUE
    value = _number(path, text, line, col.header)
    if col.kind in ("int", "float"):
        value *= UNITS[col.unit].factor if col.unit else 1.0
        if col.kind == "float":
            return value
        if abs(value - round(value)) > 1e-6 * max(1.0, value):
            raise CatalogError(path, f"value {text!r} must be a whole number", line=line, column=col.header)
        return int(round(value))
    if col.unit_header is not None:
        unit = (row.get(col.unit_header) or "").strip()
        factor = _check_unit(path, unit, col.dimension, line, col.unit_header)
    else:
        factor = UNITS[col.unit].factor
    return value * factor


def _record(path: Path, record_type: type, columns: list[_Column], row: dict, line: int | None):
    values = {c.field: _cell(path, c, row, line) for c in columns}
    for c in columns:  # hardware figures within their physical range (records.RANGES), named by row and column
        low, high, words = RANGES.get(record_type, {}).get(c.field, (None, None, ""))
        v = values[c.field]
        if low is not None and v is not None and not low <= v <= high:
            unit = f" {(row.get(c.unit_header) or '').strip()}" if c.unit_header else ""
            raise CatalogError(path, f"{values[columns[0].field]!r}: {(row.get(c.header) or '').strip()}{unit} is not "
                                     f"allowed: {_stem(c.field, c.dimension)} must be {words}", line=line,
                               column=c.header)
    return record_type(**values)


def load_table(path: Path, record_type: type) -> list:
    """Read ``path`` and return one ``record_type`` per row, in file order.

    The first field of ``record_type`` is its id, unique within the table;
    every table has a required ``source`` field.
    """
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise CatalogError(path, f"cannot be read ({exc.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        columns = _plan_columns(path, record_type, list(reader.fieldnames or []))
        id_field = dataclasses.fields(record_type)[0].name
        records, seen = [], {}
        for row in reader:
            line = reader.line_num
            if None in row:
                raise CatalogError(path, f"row has {len(row) - 1 + len(row[None])} cells but the header has "
                                   f"{len(row) - 1} columns", line=line,
                                   column=f"#{len(row)} (after the last header column)")
            record = _record(path, record_type, columns, row, line)
            key = getattr(record, id_field)
            if key in seen:
                raise CatalogError(path, f"duplicate id {key!r} (first on line {seen[key]})",
                                   line=line, column=id_field)
            seen[key] = line
            records.append(record)
    if not records:
        raise CatalogError(path, "table has no rows")
    return records


def parse_row(where: str, record_type: type, headers: list[str], values: dict):
    """One record from a mapping written like a CSV row of a table with ``headers``.

    Keys are the column names without their unit (``memory``, ``bf16``, ``host_memory``
    with ``host_memory_unit``); values are in the units the table's header states. The
    same checks as a catalog file apply; errors name ``where`` and the key.
    """
    columns = _plan_columns(Path(where), record_type, headers)
    by_stem = {(_HEADER.match(h)["stem"]): h for h in headers}
    unknown = sorted(set(values) - set(by_stem))
    if unknown:
        raise CatalogError(Path(where), f"unknown field(s) {unknown}; allowed: {sorted(by_stem)}")
    row = {by_stem[k]: "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
           for k, v in values.items()}
    return _record(Path(where), record_type, columns, row, None)
