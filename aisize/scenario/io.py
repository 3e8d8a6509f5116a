"""Reading and writing scenarios as YAML or JSON, safely.

Files arrive by mail: they are parsed with ``yaml.safe_load`` (no object
construction), limited in size and nesting depth, and validated against the
schema. Every failure is a :class:`ScenarioError` whose message names the field
path and what is allowed; nothing in a file is ever executed.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import ValidationError

from aisize.scenario.model import SCHEMA_VERSION, Scenario

MAX_FILE_BYTES = 1_000_000  # a scenario is a page of text; anything larger is not one
MAX_DEPTH = 12


class ScenarioError(ValueError):
    """A scenario file or dict is invalid; the message names the field path."""


def _depth(obj, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(obj, dict):
        return max([_depth(v, level + 1) for v in obj.values()], default=level + 1)
    if isinstance(obj, list):
        return max([_depth(v, level + 1) for v in obj], default=level + 1)
    return level


def _describe(err: dict) -> str:
    path = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-after")) or "(top)"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key (check the spelling; see `aisize preset NAME` for a valid file)"
    shown = err.get("input")
    if err["type"] in ("missing", "extra_forbidden") or isinstance(shown, (dict, list)):
        return f"{path}: {msg}"
    return f"{path}: {msg} (got {shown!r})"


def from_dict(data) -> Scenario:
    """Validate a plain dict (parsed YAML/JSON, or built by the app) into a Scenario."""
    if not isinstance(data, dict):
        raise ScenarioError(f"a scenario must be a mapping of keys to values, got {type(data).__name__}")
    if _depth(data) > MAX_DEPTH:
        raise ScenarioError(f"scenario is nested deeper than {MAX_DEPTH} levels")
    version = data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ScenarioError(f"schema_version: {version!r} is not supported; this aisize reads "
                            f"version {SCHEMA_VERSION}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        lines = [_describe(e) for e in exc.errors(include_url=False)]
        raise ScenarioError("invalid scenario:\n  " + "\n  ".join(lines)) from None


def loads(text: str, *, fmt: str = "yaml") -> Scenario:
    """Parse scenario text; ``fmt`` is "yaml" or "json" (YAML also reads JSON)."""
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise ScenarioError(f"scenario text is larger than {MAX_FILE_BYTES} bytes")
    try:
        data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ScenarioError(f"scenario is not valid {fmt.upper()}: {first}") from None
    return from_dict(data)


def load(path) -> Scenario:
    """Read a scenario file (.yaml, .yml or .json)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: file is {size} bytes; a scenario is at most {MAX_FILE_BYTES}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot be read ({exc})") from None
    try:
        return loads(text, fmt="json" if path.suffix.lower() == ".json" else "yaml")
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None


def to_dict(scenario: Scenario) -> dict:
    """A plain, JSON-compatible dict of the scenario (defaults included)."""
    return scenario.model_dump(mode="json")


def dumps(scenario: Scenario, *, fmt: str = "yaml") -> str:
    """Scenario as YAML or JSON text that :func:`loads` reads back to an equal scenario."""
    data = to_dict(scenario)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
