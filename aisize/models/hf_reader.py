"""Checked reads of a Hugging Face ``config.json``: the file itself (local only, size-capped) and
:class:`HfConfig`, whose every failed read names the key, the value and the config.

The family readers (:mod:`aisize.models.hf_families`) build on this; :mod:`aisize.models.hf_config`
turns their fields into a record.
"""

from __future__ import annotations

import json
from numbers import Integral
from pathlib import Path

from aisize import checks

__all__ = ["HfConfig", "MAX_CONFIG_BYTES", "MAX_INDEX_BYTES", "parse_config", "read_config"]

MAX_CONFIG_BYTES = 5_000_000  # a config.json is a few kB; tokenizer or weight files are not configs
MAX_CONFIG_DEPTH = 20  # a config.json nests 3 or 4 levels (text_config, rope_scaling, quantization_config)
MAX_INDEX_BYTES = 64_000_000  # a safetensors index lists every tensor: a few MB for the largest models
MAX_INT_DIGITS = 40  # every integer of a config (sizes, token ids) has fewer digits
_REQUIRED = object()


class HfConfig:
    """A config dict with checked reads: every error names the key, the value and the config."""

    def __init__(self, data: dict, source: str):
        self.data, self.source = data, source
        self.model_type = data.get("model_type")

    def _where(self) -> str:
        return f"(model_type {self.model_type!r}, {self.source})"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, default=_REQUIRED, *, low: int = 1) -> int | None:
        """A whole number >= ``low``; ``default`` when the key is absent (None: keep absent)."""
        value = self.data.get(key)
        if value is None:
            if default is _REQUIRED:
                raise ValueError(f"config key {key!r} is missing and is required {self._where()}")
            value = default
            if value is None:
                return None
        ok = isinstance(value, Integral) and not isinstance(value, bool)
        ok = ok or (isinstance(value, float) and value.is_integer())
        if not ok or value < low:
            raise ValueError(f"config key {key!r}={value!r} is not allowed: must be a whole number >= {low} "
                             f"{self._where()}")
        return int(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"config key {key!r}={value!r} is not allowed: must be true or false {self._where()}")
        return value

    def int_list(self, key: str, default: list | None) -> list[int] | None:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, Integral) for v in value):
            raise ValueError(f"config key {key!r}={value!r} is not allowed: must be a list of whole numbers "
                             f"{self._where()}")
        return [int(v) for v in value]

    def str_list(self, key: str, length: int) -> list[str] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or len(value) != length or not all(isinstance(v, str) for v in value):
            raise ValueError(f"config key {key!r} is not allowed: must list one attention type per layer "
                             f"({length} names) {self._where()}")
        return value

    def fail(self, message: str):
        raise ValueError(f"{message} {self._where()}")


def read_config(config) -> tuple[dict, str]:
    """(config dict, where it came from) from a dict, a config.json path or a folder holding one.

    A path is read only if it is a regular file (never a device such as ``/dev/zero`` or a FIFO,
    which would never end or never answer), and at most :data:`MAX_CONFIG_BYTES` of it.
    """
    if isinstance(config, dict):
        return config, "config dict"
    if not isinstance(config, (str, Path)):
        raise ValueError(f"config={config!r} is not allowed: give a dict, a config.json path or a folder")
    path = Path(config).expanduser()
    if path.is_dir():
        path = path / "config.json"
    try:
        data = parse_config(checks.read_file("config", path, MAX_CONFIG_BYTES).decode("utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"config={str(config)!r} cannot be read as a config.json ({exc}); aisize reads "
                         "local files only: download config.json from the model's page first") from None
    return data, str(path)


class _LongInt:
    """An integer too long to be a config value, kept unconverted so that its key can be named."""

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))


def _refuse_long_ints(value, path: str, source: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_long_ints(item, f"{path}.{key}" if path else str(key), source)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_long_ints(item, f"{path}[{index}]", source)
    elif isinstance(value, _LongInt):
        raise ValueError(f"config key {path[:80]!r}: an integer of {value.digits} digits is not a config value "
                         f"(at most {MAX_INT_DIGITS} digits) ({source})")


def _depth(value, level: int = 1) -> int:
    if level > MAX_CONFIG_DEPTH or not isinstance(value, (dict, list)):
        return level
    items = value.values() if isinstance(value, dict) else value
    return max((_depth(v, level + 1) for v in items), default=level)


def parse_config(text: str, source: str) -> dict:
    """A config.json's text as a dict; ValueError naming ``source`` for anything a config.json is not.

    Refused: invalid JSON (with line and column), NaN or Infinity, nesting deeper than
    :data:`MAX_CONFIG_DEPTH`, an integer longer than :data:`MAX_INT_DIGITS` (its key named), or
    anything but a JSON object.
    """
    def no_constant(name: str):
        raise ValueError(f"{source}: {name} is not a JSON number")

    def integer(digits: str):
        return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else _LongInt(digits)

    try:
        data = json.loads(text, parse_constant=no_constant, parse_int=integer)
        deep = _depth(data) > MAX_CONFIG_DEPTH
    except json.JSONDecodeError as error:
        raise ValueError(f"{source}: not JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    except RecursionError:
        deep = True
    if deep:
        raise ValueError(f"{source}: not a config.json (nested too deeply: more than {MAX_CONFIG_DEPTH} levels)")
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a config.json holds a JSON object ({{...}}), not a {type(data).__name__}")
    _refuse_long_ints(data, "", source)
    return data
