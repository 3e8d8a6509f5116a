"""The scenario: one validated description of what a customer wants to run.

The same structure is read from YAML/JSON files, built by the app's widgets,
passed to reports and turned into a plan. Field names carry their units in the
user's terms (``target_days``, ``read_gb_per_s``); the planner converts them
to base units. Unknown keys are rejected, so a typo never silently falls back
to a default.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field, field_validator, model_validator

from aisize import catalog
from aisize.compute import DEFAULT_MFU
# the base types and the model references are re-exported: other modules import them from here
from aisize.scenario.base import (  # noqa: F401
    Count, Name, Positive, Share, _Hashable, _in_ids, _in_table, _short, _Strict)
from aisize.scenario.model_refs import HF_CONFIG_FILE, CatalogRow, HfConfigModel, InlineModel, ModelRef  # noqa: F401

SCHEMA_VERSION = 1

TRAIN_PRECISIONS = ("bf16", "fp16", "fp8", "fp32", "mxfp8", "nvfp4")
WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
OPTIMIZERS = ("adamw", "sgd-momentum", "adam-8bit", "lion", "adafactor")
RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("1f1b", "interleaved-1f1b", "zero-bubble")  # aisize.training.schedules


class Layout(_Strict):
    """A parallel layout fixed by the user instead of searched ("auto")."""

    tensor_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    pipeline_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    expert_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    zero_stage: Literal[0, 1, 2, 3] = 1
    micro_batch: Annotated[int, Field(ge=1, le=65_536)] = 1
    recompute: Literal[RECOMPUTE] = "selective"  # type: ignore[valid-type]
    context_parallel: Count = 1
    schedule: Literal[SCHEDULES] = "1f1b"  # type: ignore[valid-type]
    virtual_stages: Annotated[int, Field(ge=1, le=64)] = 1  # model chunks per stage (interleaved 1F1B)

    @model_validator(mode="after")
    def _schedule(self):
        if (self.schedule == "interleaved-1f1b") != (self.virtual_stages > 1):
            raise ValueError(f"virtual_stages={self.virtual_stages} is not allowed with schedule "
                             f"{self.schedule!r}: interleaved-1f1b needs 2 or more, the others 1")
        return self


class When(_Strict):
    """When a workload runs: always (a service), in one named phase, and/or within hours of the day.

    Workloads that never run at the same time may share servers (aisize.plan.timeline).
    ``hours`` is [start, end) in hours of the day; an end before the start wraps past midnight
    ([22, 6] is a nightly window).
    """

    phase: Name = "always"  # "always", or the name of one of the scenario's phases
    hours: tuple[Annotated[float, Field(ge=0, le=24)], Annotated[float, Field(ge=0, le=24)]] | None = None

    @field_validator("hours", mode="before")
    @classmethod
    def _hours_are_numbers(cls, value):
        if isinstance(value, (list, tuple)) and any(isinstance(h, bool) for h in value):
            raise ValueError(f"hours={list(value)!r} is not allowed: two hours of the day, not true/false")
        return value

    @model_validator(mode="after")
    def _window(self):
        if self.hours is not None and self.hours[0] % 24 == self.hours[1] % 24:
            raise ValueError(f"hours={list(self.hours)} is not allowed: start and end must differ "
                             "(leave hours out for all day)")
        return self


class Phase(_Strict):
    """One step of the scenario's timeline (phases run one after another, in the order listed)."""

    name: Name
    days: Annotated[float, Field(gt=0, le=36500)] | None = None  # default: its longest training job


class Pool(_Strict):
    """A group of identical servers workloads are placed on (aisize.plan.placement)."""

    name: Name
    server: str
    servers: Count | Literal["auto"] = "auto"  # a fixed count, or "auto": as many as the packing needs
    scale_out_link: str | None = None  # default: the server's own compute NIC
    max_servers: Count | None = None  # site limit on this pool's servers
    max_racks: Count | None = None  # rack limit (racks hold what rack units and the power budget allow)

    # the server may be a catalog id or one of hardware.servers (checked by Scenario)
    _link = field_validator("scale_out_link")(lambda v: _in_table(catalog.links, "scale_out_link", v))


class JobStream(_Strict):
    """A stream of training or fine-tuning jobs sharing a partition of GPUs (aisize.queueing.jobs).

    Give the rate (``jobs_per_day`` or ``jobs_per_week``), the GPUs and mean hours of one job and
    how job lengths vary, then exactly one of: a wait target (``target_wait_hours`` on the mean
    or p95 wait), a utilisation target, or the partition's ``gpus`` ("rest": whatever the pool
    has left after the other workloads are placed).
    """

    kind: Literal["job-stream"] = "job-stream"
    name: Name
    team: Name = "default"
    jobs_per_day: Positive | None = None
    jobs_per_week: Positive | None = None
    gpus_per_job: Count
    hours_per_job: Annotated[float, Field(gt=0, le=100_000)]
    hours_distribution: Literal["exponential", "lognormal", "deterministic"] = "exponential"
    hours_cv: Annotated[float, Field(gt=0, le=100)] = 1.0  # lognormal only
    target_wait_hours: Annotated[float, Field(gt=0, le=100_000)] | None = None
    wait_statistic: Literal["mean", "p95"] = "mean"
    target_utilisation: Share | None = None
    gpus: Count | Literal["rest"] | None = None
    pool: Name | None = None
    when: When = When()

    @model_validator(mode="after")
    def _rate_and_target(self):
        if (self.jobs_per_day is None) == (self.jobs_per_week is None):
            raise ValueError("give exactly one of jobs_per_day and jobs_per_week")
        given = [k for k in ("target_wait_hours", "target_utilisation", "gpus") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of target_wait_hours, target_utilisation and gpus"
                             + (f" (got {', '.join(given)})" if given else ""))
        if self.hours_distribution != "lognormal" and "hours_cv" in self.model_fields_set:
            raise ValueError(f"hours_cv applies to hours_distribution lognormal only; {self.hours_distribution} "
                             "job lengths have a fixed coefficient of variation")
        return self

    @property
    def jobs_per_s(self) -> float:
        per_day = self.jobs_per_day if self.jobs_per_day is not None else self.jobs_per_week / 7.0
        return per_day / 86400.0

    @property
    def job_cv(self) -> float:
        return {"exponential": 1.0, "deterministic": 0.0}.get(self.hours_distribution, self.hours_cv)


class Cost(_Strict):
    """Cost assumptions: amortisation life, power draw, the cloud rate compared with, price overrides.

    ``prices`` overrides any row of ``data/prices.csv`` by id (US dollars in the row's unit).
    """

    # 1 to 15 years: servers are depreciated over 3 to 6 (hyperscalers: 5-6) and none serves past 15; below a year
    # the amortised capital per GPU-hour runs away (1e-9 years gave $5.23 B per GPU-hour)
    life_years: Annotated[float, Field(ge=1, le=15, allow_inf_nan=False)] = 4.0
    average_power_share: Share = 0.8  # average draw / the server's maximum power (assumption)
    cloud_rate: str = "aws-p5-on-demand"  # a cloud price id ($ per GPU-hour); a plan of another GPU uses its own
    prices: dict[Annotated[str, Field(max_length=80)], float] = Field(default_factory=dict, max_length=500)

    @field_validator("prices")
    @classmethod
    def _known_and_not_negative(cls, prices):
        from aisize.cost.prices import check_overrides

        check_overrides(prices)
        return prices

    @field_validator("cloud_rate")
    @classmethod
    def _cloud_rate(cls, value):
        from aisize.cost.prices import check_cloud_rate

        check_cloud_rate(value)
        return value


class Training(_Strict):
    """A pre-training or fine-tuning job.

    LLMs give ``tokens_billion``; vision and other models give ``dataset`` and
    ``epochs``. Give either ``target_days`` (GPUs are derived) or ``gpus``.
    """

    kind: Literal["training"] = "training"
    name: Name
    team: Name = "default"
    model: ModelRef
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: Annotated[int, Field(ge=1, le=4096)] = 16  # LoRA/QLoRA only; QLoRA's paper uses 64
    precision: Literal[TRAIN_PRECISIONS] = "bf16"  # type: ignore[valid-type]
    optimizer: Literal[OPTIMIZERS] = "adamw"  # type: ignore[valid-type]
    tokens_billion: Annotated[float, Field(ge=1e-6, le=1e6, allow_inf_nan=False)] | None = None  # 1,000 to 10^15 tokens
    dataset: str | None = None
    epochs: Annotated[float, Field(ge=1e-3, le=1e6, allow_inf_nan=False)] | None = None
    seq_len: Count | None = None
    global_batch: Count | None = None
    target_days: Annotated[float, Field(ge=0.01, le=3650, allow_inf_nan=False)] | None = None  # 15 minutes to 10 years
    gpus: Count | None = None
    layout: Layout | Literal["auto"] = "auto"
    samples_per_s_per_gpu: Annotated[float, Field(ge=1e-3, le=1e7, allow_inf_nan=False)] | None = None  # measured
    checkpoint: bool = True
    pool: Name | None = None  # a pool name (aisize.plan.placement); None: placed by the planner
    when: When = When()

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
    """An inference service: a model answering requests at a rate (or for users in flight), with latency targets."""

    kind: Literal["inference"] = "inference"
    name: Name
    team: Name = "default"
    model: ModelRef
    weight_precision: Literal[WEIGHT_PRECISIONS] = "bf16"  # type: ignore[valid-type]
    kv_precision: Literal["fp32", "bf16", "fp16", "fp8"] = "bf16"
    requests_per_s: Annotated[float, Field(ge=1e-6, le=1e7, allow_inf_nan=False)] | None = None  # open loop
    concurrency: Annotated[float, Field(ge=1, le=1e8, allow_inf_nan=False)] | None = None  # users in flight, no think time
    prompt_tokens: Count = 1024
    output_tokens: Count = 256
    ttft_target_ms: Annotated[float, Field(ge=1, le=600_000, allow_inf_nan=False)] = 2000.0
    tpot_target_ms: Annotated[float, Field(ge=0.1, le=60_000, allow_inf_nan=False)] = 50.0
    slo_statistic: Literal["mean", "p95", "p99"] = "p95"  # what the TTFT and TPOT targets bound
    tensor_parallel: Annotated[int, Field(ge=1, le=512)] | Literal["auto"] = "auto"  # GPUs per pipeline stage
    pipeline_parallel: Annotated[int, Field(ge=1, le=64)] | Literal["auto"] = "auto"  # stages (may span servers)
    serving: Literal["aggregated", "disaggregated"] = "aggregated"  # disaggregated: prefill and decode pools
    engine: Literal["trtllm", "vllm", "sglang"] = "trtllm"  # scheduler (data/engines.csv)
    length_cv: Annotated[float, Field(ge=0, le=10)] = 0.0  # spread of request lengths (coefficient of variation)
    prompt_cv: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = 0.0  # lognormal prompts (0: fixed)
    output_cv: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = 0.0  # lognormal outputs (reasoning: >= 1)
    speculative_method: Literal["mtp", "eagle3", "draft", "ngram"] | None = None
    speculative_tokens: Annotated[int, Field(ge=1, le=16)] | None = None  # drafted per step (default: the method's)
    prefix: PrefixReuse | None = None  # prompt reuse (sessions, shared prefix, RAG chunks)
    kv_tiers: KVTiers | None = None  # KV-cache tiers below HBM (needs prefix)
    model_loads_per_hour: Annotated[float, Field(ge=0, le=3600, allow_inf_nan=False)] = 1.0  # 0 (never), or >= 0.001
    pool: Name | None = None  # a pool name (aisize.plan.placement); None: placed by the planner
    when: When = When()
    fleet: ServiceFleet | None = None  # the service through the day (aisize.scenario.fleet)

    _model = field_validator("model")(
        lambda v: _in_table(catalog.transformers, "model", v) if isinstance(v, str) else v)

    @model_validator(mode="after")
    def _consistent(self):
        if (self.requests_per_s is None) == (self.concurrency is None):
            raise ValueError("give exactly one of requests_per_s (a request rate) and concurrency (users in flight)")
        if self.requests_per_s is None and getattr(self, "fleet", None) is not None:
            raise ValueError("fleet needs requests_per_s: a day's load profile scales a request rate, not users "
                             "in flight")
        if self.kv_tiers is not None and self.prefix is None:
            raise ValueError("kv_tiers needs prefix: the tiers hold reused prompts; describe them with prefix")
        if self.prefix is not None:
            from aisize.serving.prefix import session_tokens

            try:
                session_tokens(self.prefix.reuse(), self.prompt_tokens, self.output_tokens)
            except ValueError as exc:  # the serving model names its own parameter; the scenario's is prompt_tokens
                raise ValueError(str(exc).replace("input_tokens=", "prompt_tokens=")) from None
        return self

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
    io_size_kib: Annotated[float, Field(ge=0.5, le=1024 * 1024, allow_inf_nan=False)] = 128.0  # 512 B to 1 GiB
    metadata_ops_per_s: Annotated[float, Field(ge=0, le=1e9)] = 0.0
    capacity_tb: Annotated[float, Field(ge=0, le=1e6)] = 0.0


Workload = Annotated[Union[Training, Inference, DataPrep, JobStream], Field(discriminator="kind")]


class Hardware(_Strict):
    """Hardware choices, as catalog ids, plus the fabric's shape."""

    server: str = "dgx-h100"
    scale_out_link: str | None = None  # default: the server's own compute NIC
    # a purchasable system (data/storage.csv, kind building-block) is sized by the unit from the plan's demand;
    # a guidance row (superpod-*) names a performance level: the plan buys the catalog's cheapest purchasable
    # system that meets the demand and shows the guidance beside it for comparison
    storage: str = "superpod-h100-better"
    switch_radix: Annotated[int, Field(ge=4, le=1024, multiple_of=2)] = 64
    oversubscription: Annotated[float, Field(ge=1, le=16)] = 1.0
    fabric: Literal["auto", "single-switch", "fat-tree", "rail-optimized"] = "auto"  # auto: the cheapest
    fabric_growth: Annotated[float, Field(ge=0, le=10)] = 0.25  # spare ports the fabric keeps for growth
    # custom hardware, checked like catalog rows; server/storage may name their ids
    accelerators: Annotated[tuple[CatalogRow, ...], Field(max_length=50)] = ()
    servers: Annotated[tuple[CatalogRow, ...], Field(max_length=50)] = ()
    storage_systems: Annotated[tuple[CatalogRow, ...], Field(max_length=50)] = ()

    _link = field_validator("scale_out_link")(lambda v: _in_table(catalog.links, "scale_out_link", v))

    @model_validator(mode="after")
    def _known_ids(self):
        accs, servers, stores = self.custom_records()
        _in_ids("server", self.server, catalog.servers, servers)
        _in_ids("storage", self.storage, catalog.storage, stores)
        for s in servers.values():
            _in_ids(f"servers[{s.id}].accelerator", s.accelerator, catalog.accelerators, accs)
        return self

    def custom_records(self):
        """(accelerators, servers, storage systems) written in the scenario, as catalog records."""
        return (catalog.accelerators.parse_rows([r.model_dump() for r in self.accelerators], "accelerators"),
                catalog.servers.parse_rows([r.model_dump() for r in self.servers], "servers"),
                catalog.storage.parse_rows([r.model_dump() for r in self.storage_systems], "storage_systems"))

    @property
    def gpu(self) -> str:
        custom = {r.id: r for r in self.servers}
        return custom[self.server].model_dump()["accelerator"] if self.server in custom else \
            catalog.servers[self.server].accelerator


class Policies(_Strict):
    """Assumptions. Each default is named and shown to the user as an assumption."""

    # times what the step-time model does not (adapters, non-transformers); docs/DESIGN.md: large runs land at 0.35-0.50
    mfu: Annotated[float, Field(ge=0.01, le=0.9, allow_inf_nan=False)] = DEFAULT_MFU
    # what times a transformer's training (full or LoRA): the step-time model validated on published runs, or (an
    # explicit override, shown as such) the MFU policy above; QLoRA and other models always use the MFU policy
    training_time: Literal["step-time", "mfu"] = "step-time"
    # MLPerf Storage's pass threshold
    target_gpu_utilisation: Annotated[float, Field(ge=0.05, le=1, allow_inf_nan=False)] = 0.90
    checkpoint_interval_minutes: Annotated[float, Field(ge=0.1, le=100_000, allow_inf_nan=False)] | Literal["auto"] = (
        "auto")
    checkpoint_retention: Annotated[int, Field(ge=1, le=1000)] = 3
    checkpoint_bytes_per_param: Annotated[float, Field(ge=0.1, le=64, allow_inf_nan=False)] = 14.0
    node_mtbf_hours: Annotated[float, Field(ge=1, le=1e7, allow_inf_nan=False)] = 5000.0
    restart_minutes: Annotated[float, Field(ge=0, le=10_000)] = 10.0
    memory_headroom: Annotated[float, Field(ge=0, le=0.9, allow_inf_nan=False)] = 0.10
    host_ram_ratio: Annotated[float, Field(ge=0, le=16)] = 1.0
    # usable / raw after data protection
    storage_usable_ratio: Annotated[float, Field(ge=0.05, le=1, allow_inf_nan=False)] = 0.8
    # share of each storage rating (read, write, IOPS, capacity) left free at the peak demand: flash file systems
    # slow as they fill, and bursts need room (assumption; 0 buys exactly the demand)
    storage_headroom: Annotated[float, Field(ge=0, le=0.9, allow_inf_nan=False)] = 0.2
    # storage units (nodes, enclosures) bought even when the plan asks nothing of the storage; at least one
    # holds the model repository and datasets
    storage_minimum_units: Annotated[int, Field(ge=1, le=100_000)] = 1
    # training interruptions: node_mtbf_hours per server, or a published fleet's rates (data/failure_rates.csv)
    failure_rates: Annotated[str, Field(max_length=80)] = "node-mtbf"
    # the serving model's constants: a file from `aisize calibrate` (aisize.scenario.calibration); None: the default
    serving_calibration: ServingCalibration | None = None

    @field_validator("failure_rates")
    @classmethod
    def _failure_source(cls, value):
        from aisize.fleet.failures import sources

        if value != "node-mtbf" and value not in sources():
            raise ValueError(f"failure_rates {_short(value)} is not allowed: node-mtbf or one of "
                             f"{', '.join(sources())}")
        return value


class Scenario(_Strict):
    """A named set of workloads on chosen hardware under stated policies."""

    schema_version: Literal[1] = SCHEMA_VERSION
    name: Name
    description: Annotated[str, Field(max_length=4000)] = ""
    hardware: Hardware = Hardware()
    policies: Policies = Field(default_factory=lambda: Policies())  # built once its fields resolve
    workloads: Annotated[list[Workload], Field(min_length=1, max_length=200)]
    pools: Annotated[list[Pool], Field(max_length=50)] = []  # none: one pool of hardware.server
    phases: Annotated[list[Phase], Field(max_length=50)] = []
    site: Site | None = None  # the site's power budget (aisize.scenario.fleet)
    cost: Cost = Cost()

    @model_validator(mode="after")
    def _unique_names(self):
        names = [w.name for w in self.workloads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique; repeated: {dupes}")
        return self

    @model_validator(mode="after")
    def _pools_and_phases_named(self):
        _check_references(self)
        return self


def _unique(items, what: str) -> list[str]:
    names = [x.name for x in items]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{what} names must be unique; repeated: {dupes}")
    return names


def _check_references(s: Scenario) -> None:
    """Every pool's server exists, every workload's pool and phase is declared, every priced server is known."""
    pools, phases = _unique(s.pools, "pool"), _unique(s.phases, "phase")
    _, custom, custom_storage = s.hardware.custom_records()
    for i, p in enumerate(s.pools):
        _in_ids(f"pools.{i}.server", p.server, catalog.servers, custom)
    from aisize.cost.prices import load, server_price_id
    from aisize.cost.storage import storage_unit_price_id

    # a quote for one unit of a storage system (catalog or the scenario's own) prices the units a plan buys
    units = {storage_unit_price_id(k) for k in list(catalog.storage.ids()) + list(custom_storage)}
    for id_ in s.cost.prices:
        if id_ not in load() and id_ not in {server_price_id(k) for k in custom} and id_ not in units:
            raise ValueError(f"cost.prices: {id_!r} is not a price id of data/prices.csv, of a server in "
                             f"hardware.servers or of a storage unit (storage-unit-<storage id>); ids: "
                             f"{', '.join(load().ids())}")
    if "always" in phases:
        raise ValueError("phases: 'always' is reserved for workloads that run all the time; rename the phase")
    for i, w in enumerate(s.workloads):
        pool = getattr(w, "pool", None)
        if pool is not None and pool not in pools:
            raise ValueError(f"workloads.{i}.pool: {pool!r} is not a declared pool; declared: "
                             f"{', '.join(pools) or '(none: add a pools list)'}")
        when = getattr(w, "when", None)
        if when is not None and when.phase != "always" and when.phase not in phases:
            raise ValueError(f"workloads.{i}.when.phase: {when.phase!r} is not a declared phase; declared: "
                             f"{', '.join(phases) or '(none: add a phases list)'}")


def _in_model_tables(value):
    if not isinstance(value, str):
        return value
    if value not in catalog.transformers and value not in catalog.other_models:
        known = catalog.transformers.ids() + catalog.other_models.ids()
        raise ValueError(f"model {_short(value)} is not in the catalog; allowed: {', '.join(known)}")
    return value


# the fleet fields build on this module's base types; resolve the forward references once they exist
from aisize.scenario.calibration import ServingCalibration  # noqa: E402
from aisize.scenario.fleet import ServiceFleet, Site  # noqa: E402
from aisize.scenario.reuse import KVTiers, PrefixReuse  # noqa: E402

Inference.model_rebuild()
Policies.model_rebuild()
Scenario.model_rebuild()
