"""One inference service through the day: its profile, the replica the planner chose, the autoscaler's day.

Glue only: the replica (shape, capacity, latencies) is the planner's :func:`plan_inference` at the
profile's peak and :func:`aisize.serving.estimate` (public) at other rates; the day is
:func:`aisize.fleet.day_replicas`; LoRA adapters :func:`aisize.fleet.lora.lora_serving`. A service's
``fleet.autoscaling.target`` "slo" gives each replica the highest rate at which it still meets the
service's TTFT and TPOT targets (bisection on the estimate); "utilisation" a share of its capacity.
Adapters stretch each iteration by the batched-LoRA kernels and take their GPU memory from the KV
pool: both shrink the rate a replica takes.

A new replica's scale-up time is its weights read over the slower of its servers' storage NICs and
the storage system's read rate (or, from a host page cache, over the GPUs' PCIe links), plus the
engine's start. Disaggregated services scale their pools together, a "replica" being the whole
deployment's GPUs divided by its replicas.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache

from aisize import checks, models, serving
from aisize.fleet import Autoscaler, Day, LoadProfile, day_replicas
from aisize.fleet.lora import LoraServing, lora_serving
from aisize.format import bytes_gpu
from aisize.plan import context as C
from aisize.plan.inference import InferencePlan, check_queue, plan_inference
from aisize.plan.replica_count import FALLBACK_UTILISATION, meets_targets
from aisize.plan.placement import Demand
from aisize.plan.service_notes import ServiceNote
from aisize.queueing import inference_station, knee_concurrency
from aisize.queueing.analytic import MAX_SERVERS as QUEUE_SERVERS
from aisize.serving.estimate import probe
from aisize.units import HOUR

SLO_BISECTION_STEPS = 14  # the SLO rate to 1/16,000 of the replica's capacity
NO_LIMIT_REPLICAS = checks.MAX_REPLICAS  # an autoscaler without max_replicas: the most a plan holds


TARGET_KINDS = ("utilisation", "slo", "fallback", "disaggregated")


@dataclass(frozen=True)
class TargetBasis:
    """What the autoscaler's rate per replica is (worded by :func:`aisize.present.fleet_text.target_basis_text`):
    ``kind`` utilisation (``utilisation`` of capacity, the service's ``fleet.autoscaling.target_utilisation``) |
    slo (the highest rate within the latency targets) | fallback (no rate meets the targets: ``utilisation``, the
    planner's fallback share of capacity) | disaggregated (the planner's disaggregated pools at the peak)."""

    kind: str
    utilisation: float | None = None  # share of a replica's capacity, for utilisation and fallback

    def __post_init__(self):
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"target basis kind {self.kind!r} is not one of {', '.join(TARGET_KINDS)}")
        if (self.utilisation is not None) != (self.kind in ("utilisation", "fallback")):
            raise ValueError(f"target basis {self.kind!r}: a utilisation is given for utilisation and fallback only "
                             f"(got {self.utilisation!r})")


@dataclass(frozen=True)
class ServiceDay:
    """A service's day: profile, replica, autoscaler and the replicas it holds [1/s, s, B]."""

    name: str
    profile: LoadProfile
    peak_plan: InferencePlan  # the planner's replica and fleet at the profile's peak
    gpus_per_replica: int
    capacity_per_replica_per_s: float  # one replica saturated (with adapters)
    requests_per_s_per_replica: float  # at the autoscaler's target
    target_basis: TargetBasis  # what the target rate is
    weights_bytes: float  # one replica reads them at start
    load_bytes_per_s: float  # one replica's read rate at start
    load_from: str
    engine_start_seconds: float
    scale_up_seconds: float
    policy: Autoscaler
    day: Day
    lora: LoraServing | None
    output_tokens: int

    @property
    def load_seconds(self) -> float:
        return self.weights_bytes / self.load_bytes_per_s

    @property
    def burst_read_bytes_per_s(self) -> float:
        """The read burst of the largest scale-up of the day: its replicas' weights within their load time."""
        return self.day.largest_burst * self.load_bytes_per_s

    @property
    def read_bytes_per_day(self) -> float:
        return self.day.scale_ups * self.weights_bytes

    @property
    def output_tokens_per_day(self) -> float:
        return self.profile.requests_per_day * self.output_tokens


def scale_up_reads(sd: ServiceDay):
    """The day's scale-ups as a storage workload: the largest burst's weights within their load time (peak),
    every start's weights over the day (average)."""
    from aisize.storage import inference_model_loading, workload

    name = f"{sd.name} scale-ups"
    if sd.day.scale_ups == 0 or sd.load_from != "storage":
        return workload(name, "inference")
    burst = sd.day.largest_burst
    period = 86400.0 * burst / sd.day.scale_ups
    return inference_model_loading(name, sd.weights_bytes, burst, sd.load_seconds, max(period, sd.load_seconds))


def fleet_of(w):
    """The service's ``fleet`` spec, or None (training jobs, streams and plain services have none)."""
    return getattr(w, "fleet", None)


def at_peak(w):
    """The service at its profile's peak rate (the planner places and prices that)."""
    f = fleet_of(w)
    if f is None or f.load_profile is None or f.load_profile.peak == 1.0:
        return w
    return w.model_copy(update={"requests_per_s": w.requests_per_s * f.load_profile.peak})


def profile_of(w) -> LoadProfile:
    """The service's rate through the day [1/s] (flat at ``requests_per_s`` without a profile)."""
    f = fleet_of(w)
    spec = f.load_profile if f is not None else None
    if spec is None:
        return LoadProfile((0.0,), (float(w.requests_per_s),))
    return LoadProfile(tuple(h * HOUR for h in spec.start_hours()), tuple(w.requests_per_s * v for v in spec.values()))


def _estimate_kw(w, i: InferencePlan, ctx: C.HardwareContext, policies) -> dict:
    """The planner's replica as :func:`aisize.serving.estimate` arguments (stages across servers use the
    pool's scale-out link, as the planner's shapes do; the scenario's serving calibration)."""
    link = ctx.scaleout_bytes_per_s if i.gpus_per_replica > ctx.server.gpus else None
    return dict(tensor_parallel=i.tensor_parallel, pipeline_parallel=i.pipeline_parallel, attention_dp=i.attention_dp,
                stage_link_bytes_per_s=link,
                weight_precision=w.weight_precision, kv_precision=w.kv_precision, input_tokens=w.prompt_tokens,
                output_tokens=w.output_tokens, length_cv=w.length_cv, engine=w.engine,
                calibration=C.serving_calibration(policies))


def _meets(w, est) -> bool:
    return meets_targets(w, est, w.ttft_target_ms / 1e3, w.tpot_target_ms / 1e3)


def slo_rate(w, i: InferencePlan, ctx: C.HardwareContext, capacity: float, policies) -> float:
    """The highest rate one replica takes within the service's TTFT and TPOT targets [1/s] (0: none). Kept by what
    it reads (:data:`_SLO_RATES`): a move of the fleet's own settings (engine start, minimum replicas, the load
    profile) re-plans the day, not this bisection."""
    arch = models.resolve(w.model)
    kw = _estimate_kw(w, i, ctx, policies)
    objects = (arch, ctx.accelerator, kw["calibration"])  # by identity, held by the entry
    key = (tuple(map(id, objects)), tuple((k, v) for k, v in kw.items() if k != "calibration"), float(capacity),
           float(w.ttft_target_ms), float(w.tpot_target_ms), w.slo_statistic)
    try:
        got = _SLO_RATES.get(key)
    except TypeError:  # an argument held by reference (a custom engine's record): solved, not kept
        return _bisected(w, arch, ctx, kw, capacity)
    if got is not None and all(a is b for a, b in zip(got[0], objects)):
        _SLO_RATES.move_to_end(key)
        return got[1]
    rate = _bisected(w, arch, ctx, kw, capacity)
    _SLO_RATES[key] = (objects, rate)
    while len(_SLO_RATES) > _KEPT_SLO_RATES:
        _SLO_RATES.popitem(last=False)
    return rate


_SLO_RATES: OrderedDict = OrderedDict()  # slo_rate's arguments as it reads them -> ((model, GPU, calibration), rate)
_KEPT_SLO_RATES = 64
slo_rate.cache_clear = _SLO_RATES.clear  # aisize.plan.clear_caches finds it (cold-plan benchmarks)


def _bisected(w, arch, ctx: C.HardwareContext, kw: dict, capacity: float) -> float:
    """:func:`slo_rate`'s bisection on [0, capacity]."""
    lo, hi, replicas = 0.0, capacity, None
    for _ in range(SLO_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        # the estimate's stability and latencies to the bit (serving.estimate.probe), its replicas built once
        got = probe(arch, ctx.accelerator, requests_per_s=mid, replicas=replicas, **kw) if mid > 0 else None
        replicas = got.replicas if got is not None else replicas
        if got is not None and _meets(w, got):
            lo = mid
        else:
            hi = mid
    return lo


def _lora(w, i, ctx, cap_est, policies) -> LoraServing | None:
    a = fleet_of(w).adapters if fleet_of(w) else None
    if a is None or cap_est is None:
        return None
    pcie = ctx.pcie_link.bandwidth_per_direction_bytes_per_s if ctx.pcie_link else ctx.scaleout_bytes_per_s
    return lora_serving(models.resolve(w.model), ctx.accelerator, adapters=a.count, rank=a.rank,
                        zipf_exponent=a.zipf_exponent, targets=a.targets, hbm_adapters=a.hbm_adapters,
                        host_adapters=a.count if a.host_adapters is None else a.host_adapters,
                        batch=max(cap_est.max_concurrency, 1.0), iteration_seconds=cap_est.tpot_s,
                        tensor_parallel=i.tensor_parallel * i.pipeline_parallel, pcie_bytes_per_s=pcie,
                        storage_bytes_per_s=_storage_read(ctx, i.gpus_per_replica),
                        memory_efficiency=C.serving_calibration(policies).value(
                            "memory_efficiency", serving.hardware.generation(ctx.accelerator)))


def _storage_read(ctx: C.HardwareContext, gpus: int) -> float:
    """One replica's read rate from the shared storage: its servers' storage NICs, at most the system's rate."""
    servers = max(math.ceil(gpus / ctx.server.gpus), 1)
    nic = max(ctx.server.storage_nics, 1) * ctx.storage_nic_link.bandwidth_per_direction_bytes_per_s * servers
    return min(nic, ctx.storage.read_bandwidth_bytes_per_s)


@lru_cache(maxsize=256)
def service_day(w, ctx: C.HardwareContext, policies) -> ServiceDay:
    """The day of one inference service on the pool hardware ``ctx``."""
    f = fleet_of(w)
    auto = f.autoscaling if f is not None else None
    i = plan_inference(at_peak(w), ctx, policies)
    profile = profile_of(w)
    arch = models.resolve(w.model)
    if i.estimate is not None:  # aggregated: one replica of the chosen shape
        g = i.gpus_per_replica
        cap_est = serving.estimate(arch, ctx.accelerator, **_estimate_kw(w, i, ctx, policies))
        capacity = cap_est.max_requests_per_s
    else:  # disaggregated: the pools scale together
        g = max(math.ceil(i.gpus / max(i.replicas, 1)), 1)
        cap_est = None
        capacity = i.requests_per_s / max(i.replicas, 1) / max(min(i.utilisation, 1.0), 1e-9)
    lora = _lora(w, i, ctx, cap_est, policies)
    factor = 1.0
    if lora is not None:
        _check_adapters(fleet_of(w).adapters, lora, cap_est, g)
        factor = lora.capacity_factor
        if cap_est is not None and cap_est.limited_by == "KV cache" and cap_est.kv_pool_bytes > 0:
            factor *= max(1.0 - lora.hbm_bytes_per_gpu / cap_est.kv_pool_bytes, 0.0)
    capacity *= factor
    target = auto.target if auto is not None else "slo"
    if target == "utilisation":
        basis = TargetBasis("utilisation", auto.target_utilisation)
        rate = auto.target_utilisation * capacity
    elif cap_est is not None:
        rate, basis = slo_rate(w, i, ctx, cap_est.max_requests_per_s, policies) * factor, TargetBasis("slo")
        if rate <= 0:  # no rate meets the targets: the planner's fallback utilisation
            rate, basis = FALLBACK_UTILISATION * capacity, TargetBasis("fallback", FALLBACK_UTILISATION)
    else:
        rate, basis = i.requests_per_s / max(i.replicas, 1), TargetBasis("disaggregated")
    load_from = auto.load_from if auto is not None else "storage"
    if load_from == "host-cache" and ctx.pcie_link is not None:
        read = ctx.pcie_link.bandwidth_per_direction_bytes_per_s * g
    else:
        read = _storage_read(ctx, g)
    start = auto.engine_start_seconds if auto is not None else 0.0
    scale_up = i.weights_bytes / read + start
    if auto is not None and auto.min_replicas:
        _check_min_replicas(auto.min_replicas, g, i, ctx.server.gpus)
    if auto is None or auto.max_replicas is None:  # the peak's replicas, before the day holds them
        slow = C.serving_calibration(policies).slowdowns()
        checks.count("model replicas", math.ceil(profile.peak_per_s / max(rate, 1e-9)), NO_LIMIT_REPLICAS,
                     why=f"the day's peak of {profile.peak_per_s:.4g} requests/s at {rate:.3g} requests/s per replica "
                         # the basis in the words of aisize.present.fleet_text (the planner cannot import it)
                         + ("(latency targets)" if basis.kind == "slo" else
                            "(the planner's disaggregated pools at the peak)" if basis.kind == "disaggregated" else
                            f"({basis.utilisation:.0%} of capacity"
                            + (" (no rate meets the targets))" if basis.kind == "fallback" else ")"))
                         + (f"; its LoRA adapters leave {factor:.2%} of a replica's capacity "
                            "(fleet.adapters)" if factor < 0.5 else "")
                         + (f"; the scenario's serving calibration sets {slow}" if slow else ""))
    policy = Autoscaler(max(rate, 1e-9), auto.min_replicas if auto else 1,
                        (auto.max_replicas or NO_LIMIT_REPLICAS) if auto else NO_LIMIT_REPLICAS, scale_up,
                        scale_down_window_seconds=auto.scale_down_window_seconds if auto else 300.0)
    day = day_replicas(profile, policy, gpus_per_replica=g, capacity_per_replica_per_s=max(capacity, 1e-9))
    checks.count("GPUs", day.peak_replicas * g, checks.MAX_GPUS,
                 why=f"the day's peak of {day.peak_replicas:,} replicas of {g} GPUs")
    return ServiceDay(w.name, profile, i, int(g), float(capacity), float(rate), basis, float(i.weights_bytes),
                      float(read), load_from, float(start), float(scale_up), policy, day, lora, int(w.output_tokens))


def _check_adapters(a, lora: LoraServing, cap_est, gpus: int) -> None:
    """Refuse, naming the adapter fields, adapters whose resident copies take a replica's whole KV cache."""
    if cap_est is None or lora.hbm_bytes_per_gpu < cap_est.kv_pool_bytes:
        return
    raise ValueError(f"fleet.adapters.hbm_adapters={a.hbm_adapters:,} (of count={a.count:,}) at rank={a.rank} does "
                     f"not fit: {lora.hbm_adapters:,} adapters ({a.targets}) kept in GPU memory take "
                     f"{bytes_gpu(lora.hbm_bytes_per_gpu)} per GPU, all of the {bytes_gpu(cap_est.kv_pool_bytes)} KV "
                     f"cache of a replica of {gpus} GPUs: keep fewer in GPU memory (fleet.adapters.hbm_adapters) or "
                     "lower their rank (fleet.adapters.rank)")


def _check_min_replicas(m: int, gpus: int, i: InferencePlan, gpus_per_server: int) -> None:
    """Refuse, naming ``fleet.autoscaling.min_replicas``, a floor of replicas past the plan's limits (they are held
    all day: the day, its placement and its queue are built for them)."""
    counts = [("GPUs", m * gpus, checks.MAX_GPUS),
              ("servers", math.ceil(m * gpus / gpus_per_server), checks.MAX_SERVERS)]
    if i.estimate is not None:  # aggregated: a queue of the replicas' requests in flight
        counts.append((f"places in the fleet's queue ({i.max_batch:,} a replica)", m * i.max_batch, QUEUE_SERVERS))
    for what, n, limit in counts:
        if n > limit:
            raise ValueError(f"fleet.autoscaling.min_replicas={m:,} is not allowed: {m:,} replicas of {gpus} GPUs "
                             f"held all day need {n:,} {what}, more than aisize plans ({limit:,})")


def replicas_in_slots(sd: ServiceDay, slots) -> list[int]:
    """The most replicas the service holds in each time slot of ``slots`` (aisize.plan.timeline.Slots)."""
    hourly = sd.day.hourly("provisioned", "max")
    out = []
    for _ in slots.phases:
        for a, b in slots.segments:
            hours = [h % 24 for h in range(int(math.floor(a)), int(math.ceil(b)))]
            out.append(int(max(hourly[h] for h in hours)))
    return out


def day_demand(d: Demand, sd: ServiceDay, slots, gpus_per_server: int) -> Demand:
    """The service's placement demand with replica k present only in the slots where the day holds k or more."""
    per_slot = replicas_in_slots(sd, slots)
    active = sorted(d.slots)
    most = max((per_slot[t] for t in active), default=0)
    checks.count("servers", math.ceil(most * sd.gpus_per_replica / gpus_per_server), checks.MAX_SERVERS,
                 why=f"the day's peak of {most:,} replicas of {sd.gpus_per_replica} GPUs on servers of "
                     f"{gpus_per_server}")
    pieces, item_slots, seen = [], [], {}
    whole, rest = divmod(sd.gpus_per_replica, gpus_per_server)
    replica_pieces = [gpus_per_server] * whole + ([rest] if rest else [])
    for k in range(1, most + 1):
        present = frozenset(t for t in active if per_slot[t] >= k)
        present = seen.setdefault(present, present)  # one set per distinct count of slots, not per replica
        pieces += replica_pieces
        item_slots += [present] * len(replica_pieces)
    return replace(d, items=tuple(pieces), item_slots=tuple(item_slots))


def day_candidate(w, index: int, pool_index: int, pool, policies, slots):
    """A service's placement candidate: planned at its peak, its replicas present in the slots the day needs them."""
    from aisize.plan.pools import inference_candidate

    c = inference_candidate(at_peak(w), index, pool_index, pool, policies, slots.active[w.name])
    if fleet_of(w) is None or fleet_of(w).load_profile is None or c.plan.serving_mode != "aggregated" or not c.fits:
        return c
    sd = service_day(w, pool.ctx, policies)
    return replace(c, plan=with_day_peak(c.plan, sd, pool.spec.gpus_per_server),
                   demand=day_demand(c.demand, sd, slots, pool.spec.gpus_per_server))


def with_day_peak(i: InferencePlan, sd: ServiceDay, gpus_per_server: int) -> InferencePlan:
    """The service's plan holding the autoscaler's peak replicas (what is placed), the static sizing in a note."""
    n, g = sd.day.peak_replicas, sd.gpus_per_replica
    if n == i.replicas:
        return i
    checks.count("GPUs", n * g, checks.MAX_GPUS, why=f"the day's peak of {n:,} replicas of {g} GPUs")
    check_queue(n, i.max_batch)
    note = ServiceNote("autoscaler_peak", {"peak_replicas": n, "static_replicas": i.replicas})
    scale = n / max(i.replicas, 1)
    station = inference_station(max(n, 1), i.max_batch, i.station.service_seconds, C.INFERENCE_SERVICE_CV)
    return replace(i, replicas=n, gpus=n * g, replica_gpus=(g,) * n, servers=math.ceil(n * g / gpus_per_server),
                   capacity_output_tokens_per_s=i.capacity_output_tokens_per_s * scale,
                   knee_requests_per_s=i.knee_requests_per_s * scale, station=station,
                   knee_concurrency=int(knee_concurrency(station, C.KNEE_FACTOR)), notes=i.notes + (note,))
