"""The scenario: one validated description of what a customer wants to run.

The same structure is read from YAML/JSON files, built by the app's widgets,
passed to reports and turned into a plan. Field names carry their units in the
user's terms (``target_days``, ``read_gb_per_s``); the planner converts them
to base units. Unknown keys are rejected, so a typo never silently falls back
to a default.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aisize import catalog

SCHEMA_VERSION = 1

Name = Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[\w .,:'()/+-]+$")]
Positive = Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)]
Share = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=1_000_000)]

TRAIN_PRECISIONS = ("bf16", "fp16", "fp8", "fp32")
WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
OPTIMIZERS = ("adamw", "sgd-momentum", "adam-8bit", "lion", "adafactor")
RECOMPUTE = ("none", "selective", "full")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, data):
        # pydantic reads true as 1.0 for a float field; in a file that is a typo, not a number
        if isinstance(data, dict):
            for key, value in data.items():
                field = cls.model_fields.get(key) if isinstance(key, str) else None
                if isinstance(value, bool) and field is not None and field.annotation is not bool:
                    raise ValueError(f"{key}={value!r} is not allowed: must be a number or text, not true/false")
        return data


def _in_table(table: catalog.Table, field: str, value: str | None) -> str | None:
    if value is not None and value not in table:
        raise ValueError(f"{field} {value!r} is not in the catalog; allowed: {', '.join(table.ids())}")
    return value


class Layout(_Strict):
    """A parallel layout fixed by the user instead of searched ("auto")."""

    tensor_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    pipeline_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    expert_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    zero_stage: Literal[0, 1, 2, 3] = 1
    micro_batch: Annotated[int, Field(ge=1, le=65_536)] = 1
    recompute: Literal[RECOMPUTE] = "selective"  # type: ignore[valid-type]


class Training(_Strict):
    """A pre-training or fine-tuning job.

    LLMs give ``tokens_billion``; vision and other models give ``dataset`` and
    ``epochs``. Give either ``target_days`` (GPUs are derived) or ``gpus``.
    """

    kind: Literal["training"] = "training"
    name: Name
    team: Name = "default"
    model: str
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: Annotated[int, Field(ge=1, le=4096)] = 16  # LoRA/QLoRA only; QLoRA's paper uses 64
    precision: Literal[TRAIN_PRECISIONS] = "bf16"  # type: ignore[valid-type]
    optimizer: Literal[OPTIMIZERS] = "adamw"  # type: ignore[valid-type]
    tokens_billion: Annotated[float, Field(ge=1e-6, le=1e6)] | None = None  # 1,000 to 10^15 tokens
    dataset: str | None = None
    epochs: Annotated[float, Field(ge=1e-3, le=1e6)] | None = None
    seq_len: Count | None = None
    global_batch: Count | None = None
    target_days: Annotated[float, Field(ge=0.01, le=3650)] | None = None  # 15 minutes to 10 years
    gpus: Count | None = None
    layout: Layout | Literal["auto"] = "auto"
    samples_per_s_per_gpu: Annotated[float, Field(ge=1e-3, le=1e7)] | None = None  # measured: overrides FLOPs
    checkpoint: bool = True

    _model = field_validator("model")(lambda v: _in_model_tables(v))
    _dataset = field_validator("dataset")(lambda v: _in_table(catalog.datasets, "dataset", v))

    @model_validator(mode="after")
    def _amount_and_size(self):
        if self.tokens_billion is None and (self.dataset is None or self.epochs is None):
            raise ValueError("give tokens_billion, or dataset and epochs")
        if (self.target_days is None) == (self.gpus is None):
            raise ValueError("give exactly one of target_days and gpus")
        return self


class Inference(_Strict):
    """An inference service: a model answering requests at a rate, with latency targets."""

    kind: Literal["inference"] = "inference"
    name: Name
    team: Name = "default"
    model: str
    weight_precision: Literal[WEIGHT_PRECISIONS] = "bf16"  # type: ignore[valid-type]
    kv_precision: Literal["fp32", "bf16", "fp16", "fp8"] = "bf16"
    requests_per_s: Annotated[float, Field(ge=1e-6, le=1e7)]
    prompt_tokens: Count = 1024
    output_tokens: Count = 256
    ttft_target_ms: Annotated[float, Field(ge=1, le=600_000)] = 2000.0
    tpot_target_ms: Annotated[float, Field(ge=0.1, le=60_000)] = 50.0
    tensor_parallel: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] = "auto"
    model_loads_per_hour: Annotated[float, Field(ge=0, le=3600)] = 1.0  # 0 (never), or >= 0.001

    _model = field_validator("model")(lambda v: _in_table(catalog.transformers, "model", v))

    @field_validator("model_loads_per_hour")
    @classmethod
    def _loads(cls, v: float) -> float:
        if 0 < v < 1e-3:  # one load in 1,000 hours; below that the reload interval is meaningless
            raise ValueError(f"model_loads_per_hour={v!r} is not allowed: use 0 (never) or 0.001 to 3600")
        return v


class DataPrep(_Strict):
    """A data-preparation or development workload described by its IO pattern."""

    kind: Literal["data-prep"] = "data-prep"
    name: Name
    team: Name = "default"
    read_gb_per_s: Annotated[float, Field(ge=0, le=1e6)]
    write_gb_per_s: Annotated[float, Field(ge=0, le=1e6)]
    io_size_kib: Annotated[float, Field(ge=0.5, le=1024 * 1024)] = 128.0  # a 512-byte sector to 1 GiB
    metadata_ops_per_s: Annotated[float, Field(ge=0, le=1e9)] = 0.0
    capacity_tb: Annotated[float, Field(ge=0, le=1e6)] = 0.0


Workload = Annotated[Union[Training, Inference, DataPrep], Field(discriminator="kind")]


class Hardware(_Strict):
    """Hardware choices, as catalog ids, plus the fabric's shape."""

    server: str = "dgx-h100"
    scale_out_link: str | None = None  # default: the server's own compute NIC
    storage: str = "superpod-h100-better"
    switch_radix: Annotated[int, Field(ge=4, le=1024, multiple_of=2)] = 64
    oversubscription: Annotated[float, Field(ge=1, le=16)] = 1.0

    _server = field_validator("server")(lambda v: _in_table(catalog.servers, "server", v))
    _link = field_validator("scale_out_link")(lambda v: _in_table(catalog.links, "scale_out_link", v))
    _storage = field_validator("storage")(lambda v: _in_table(catalog.storage, "storage", v))

    @property
    def gpu(self) -> str:
        return catalog.servers[self.server].accelerator


class Policies(_Strict):
    """Assumptions. Each default is named and shown to the user as an assumption."""

    mfu: Annotated[float, Field(ge=0.01, le=0.9)] = 0.40  # DESIGN.md: large runs land at 0.35-0.50
    target_gpu_utilisation: Annotated[float, Field(ge=0.05, le=1)] = 0.90  # MLPerf Storage's pass threshold
    checkpoint_interval_minutes: Annotated[float, Field(ge=0.1, le=100_000)] | Literal["auto"] = "auto"
    checkpoint_retention: Annotated[int, Field(ge=1, le=1000)] = 3
    checkpoint_bytes_per_param: Annotated[float, Field(ge=0.1, le=64)] = 14.0
    node_mtbf_hours: Annotated[float, Field(ge=1, le=1e7)] = 5000.0
    restart_minutes: Annotated[float, Field(ge=0, le=10_000)] = 10.0
    memory_headroom: Annotated[float, Field(ge=0, le=0.9)] = 0.10
    host_ram_ratio: Annotated[float, Field(ge=0, le=16)] = 1.0
    storage_usable_ratio: Annotated[float, Field(ge=0.05, le=1)] = 0.8  # usable / raw after data protection


class Scenario(_Strict):
    """A named set of workloads on chosen hardware under stated policies."""

    schema_version: Literal[1] = SCHEMA_VERSION
    name: Name
    description: Annotated[str, Field(max_length=4000)] = ""
    hardware: Hardware = Hardware()
    policies: Policies = Policies()
    workloads: Annotated[list[Workload], Field(min_length=1, max_length=200)]

    @model_validator(mode="after")
    def _unique_names(self):
        names = [w.name for w in self.workloads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique; repeated: {dupes}")
        return self


def _in_model_tables(value: str) -> str:
    if value not in catalog.transformers and value not in catalog.other_models:
        known = catalog.transformers.ids() + catalog.other_models.ids()
        raise ValueError(f"model {value!r} is not in the catalog; allowed: {', '.join(known)}")
    return value
