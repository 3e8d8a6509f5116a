"""Reading and writing scenarios as YAML or JSON, safely.

Files arrive by mail: they are parsed with PyYAML's safe loader (no object
construction), limited in size, nesting depth and aliased size (a "billion
laughs" document is refused before it is expanded), and validated against the
schema. A key given twice, an integer too long to be a number (Python refuses
to convert more than 4,300 digits) and a subnormal float (below 2.2e-308, where
divisions overflow) are refused by field path before the schema sees them.
Every failure is a :class:`ScenarioError` whose message names the field path
and what is allowed; nothing in a file is ever executed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml
from pydantic import ValidationError

from aisize import checks
from aisize.scenario.model import SCHEMA_VERSION, Scenario
from aisize.scenario.paths import READ_MODEL_FILES, SCENARIO_FOLDER

MAX_FILE_BYTES = 1_000_000  # a scenario is a page of text; anything larger is not one
MAX_DEPTH = 12
MAX_NODES = 100_000  # values after expanding YAML aliases; a full scenario has a few hundred
MAX_SHOWN = 80  # characters of a rejected value quoted in a message
MAX_NUMBER_CHARS = 40  # digits of an integer in a file: every field's range ends far below 10**40
_INT_TAG = "tag:yaml.org,2002:int"
_MERGE_TAG = "tag:yaml.org,2002:merge"


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


def _key(part) -> str:
    """A path part as written in a file; odd keys (empty, spaces, dots, very long) are quoted."""
    text = str(part)
    return text if re.fullmatch(r"[\w-]{1,80}", text) else repr(text[:MAX_SHOWN])


def _describe(err: dict) -> str:
    path = ".".join(_key(p) for p in err["loc"] if not str(p).startswith("function-after")) or "(top)"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key (check the spelling; see `aisize preset NAME` for a valid file)"
    # a quoted value inside the message (a bad discriminator tag, a literal) is kept short too
    msg = re.sub(r"'([^']{%d,})'" % (MAX_SHOWN + 1), lambda m: repr(m[1][:MAX_SHOWN]) + "...", msg)
    shown = err.get("input")
    if err["type"] in ("missing", "extra_forbidden") or isinstance(shown, (dict, list)):
        return f"{path}: {msg}"
    msg = msg.replace(repr(shown), _brief(shown))  # validators quote the value: keep it short
    return f"{path}: {msg} (got {_brief(shown)})"


def _brief(value) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


class _LongNumber:
    """An integer in a JSON file too long to convert; refused by path in :func:`from_dict`."""

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))


def _path_text(path: tuple) -> str:
    return ".".join(_key(p) for p in path) or "(top)"


def _refuse_unreadable_numbers(data, path: tuple = ()) -> None:
    """ScenarioError naming the first too-long integer or subnormal float in ``data``."""
    if isinstance(data, dict):
        for key, value in data.items():
            _refuse_unreadable_numbers(value, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _refuse_unreadable_numbers(value, path + (index,))
    elif isinstance(data, _LongNumber):
        raise ScenarioError(f"{_path_text(path)}: an integer of {data.digits} digits is not a value "
                            f"any field allows (at most {MAX_NUMBER_CHARS} characters)")
    elif isinstance(data, float) and 0.0 < abs(data) < sys.float_info.min:
        raise ScenarioError(f"{_path_text(path)}: {data!r} is a subnormal number (smaller than "
                            f"{sys.float_info.min:.3g}), not a value any field allows (write 0 if zero is meant)")


def from_dict(data, *, read_model_files: bool = False) -> Scenario:
    """Validate a plain dict (parsed YAML/JSON, or built by the app) into a Scenario.

    ``read_model_files``: the scenario may name files on disk (a model's config.json, a serving calibration,
    a load profile's CSV: it is a file the user gave the command line; see :mod:`aisize.scenario.paths`);
    otherwise their content must be embedded and no path is read.
    """
    token = READ_MODEL_FILES.set(read_model_files)
    try:
        return _from_dict(data)
    finally:
        READ_MODEL_FILES.reset(token)


def _from_dict(data) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"a scenario must be a mapping of keys to values, got {type(data).__name__}")
    if _depth(data) > MAX_DEPTH:
        raise ScenarioError(f"scenario is nested deeper than {MAX_DEPTH} levels")
    _refuse_unreadable_numbers(data)
    version = data.get("schema_version", SCHEMA_VERSION)
    if type(version) is not int or version != SCHEMA_VERSION:  # True == 1 and 1.0 == 1: not versions
        raise ScenarioError(f"schema_version: {_brief(version)} is not supported; this aisize reads "
                            f"version {SCHEMA_VERSION}")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        lines = [_describe(e) for e in exc.errors(include_url=False)]
        raise ScenarioError("invalid scenario:\n  " + "\n  ".join(lines)) from None
    _refuse_unreadable_numbers(scenario.model_dump())  # text such as "5e-324" became a float
    return scenario


def loads(text: str, *, fmt: str = "yaml", read_model_files: bool = False) -> Scenario:
    """Parse scenario text; ``fmt`` is "yaml" or "json" (YAML also reads JSON); ``read_model_files`` as
    in :func:`from_dict`."""
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise ScenarioError(f"scenario text is larger than {MAX_FILE_BYTES} bytes")
    try:
        data = _json(text) if fmt == "json" else _safe_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ScenarioError(f"scenario is not valid {fmt.upper()}: {first}") from None
    return from_dict(data, read_model_files=read_model_files)


def _json(text: str):
    """``json.loads``, refusing a key given twice in one object and keeping long integers unconverted."""

    def unique(pairs):
        keys = [k for k, _ in pairs]
        for key in keys:
            if keys.count(key) > 1:
                lines = [text.count("\n", 0, m.start()) + 1
                         for m in re.finditer(rf'"{re.escape(json.dumps(key)[1:-1])}"\s*:', text)]
                where = f" (lines {', '.join(map(str, lines))})" if lines else ""
                raise ScenarioError(f"key {_key(key)} is given twice in one object{where}; give each key once")
        return dict(pairs)

    return json.loads(text, object_pairs_hook=unique,
                      parse_int=lambda t: int(t) if len(t) <= MAX_NUMBER_CHARS else _LongNumber(t))


def _check_nodes(node, path: tuple, seen: set) -> None:
    """Refuse a mapping key given twice and an integer too long to convert, naming path and line."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key is not None and key_node.tag != _MERGE_TAG:
                if key in first_line:
                    raise ScenarioError(f"{_path_text(path + (key,))}: key {_key(key)} is given twice "
                                        f"(lines {first_line[key]} and {line}); give each key once")
                first_line[key] = line
            _check_nodes(value_node, path + ((key if key is not None else "?"),), seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            _check_nodes(child, path + (index,), seen)
    elif node.tag == _INT_TAG and len(node.value) > MAX_NUMBER_CHARS:
        digits = sum(c.isdigit() for c in node.value)
        raise ScenarioError(f"{_path_text(path)} (line {node.start_mark.line + 1}): an integer of {digits} "
                            f"digits is not a value any field allows (at most {MAX_NUMBER_CHARS} characters)")


def _expanded_size(node, depth: int, memo: dict) -> int:
    """Values ``node`` stands for once its aliases are expanded (shared nodes counted each time)."""
    if depth > MAX_DEPTH:
        raise ScenarioError(f"scenario is nested deeper than {MAX_DEPTH} levels")
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = MAX_NODES + 1  # an alias to an enclosing node (a cycle) counts as too large
    if isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        children = node.value if isinstance(node, yaml.SequenceNode) else []
    size = 1
    for child in children:
        size += _expanded_size(child, depth + 1, memo)
        if size > MAX_NODES:
            break
    memo[id(node)] = size
    return size


def _safe_yaml(text: str):
    """``yaml.safe_load``, but the node graph is measured before it is built into Python objects."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, 0, {}) > MAX_NODES:
            raise ScenarioError(f"scenario expands to more than {MAX_NODES} values (YAML aliases); "
                                "write the values out instead")
        _check_nodes(node, (), set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load(path) -> Scenario:
    """Read a scenario file (.yaml, .yml or .json); it may name files on disk (a model's config.json, a serving
    calibration, a load profile's CSV), a relative path from the scenario file's folder where the file is
    there, else from the working directory; each is read as a regular file under a byte cap and embedded."""
    path = Path(path)
    try:
        text = checks.read_file("scenario", path, MAX_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot be read ({exc})") from None
    except ValueError as exc:  # not a regular file, or larger than a scenario
        raise ScenarioError(str(exc)) from None
    token = SCENARIO_FOLDER.set(path.resolve().parent)
    try:
        return loads(text, fmt="json" if path.suffix.lower() == ".json" else "yaml", read_model_files=True)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    finally:
        SCENARIO_FOLDER.reset(token)


def to_dict(scenario: Scenario) -> dict:
    """A plain, JSON-compatible dict of the scenario (defaults included)."""
    return scenario.model_dump(mode="json")


def dumps(scenario: Scenario, *, fmt: str = "yaml") -> str:
    """Scenario as YAML or JSON text that :func:`loads` reads back to an equal scenario."""
    data = to_dict(scenario)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    # libyaml's emitter where PyYAML has it (the same text, ten times faster: the app saves on every change)
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=True)
