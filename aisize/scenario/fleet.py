"""Scenario fields of a serving fleet through the day (aisize.fleet): an inference service's ``fleet``
(load profile, autoscaling, LoRA adapters, tenants, spares, heterogeneous pools) and the ``site``
(power envelope).

Every default that is an assumption says so; the planner lists them with the plan's assumptions.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from aisize import catalog
from aisize.scenario.base import Count, Name, Share, _in_table, _Strict
from aisize.scenario.paths import MAX_CSV_BYTES, ScenarioPath

Value = Annotated[float, Field(allow_inf_nan=False)]
Multiplier = Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)]
Hour = Annotated[float, Field(ge=0, lt=24, allow_inf_nan=False)]
ENGINE_START_SECONDS = 60.0  # assumption: engine start after the weights are read (graphs, KV pool, warm-up)
HBM_ADAPTERS = 16  # assumption: adapters a replica keeps in GPU memory (vLLM's --max-loras; its default is 1)
CSV_FILE = ScenarioPath("csv", MAX_CSV_BYTES, "give the rows as points ([[hour, multiplier], ...]) or hourly "
                        "values")


class LoadProfile(_Strict):
    """The service's rate through the day, as multipliers of its ``requests_per_s``.

    Give ``hourly`` (24 values), ``quarter_hourly`` (96) or ``csv`` (a file with the columns time,
    in hours or HH:MM from 0, and requests_per_s: its rows are embedded in ``points`` when a scenario
    file given to the command line is read; anywhere else ``points`` is required: no path is read).
    ``requests_per_s`` x the largest value is the peak the fleet is placed for.
    """

    hourly: tuple[Value, ...] | None = None
    quarter_hourly: tuple[Value, ...] | None = None
    csv: Annotated[str, Field(min_length=1, max_length=1000), CSV_FILE] | None = None
    points: Annotated[tuple[tuple[Hour, Multiplier], ...], Field(min_length=1, max_length=10_000)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _embed_csv(cls, data):
        if isinstance(data, dict) and isinstance(data.get("csv"), str) and data["csv"] and data.get("points") is None:
            from aisize.fleet.profile import from_csv

            p = from_csv(CSV_FILE.read(data["csv"]), field="csv")
            data = {**data, "points": [[s / 3600.0, r] for s, r in zip(p.start_seconds, p.rates_per_s)]}
        return data

    @field_validator("hourly", "quarter_hourly", "points", mode="before")
    @classmethod
    def _no_bools(cls, values, info):
        # pydantic reads true as 1.0 in a list of floats; in a file that is a typo
        flat = [x for v in values for x in (v if isinstance(v, (list, tuple)) else [v])] \
            if isinstance(values, (list, tuple)) else []
        if any(isinstance(x, bool) for x in flat):
            raise ValueError(f"{info.field_name} holds true/false: give numbers")
        return values

    @field_validator("hourly", "quarter_hourly")
    @classmethod
    def _rates(cls, values, info):
        n = 24 if info.field_name == "hourly" else 96
        if values is not None:
            if len(values) != n:
                raise ValueError(f"{info.field_name} has {len(values)} values; give {n}")
            for i, v in enumerate(values):
                if not 0 <= v <= 1e6:
                    raise ValueError(f"{info.field_name}[{i}]={v:g} is not allowed: a rate multiplier must be in "
                                     "[0, 1e6] (negative load has no meaning)")
        return values

    @model_validator(mode="after")
    def _one_shape(self):
        given = [k for k in ("hourly", "quarter_hourly", "points") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of hourly (24 values), quarter_hourly (96) and csv"
                             + (f" (got {', '.join(given)})" if given else ""))
        values = self.values()
        if not any(values):
            raise ValueError("every value is 0: the service would never run")
        if self.points is not None:
            hours = [h for h, _ in self.points]
            if hours[0] != 0 or any(b <= a for a, b in zip(hours, hours[1:])):
                raise ValueError("points: times must start at 0 and increase")
        return self

    def values(self) -> tuple[float, ...]:
        if self.points is not None:
            return tuple(v for _, v in self.points)
        return self.hourly if self.hourly is not None else self.quarter_hourly

    def start_hours(self) -> tuple[float, ...]:
        if self.points is not None:
            return tuple(h for h, _ in self.points)
        n = len(self.values())
        return tuple(24.0 * i / n for i in range(n))

    @property
    def peak(self) -> float:
        return max(self.values())


class Autoscaling(_Strict):
    """How replicas follow the load (aisize.fleet.autoscale: the HorizontalPodAutoscaler's algorithm).

    ``target`` "slo": a replica takes the highest rate at which it meets the service's latency
    targets; "utilisation": ``target_utilisation`` of its capacity. A new replica reads its weights
    from the shared storage (``load_from`` storage) or a host page cache, then starts its engine.
    """

    target: Literal["slo", "utilisation"] = "slo"
    target_utilisation: Share = 0.7  # assumption, for target "utilisation"
    min_replicas: Annotated[int, Field(ge=0, le=100_000)] = 1
    max_replicas: Count | None = None  # None: as many as the peak needs
    load_from: Literal["storage", "host-cache"] = "storage"
    engine_start_seconds: Annotated[float, Field(ge=0, le=3600, allow_inf_nan=False)] = ENGINE_START_SECONDS
    scale_down_window_seconds: Annotated[float, Field(ge=0, le=86_400, allow_inf_nan=False)] = 300.0

    @model_validator(mode="after")
    def _max_above_min(self):
        if self.max_replicas is not None and self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas={self.max_replicas} is not allowed: must be at least "
                             f"min_replicas={self.min_replicas}")
        return self


class Adapters(_Strict):
    """LoRA adapters served on the base model (aisize.fleet.lora)."""

    count: Annotated[int, Field(ge=1, le=1_000_000)]
    rank: Annotated[int, Field(ge=1, le=1024)] = 16
    zipf_exponent: Annotated[float, Field(ge=0, le=5, allow_inf_nan=False)] = 1.0  # 0: equally popular
    targets: Literal["attention", "all-linear"] = "all-linear"
    hbm_adapters: Count = HBM_ADAPTERS
    host_adapters: Annotated[int, Field(ge=0, le=1_000_000)] | None = None  # None: all of them


class Tenant(_Strict):
    """A class of the service's requests: its share of the rate, priority (0 first) and its own target."""

    name: Name
    share: Share
    priority: Annotated[int, Field(ge=0, le=9)] = 0
    ttft_target_ms: Annotated[float, Field(ge=1, le=600_000, allow_inf_nan=False)] | None = None


class Heterogeneous(_Strict):
    """Candidate server types for the prefill and the decode pool; the cheapest pair per token is chosen."""

    prefill_servers: Annotated[tuple[str, ...], Field(min_length=1, max_length=20)]
    decode_servers: Annotated[tuple[str, ...], Field(min_length=1, max_length=20)]
    target_utilisation: Share = 0.8  # assumption

    @field_validator("prefill_servers", "decode_servers")
    @classmethod
    def _known(cls, values, info):
        for v in values:
            _in_table(catalog.servers, info.field_name, v)
        return values


class ServiceFleet(_Strict):
    """An inference service as a fleet through the day."""

    load_profile: LoadProfile | None = None
    autoscaling: Autoscaling = Autoscaling()
    adapters: Adapters | None = None
    tenants: Annotated[tuple[Tenant, ...], Field(max_length=20)] = ()
    preemptive: bool = False  # tenants: a higher priority request takes a slot from a lower one
    availability_target: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = None
    heterogeneous: Heterogeneous | None = None

    @model_validator(mode="after")
    def _tenants(self):
        names = [t.name for t in self.tenants]
        if len(set(names)) != len(names):
            raise ValueError(f"tenants: names must be unique; got {names}")
        total = sum(t.share for t in self.tenants)
        if self.tenants and abs(total - 1.0) > 1e-6:
            raise ValueError(f"tenants: shares add up to {total:g}; they must add up to 1")
        return self


class Site(_Strict):
    """The site's power budget (aisize.fleet.power)."""

    power_mw: Annotated[float, Field(gt=0, le=100_000, allow_inf_nan=False)]
    pue: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] | None = None  # None: the price table's PUE
    other_it_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.10  # assumption: fabric, storage
