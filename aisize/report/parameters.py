"""Checking a report's parameters before papermill sees them.

papermill escapes string values, but it pastes parameter NAMES and any value
it does not know how to translate into the notebook as code. So every name
must be one the notebook declares (read with ``papermill.inspect_notebook``
from its tagged, type-annotated parameters cell) and every value is coerced to
the declared type: only str, int, float, bool and list of str pass. File paths
are confined: the scenario must be an existing, readable .yaml/.yml/.json
file; outputs are plain names inside the chosen output folder.
"""

from __future__ import annotations

import math
import os
import re
from functools import lru_cache
from pathlib import Path

from aisize.report.execute import ReportError

SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")
MAX_TEXT = 1000  # a title, customer name or path is a line, not a document
MAX_ITEMS = 50
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_OUTPUT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# No quote, backslash or newline can end a Python string literal, even if papermill's escaping
# changed; no markup or template characters reach the page. Apostrophes and ampersands are fine.
_FORBIDDEN = re.compile(r'["\\`<>{}$\x00-\x1f\x7f]')
FORBIDDEN_SHOWN = '" \\ ` < > { } $ and control characters'
TYPES = ("str", "int", "float", "bool", "list")


class ParameterError(ReportError, ValueError):
    """A parameter is unknown, of the wrong type or points outside where it may."""

    def __init__(self, message: str):
        super().__init__("validate", message)


@lru_cache(maxsize=16)
def _declared(path: str, mtime_ns: int) -> tuple[tuple[str, str], ...]:
    import papermill

    found = papermill.inspect_notebook(path)
    if not found:
        raise ParameterError(f"{path}: has no cell tagged 'parameters'")
    return tuple((name, p["inferred_type_name"]) for name, p in found.items())


def declared_parameters(notebook) -> dict[str, str]:
    """Declared parameter name -> type name ("str", "int", ...) of a notebook."""
    path = Path(notebook)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise ParameterError(f"notebook {path} cannot be read ({exc.strerror})") from None
    declared = dict(_declared(str(path), mtime))
    odd = {n: t for n, t in declared.items() if t not in TYPES}
    if odd:
        raise ParameterError(f"{path}: parameters need a type annotation, one of {TYPES}: {odd}")
    return declared


def _text(name: str, value) -> str:
    if not isinstance(value, str):
        raise ParameterError(f"{name}: expected text, got {type(value).__name__} {value!r}")
    if len(value) > MAX_TEXT:
        raise ParameterError(f"{name}: text must be at most {MAX_TEXT} characters")
    if _FORBIDDEN.search(value):
        raise ParameterError(f"{name}: {value!r} holds a character that is not allowed "
                             f"({FORBIDDEN_SHOWN})")
    return value


def coerce(name: str, value, type_name: str):
    """``value`` as ``type_name``, or a ParameterError naming ``name``, the value and the type."""
    if type_name == "str":
        return _text(name, value)
    if type_name == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ParameterError(f"{name}: expected true or false, got {value!r}")
    if type_name in ("int", "float"):
        if isinstance(value, str):
            try:
                value = int(value) if type_name == "int" else float(value)
            except ValueError:
                raise ParameterError(f"{name}: expected a number ({type_name}), got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"{name}: expected a number ({type_name}), got {value!r}")
        if type_name == "int" and (isinstance(value, float) and not value.is_integer()):
            raise ParameterError(f"{name}: expected a whole number, got {value!r}")
        if not math.isfinite(value):
            raise ParameterError(f"{name}: expected a finite number, got {value!r}")
        return int(value) if type_name == "int" else float(value)
    if isinstance(value, str):  # "a,b" from a command line
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or len(value) > MAX_ITEMS:
        raise ParameterError(f"{name}: expected a list of at most {MAX_ITEMS} texts, got {value!r}")
    return [_text(f"{name}[{i}]", v) for i, v in enumerate(value)]


def validate(values: dict, notebook) -> dict:
    """``values`` checked against the notebook's declared parameters and coerced to their types."""
    declared = declared_parameters(notebook)
    checked = {}
    for name, value in values.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ParameterError(f"parameter name {name!r} is not a plain identifier")
        if name not in declared:
            raise ParameterError(f"unknown parameter {name!r}; the notebook declares "
                                 f"{', '.join(declared)}")
        checked[name] = coerce(name, value, declared[name])
    return checked


def scenario_file(path) -> Path:
    """The absolute path of an existing, readable scenario file the user named."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ParameterError(f"scenario: expected a file path, got {path!r}")
    text = str(path)
    if _CONTROL.search(text):
        raise ParameterError(f"scenario: the path {text!r} contains control characters")
    p = Path(text).expanduser()
    if p.suffix.lower() not in SCENARIO_SUFFIXES:
        raise ParameterError(f"scenario: {text!r} must be a {'/'.join(SCENARIO_SUFFIXES)} file")
    if not p.is_file():
        raise ParameterError(f"scenario: {text!r} does not exist or is not a file")
    if not os.access(p, os.R_OK):
        raise ParameterError(f"scenario: {text!r} is not readable")
    return p.resolve()


def output_dir(path) -> Path:
    """The output folder, created if missing; it must not be an existing file."""
    text = str(path) if isinstance(path, (str, os.PathLike)) else ""
    if not text.strip() or _CONTROL.search(text):
        raise ParameterError(f"out: expected a folder path, got {path!r}")
    p = Path(text).expanduser().resolve()
    if p.exists() and not p.is_dir():
        raise ParameterError(f"out: {text!r} exists and is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"out: cannot create {text!r} ({exc.strerror})") from None
    return p


def output_path(out_dir: Path, name: str, suffix: str) -> Path:
    """``out_dir/name+suffix``; ``name`` may not hold a path separator, '..' or odd characters."""
    if not isinstance(name, str) or not _OUTPUT_NAME.match(name) or ".." in name:
        raise ParameterError(f"name: {name!r} must be a plain file name (letters, digits, '.', "
                             "'_', '-'; no path separators or '..')")
    target = (out_dir / f"{name}{suffix}").resolve()
    if target.parent != out_dir.resolve():
        raise ParameterError(f"name: {name!r} leads outside the output folder {out_dir}")
    return target


def slug(text: str) -> str:
    """A file-name-safe version of ``text``: "Dell XE9680 (8x)" -> "dell-xe9680-8x"."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "report"
