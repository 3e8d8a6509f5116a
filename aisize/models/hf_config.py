"""Hugging Face ``config.json`` -> :class:`~aisize.catalog.Transformer`, offline.

The config arrives as a dict, a ``config.json`` path or a folder holding one; nothing
is ever fetched from the Hub. Keys that size a weight matrix (hidden size, layers, heads,
vocabulary, MLP and expert sizes, expert counts, experts per token) are required: a
missing one is an error naming it, never a guess. Every other key takes the default of
the family's configuration class in Hugging Face ``transformers``
(``src/transformers/models/<family>/configuration_<family>.py``; defaults read at commit
008e574391258935f3ecc3035c882e73bbcac419), cited beside each family in
:mod:`aisize.models.hf_families`. Multimodal configs (Llama 4, Gemma 3) give the
language model in ``text_config``; their vision encoders are not counted.
"""

from __future__ import annotations

import dataclasses
import json
from numbers import Integral
from pathlib import Path

from aisize import checks
from aisize.catalog.records import Transformer
from aisize.models.counts import transformer_params, validate

__all__ = ["HfConfig", "from_hf_config", "parse_config", "read_config", "safetensors_total_bytes", "supported_model_types"]

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


def supported_model_types() -> tuple[str, ...]:
    from aisize.models.hf_families import BUILDERS

    return tuple(sorted(BUILDERS))


def _unwrap(data: dict) -> tuple[dict, str | None]:
    """The language model's config of a multimodal checkpoint (``text_config``), and the outer type."""
    text = data.get("text_config")
    if not isinstance(text, dict):
        return data, None
    outer = data.get("model_type")
    inner = dict(text)
    inner.setdefault("model_type", f"{outer}_text")
    if "tie_word_embeddings" not in inner and "tie_word_embeddings" in data:
        inner["tie_word_embeddings"] = data["tie_word_embeddings"]
    return inner, outer


def from_hf_config(config, *, id: str | None = None, source: str | None = None) -> Transformer:
    """A :class:`~aisize.catalog.Transformer` record from a Hugging Face ``config.json``.

    Parameters
    ----------
    config : the parsed config dict, a ``config.json`` path or a folder holding one (read
        offline; never the Hub).
    id : record id; defaults to ``_name_or_path``, the folder's name or the model_type.
    source : where the config came from, for the record's ``source`` (default: the path).

    Returns
    -------
    Transformer whose ``published_params`` (and ``published_active_params`` for MoE) is
    the count from the architecture: a config states no parameter count.

    Raises ValueError for an unknown ``model_type`` (listing the supported ones), a missing
    required key, or a value out of range (naming the key).

    References
    ----------
    Hugging Face ``transformers`` configuration and modeling classes of each family; see
    :mod:`aisize.models.hf_families`.
    """
    from aisize.models.hf_families import BUILDERS

    data, where = read_config(config)
    text, outer = _unwrap(data)
    model_type = text.get("model_type")
    if model_type not in BUILDERS:
        raise ValueError(f"model_type={model_type!r} is not supported; supported: "
                         f"{', '.join(supported_model_types())}")
    fields = BUILDERS[model_type](HfConfig(text, where))
    origin = source or (where if where != "config dict" else None)
    named = None if origin is None else (Path(origin).parent.name if Path(origin).name == "config.json"
                                         else Path(origin).stem)
    name = id or data.get("_name_or_path") or named or model_type
    note = "built from config.json by aisize.models.from_hf_config; published_params is the architecture count"
    if outer is not None:
        note += f"; language model of the {outer!r} checkpoint (its vision encoder is not counted)"
    draft = Transformer(id=str(name), name=str(name), family=model_type, published_params=0.0,
                        published_active_params=None, source=f"Hugging Face config.json ({source or where})",
                        note=note, **fields)
    validate(draft)
    count = transformer_params(draft)
    return dataclasses.replace(draft, published_params=float(count.total),
                               published_active_params=float(count.active) if draft.experts > 1 else None)


def safetensors_total_bytes(path) -> int | None:
    """``metadata.total_size`` of the ``model.safetensors.index.json`` beside a config, if there is one [B].

    Parameters
    ----------
    path : a config.json path, or the folder holding it and the index.

    References
    ----------
    Hugging Face ``modeling_utils`` sharded checkpoints: the index's ``metadata.total_size``
    is the bytes of all tensors at their stored dtypes.
    """
    folder = Path(path).expanduser()
    folder = folder if folder.is_dir() else folder.parent
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return None
    try:
        total = json.loads(checks.read_file("index", index, MAX_INDEX_BYTES))["metadata"]["total_size"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, KeyError, TypeError) as exc:
        raise ValueError(f"{index} cannot be read: no metadata.total_size ({exc})") from None
    if not isinstance(total, Integral) or isinstance(total, bool) or total <= 0:
        raise ValueError(f"{index}: metadata.total_size={total!r} is not a positive whole number of bytes")
    return int(total)
