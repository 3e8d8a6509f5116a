"""The validation cases table (``data/validation/cases.csv``): load it and check every row.

One row per published figure aisize can be compared with: its family, the kind
of prediction, the value and unit as published, the inputs aisize needs
(``key=value; key=value``), the tolerance with its justification, the status the
case is expected to have, and the source. A malformed table fails loudly with
the file, the line and the column, never with a pandas traceback.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from aisize import catalog
from aisize.units import HOUR, UNITS
from aisize.validation.families import FAMILIES
from aisize.validation.predict import PREDICTORS

STATUSES = ("ok", "outside", "needs input")
COLUMNS = ("id", "family", "kind", "description", "published", "unit", "inputs", "tolerance_pct",
           "tolerance_basis", "expected_status", "source")
# Units of published figures beyond aisize.units.UNITS, as factors to base units.
EXTRA_UNITS = {"GPU-h": HOUR,  # GPU-hours -> GPU-seconds
               "images/s": 1.0, "sequences/s": 1.0, "tokens/s": 1.0}
PARAMS_OR_MODEL = ("zero-states", "weights", "training-flops", "mfu-from-throughput", "gpu-hours",
                   "checkpoint-size")


class CasesError(ValueError):
    """A row of the cases table is malformed."""


def validation_dir() -> Path:
    """``data/validation/`` beside the catalog (``$AISIZE_DATA_DIR`` honoured)."""
    return catalog.data_dir() / "validation"


def cases_path() -> Path:
    return validation_dir() / "cases.csv"


def unit_factor(unit: str) -> float:
    """Factor from a published unit to base units (bytes, FLOP, GPU-seconds, 1/s, ratio)."""
    if unit in EXTRA_UNITS:
        return EXTRA_UNITS[unit]
    if unit in UNITS:
        return UNITS[unit].factor
    raise ValueError(f"unit={unit!r} is unknown; allowed: {', '.join([*UNITS, *EXTRA_UNITS])}")


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return float(text)
    except ValueError:
        return text


def parse_inputs(text: str) -> dict:
    """``'params=7.5e9; dp=64'`` -> ``{'params': 7.5e9, 'dp': 64.0}`` (numbers, booleans, strings)."""
    out = {}
    for part in (p.strip() for p in str(text).split(";")):
        if not part:
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip() or not val.strip():
            raise ValueError(f"inputs={text!r} is not allowed: {part!r} is not key=value")
        out[key.strip()] = _value(val.strip())
    return out


def _fail(path: Path, line: int, column: str, message: str):
    raise CasesError(f"{path}: line {line}, column {column!r}: {message}")


def _check_row(path: Path, line: int, row: dict) -> dict:
    """One row, checked and typed; raises :class:`CasesError` naming line and column."""
    for col in ("id", "family", "kind", "unit", "expected_status", "source", "tolerance_basis"):
        if not str(row.get(col) or "").strip():
            _fail(path, line, col, "is empty")
    if row["family"] not in FAMILIES:
        _fail(path, line, "family", f"{row['family']!r} is not allowed; allowed: {', '.join(FAMILIES)}")
    if row["kind"] not in PREDICTORS:
        _fail(path, line, "kind", f"{row['kind']!r} is not allowed; allowed: {', '.join(PREDICTORS)}")
    if row["expected_status"] not in STATUSES:
        _fail(path, line, "expected_status", f"{row['expected_status']!r} is not allowed; "
                                             f"allowed: {', '.join(STATUSES)}")
    if row["expected_status"] == "needs input" and not str(row["tolerance_pct"]).strip():
        row["tolerance_pct"] = "nan"  # no prediction, so no tolerance
    for col in ("published", "tolerance_pct"):
        try:
            v = float(str(row[col]).replace(",", ""))
        except (TypeError, ValueError):
            _fail(path, line, col, f"{row[col]!r} is not a number")
        if math.isnan(v) and col == "tolerance_pct" and row["expected_status"] == "needs input":
            row[col] = v
            continue
        if not math.isfinite(v) or v < 0 or (col == "published" and v == 0):
            _fail(path, line, col, f"{v!r} is out of range (must be finite, > 0 for published, >= 0 "
                                   "for tolerance; empty tolerance only for 'needs input' cases)")
        row[col] = v
    try:
        unit_factor(row["unit"])
        row["inputs"] = parse_inputs(row.get("inputs") or "")
    except ValueError as exc:
        _fail(path, line, "unit" if "unit=" in str(exc) else "inputs", str(exc))
    _, required, _ = PREDICTORS[row["kind"]]
    missing = [k for k in required if k not in row["inputs"]]
    if row["kind"] in PARAMS_OR_MODEL and not {"params", "model"} & set(row["inputs"]):
        missing.append("params or model")
    if missing:
        _fail(path, line, "inputs", f"kind {row['kind']!r} needs {', '.join(missing)}")
    return row


def load_cases(path: str | Path | None = None) -> pd.DataFrame:
    """The validation cases, checked: one row per case, ``inputs`` parsed into dicts.

    Parameters
    ----------
    path : a cases CSV; default ``data/validation/cases.csv``

    Raises
    ------
    CasesError (a ValueError) naming the file, line and column of the first bad cell.
    """
    p = Path(path) if path is not None else cases_path()
    if not p.is_file():
        raise CasesError(f"path={str(p)!r}: the cases table does not exist")
    try:
        raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise CasesError(f"{p}: not a readable CSV: {exc}") from None
    missing = [c for c in COLUMNS if c not in raw.columns]
    if missing:
        raise CasesError(f"{p}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
    rows = [_check_row(p, i + 2, dict(r)) for i, r in enumerate(raw[list(COLUMNS)].to_dict("records"))]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    dup = frame["id"][frame["id"].duplicated()]
    if len(dup):
        raise CasesError(f"{p}: column 'id': {dup.iloc[0]!r} appears more than once")
    return frame
