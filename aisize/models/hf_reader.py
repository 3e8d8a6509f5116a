"""Checked reads of a Hugging Face ``config.json``: the file itself (local only, size-capped) and
:class:`HfConfig`, whose every failed read names the key, the value and the config.

The family readers (:mod:`aisize.models.hf_families`) build on this; :mod:`aisize.models.hf_config`
turns their fields into a record.
"""

from __future__ import annotations

import json
from numbers import Integral
from pathlib import Path

__all__ = ["HfConfig", "MAX_CONFIG_BYTES", "read_config"]

MAX_CONFIG_BYTES = 5_000_000  # a config.json is a few kB; tokenizer or weight files are not configs
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
    """(config dict, where it came from) from a dict, a config.json path or a folder holding one."""
    if isinstance(config, dict):
        return config, "config dict"
    if not isinstance(config, (str, Path)):
        raise ValueError(f"config={config!r} is not allowed: give a dict, a config.json path or a folder")
    path = Path(config).expanduser()
    if path.is_dir():
        path = path / "config.json"
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ValueError(f"config={str(path)!r} is larger than {MAX_CONFIG_BYTES} bytes: not a config.json")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"config={str(config)!r} cannot be read as a config.json ({exc}); aisize reads "
                         "local files only: download config.json from the model's page first") from None
    if not isinstance(data, dict):
        raise ValueError(f"config={str(path)!r} is not allowed: a config.json holds a JSON object")
    return data, str(path)
