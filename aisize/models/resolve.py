"""One entry for every way a model is named: a catalog id, a record, a config.json, inline fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from functools import lru_cache

from aisize import catalog
from aisize.catalog.records import Transformer
from aisize.models.counts import transformer_params, validate

__all__ = ["resolve", "params", "from_fields", "INLINE_DEFAULTS"]

# What an inline model may leave out: a dense decoder with RoPE, RMSNorm and SwiGLU
# (the Llama layout), and the bookkeeping fields a catalog row carries.
INLINE_DEFAULTS = dict(family="custom", ffn_type="swiglu", tied_embeddings=False, position="rope",
                       norm="rmsnorm", bias=False, experts=1, experts_per_token=1, shared_experts=0,
                       moe_ffn_hidden=None, dense_layers=0, q_lora_rank=None, kv_lora_rank=None,
                       qk_rope_head_dim=None, qk_nope_head_dim=None, v_head_dim=None, encoder_only=False,
                       published_active_params=None, note=None)
_REQUIRED = ("id", "layers", "hidden", "heads", "vocab", "ffn_hidden", "max_seq", "source")
_FIELDS = {f.name for f in dataclasses.fields(Transformer)}


def from_fields(fields: Mapping) -> Transformer:
    """A Transformer record from inline fields (a scenario's ``model:`` mapping).

    Required: id, layers, hidden, heads, vocab, ffn_hidden, max_seq and source; kv_heads
    defaults to heads, head_dim to hidden / heads, name to id, attention to mha/gqa/mqa by
    the head counts, the rest to :data:`INLINE_DEFAULTS`. ``published_params`` defaults to
    the count from the architecture.
    """
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise ValueError(f"model field(s) {unknown} are not allowed; allowed: {sorted(_FIELDS)}")
    missing = [k for k in _REQUIRED if fields.get(k) in (None, "")]
    if missing:
        raise ValueError(f"model fields {missing} are missing (required: {', '.join(_REQUIRED)})")
    f = {**INLINE_DEFAULTS, **{k: v for k, v in fields.items() if v is not None}}
    f.setdefault("name", f["id"])
    f.setdefault("kv_heads", f["heads"])
    if f.get("head_dim") is None:
        if not isinstance(f["heads"], int) or f["heads"] < 1 or f["hidden"] % f["heads"]:
            raise ValueError(f"head_dim is missing and hidden={f['hidden']!r} is not a multiple of "
                             f"heads={f['heads']!r}: give head_dim")
        f["head_dim"] = f["hidden"] // f["heads"]
    if f.get("attention") is None:
        f["attention"] = "mha" if f["kv_heads"] == f["heads"] else ("mqa" if f["kv_heads"] == 1 else "gqa")
    f.setdefault("published_params", 0.0)
    record = Transformer(**f)
    validate(record)
    if not fields.get("published_params"):
        count = transformer_params(record)
        record = dataclasses.replace(record, published_params=float(count.total),
                                     published_active_params=float(count.active) if record.experts > 1 else None)
    return record


@lru_cache(maxsize=128)
def _from_json(kind: str, text: str) -> Transformer:
    data = json.loads(text)
    if kind == "hf_config":
        from aisize.models.hf_config import from_hf_config

        # a scenario embeds the file's content in "config" and keeps the path as its source
        config = data["config"] if data.get("config") is not None else data["hf_config"]  # {} is no path
        source = data.get("source") or (data["hf_config"] if isinstance(data["hf_config"], str) else None)
        return from_hf_config(config, id=data.get("id"), source=source)
    return from_fields(data)


def resolve(model) -> Transformer:
    """The :class:`~aisize.catalog.Transformer` record a model names.

    Parameters
    ----------
    model : a catalog id (``"llama-3-70b"``); a Transformer record (returned as is); a
        mapping ``{"hf_config": <config dict or path>, "id": ..., "config": <the parsed
        file, which wins over the path>}``; a
        mapping of inline record fields (see :func:`from_fields`); or a pydantic object
        whose ``model_dump()`` is one of these mappings (a scenario's ``model:``).

    Raises ValueError naming the id, the missing field or the bad config key.
    """
    if isinstance(model, Transformer):
        return model
    if isinstance(model, str):
        if model not in catalog.transformers:
            raise ValueError(f"model={model[:60]!r} is not in the catalog; known: "
                             f"{', '.join(catalog.transformers.ids())}")
        return catalog.transformers[model]
    if hasattr(model, "model_dump"):
        model = model.model_dump(exclude_none=True)
    if not isinstance(model, Mapping):
        raise ValueError(f"model={model!r} is not allowed: give a catalog id, a Transformer record, "
                         "{hf_config: path-or-dict} or the architecture fields")
    kind = "hf_config" if "hf_config" in model else "fields"
    try:
        text = json.dumps(dict(model), sort_keys=True)
    except (TypeError, ValueError):
        raise ValueError(f"model={model!r} is not allowed: values must be numbers, text or lists") from None
    return _from_json(kind, text)


def params(model):
    """:func:`~aisize.models.counts.transformer_params` of any model :func:`resolve` accepts [count]."""
    return transformer_params(resolve(model))
