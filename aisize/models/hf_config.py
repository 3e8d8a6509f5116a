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
from aisize.models.hf_families import BUILDERS
from aisize.models.hf_reader import MAX_INDEX_BYTES, HfConfig, parse_config, read_config

__all__ = ["HfConfig", "from_hf_config", "parse_config", "read_config", "safetensors_total_bytes",
           "supported_model_types"]


def supported_model_types() -> tuple[str, ...]:
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
