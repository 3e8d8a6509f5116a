"""Scenario fields of prompt reuse and KV-cache tiers (aisize.serving.prefix, aisize.serving.tiers): an
inference service's ``prefix`` (shared prefix, sessions, RAG chunks) and ``kv_tiers`` (host DRAM, local
NVMe, shared storage below HBM)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from aisize import catalog
from aisize.scenario.base import _in_table, _short, _Strict

__all__ = ["KVTiers", "PrefixReuse"]


class PrefixReuse(_Strict):
    """How a service's prompts repeat (aisize.serving.prefix.Reuse): a shared prefix, sessions, RAG chunks."""

    shared_tokens: Annotated[int, Field(ge=0, le=10**8)] = 0  # system prompt and tools every request starts with
    turns: Annotated[int, Field(ge=1, le=10_000)] = 1  # requests per session; each re-sends the history
    think_time_s: Annotated[float, Field(ge=0, le=30 * 86400, allow_inf_nan=False)] = 0.0  # mean, between turns
    rag_chunks: Annotated[int, Field(ge=0, le=10_000)] = 0  # retrieved chunks per request
    rag_chunk_tokens: Annotated[int, Field(ge=0, le=10**7)] = 0
    rag_corpus_chunks: Annotated[int, Field(ge=0, le=10**7)] = 0
    rag_zipf: Annotated[float, Field(ge=0, le=5, allow_inf_nan=False)] = 1.0  # popularity exponent (0: uniform)

    @model_validator(mode="after")
    def _consistent(self):
        self.reuse()  # the serving model's own checks (chunks need a size and a corpus)
        return self

    def reuse(self):
        from aisize.serving.prefix import Reuse

        return Reuse(**self.model_dump())


class KVTiers(_Strict):
    """KV-cache tiers below HBM and the share of reusable prompts they are sized to find.

    ``host_dram_gb_per_server`` "auto" sizes host DRAM for the target within the RAM the server has left;
    the NVMe and shared-storage tiers are sized for the target (the plan says what that takes).
    """

    target_hit_rate: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 0.9
    host_dram: bool = True  # LMCache / vLLM CPU offload / SGLang HiCache host pool / Dynamo KVBM G2
    host_dram_gb_per_server: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] | Literal["auto"] = "auto"
    local_nvme: bool = False  # LMCache local disk / KVBM G3
    nvme_drive: str = "nvme-gen5"  # a local-nvme row of data/storage.csv
    shared_storage: bool = False  # LMCache remote / HiCache storage backend / KVBM G4: the scenario's storage

    @field_validator("nvme_drive")
    @classmethod
    def _drive(cls, value):
        _in_table(catalog.storage, "nvme_drive", value)
        if catalog.storage[value].kind != "local-nvme":
            raise ValueError(f"nvme_drive {_short(value)} is not a local-nvme row of the storage catalog")
        return value

    @model_validator(mode="after")
    def _some_tier(self):
        if not (self.host_dram or self.local_nvme or self.shared_storage):
            raise ValueError("kv_tiers: enable at least one of host_dram, local_nvme and shared_storage "
                             "(or leave kv_tiers out: HBM only)")
        return self
