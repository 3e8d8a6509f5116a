"""``aisize.serving.estimate``: one replica of a model on a GPU, at a request rate, a concurrency or flat out.

The one entry point the planner, app, report and validation use. It composes
the pieces of this package:

1. per-token costs of the model at its weight formats (:mod:`.costs`);
2. the GPU's achieved rates for those precisions (:mod:`.hardware`, :mod:`.calibration`);
3. the engine's limits and the replica's KV pool (:mod:`.engine`, :mod:`.memory`);
4. the steady state at the largest admissible concurrency (:mod:`.throughput`) — the
   replica's capacity — and then, at a given request rate (an open loop), latencies under
   load (:mod:`.latency`), or at a given concurrency (a closed loop, as benchmarks that
   hold C requests in flight measure) its throughput and latencies (:mod:`.closed`).

For an MoE model the GPUs of a stage are mapped onto attention tensor/data
parallelism and expert parallelism (:mod:`.shapes`); unless told, the mapping with
the highest throughput at the asked load is used.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace

from aisize import checks, models
from aisize.serving.calibration import Calibration
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.engine import Engine, resolve_engine
from aisize.serving import lengths as L
from aisize.serving.hardware import device, scaleout_bytes_per_s
from aisize.serving.iteration import achieved_rates, iteration_time
from aisize.serving.record import ServingEstimate, _breakdown, _latencies, _result, _sig
from aisize.serving.replica import (Load, Replica, ReplicaState, capacity, evaluate, flat_out, parts,
                                    resolve_calibration)
from aisize.serving.reuse import serving_workload
from aisize.serving.shapes import ReplicaShape, attention_dp_choices, check_shape, expert_parallel_choices, placed
from aisize.serving.throughput import engine_limits

MAX_TOKENS = 10**8  # a longer request is a typo, not a workload


def _scalar(name, check, value, **kw):
    """A checked single number (these entry points size one replica, not a sweep)."""
    return checks.scalar(name, check(name, value, **kw))


def replica_of(est, calibration=None) -> Replica:
    """The :class:`~aisize.serving.replica.Replica` a :class:`ServingEstimate` evaluated (with ``calibration``'s
    achieved rates where one is given), to evaluate it again (curves, simulations)."""
    if getattr(est, "replica", None) is None:
        raise ValueError(f"est={type(est).__name__} carries no replica: give a ServingEstimate from "
                         f"aisize.serving.estimate")
    return est.replica.with_calibration(resolve_calibration(calibration, est))


def estimate(model, accelerator, *, tensor_parallel, weight_precision="bf16", kv_precision="fp8",
             input_tokens, output_tokens, requests_per_s=None, concurrency=None, pipeline_parallel=1,
             attention_dp=None, expert_parallel=None, max_batch_size=None, max_num_tokens=None, length_cv=0.0,
             stage_link_bytes_per_s=None, engine: Engine | str | None = None,
             calibration: Calibration | str | None = None, speculative_method=None, speculative_tokens=None,
             acceptance_length=None, draft_model=None, prefix=None, kv_tiers=None,
             length_distribution=None) -> ServingEstimate:
    """Throughput, latencies and memory of one serving replica.

    On a GPU whose generation no public run calibrates (A100, L40S, MI300X, ...) the point uses the fallback
    generation's efficiencies, and the estimate also carries the range the calibrated generations' efficiencies
    span on that GPU (``output_tokens_per_s_range``, ``ttft_range_s``, ``tpot_range_s``): a flag alone does
    not protect a customer.

    Parameters
    ----------
    model : catalog id (e.g. ``"llama-3-70b"``) or a model from :func:`aisize.models.from_hf_config`
    accelerator : catalog accelerator id (e.g. ``"h100-sxm"``) or record
    tensor_parallel : GPUs per pipeline stage (the whole replica when ``pipeline_parallel`` is 1)
    weight_precision : linear-layer weight format (bf16, fp8, nvfp4, mxfp4, int8, int4-g128, ...), or a
        mapping by layer kind (``{"experts": "mxfp4", "attention": "bf16", "dense": "bf16"}``)
    kv_precision : KV-cache format (fp8, bf16, fp16, fp32)
    input_tokens, output_tokens : mean prompt and output lengths [tokens]
    requests_per_s : arrival rate at this replica (Poisson, an open loop)
    concurrency : requests a closed-loop client holds in flight at this replica (no think time), as
        InferenceX, ``vllm bench serve --max-concurrency`` and AIPerf measure; give a rate or a
        concurrency, not both; neither: max throughput (every request waiting from the start)
    pipeline_parallel : stages; they may span servers (``stage_link_bytes_per_s``)
    attention_dp : attention data-parallel groups per stage (MoE); None picks the fastest
    expert_parallel : GPUs of a stage the routed experts spread over, each expert split over the
        rest (MoE); None picks the fastest
    max_batch_size, max_num_tokens : the engine's batch and token limits as its flags state them; None: the
        engine's own (or its heuristic). Each attention-DP rank schedules within them, except on an engine
        whose flags are the replica's (SGLang: ``max_running_requests``, ``chunked_prefill_size``), which
        splits them among its ranks as it does itself
    length_cv : coefficient of variation of the lengths, for the admission queue
    stage_link_bytes_per_s : link between pipeline stages per GPU per direction [B/s];
        None: NVLink when the replica fits one scale-up domain, else the GPU's scale-out NIC
    engine : an :class:`Engine` or a key of ``data/engines.csv`` (``trtllm``, ``trtllm-bench``, ``vllm``,
        ``sglang``); None: TensorRT-LLM, trtllm-bench's scheduler flat out, trtllm-serve's under load. A
        deployment's own flags: ``ENGINES["trtllm"].with_(attention_dp_balance_iters=0)`` (TensorRT-LLM's
        attention-DP balancing off; the ``trtllm`` row balances as ``attention_dp_config: {enable_balance: true,
        timeout_iters: 60}`` does)
    calibration : fitted constants, or a calibration file from ``aisize calibrate``; None: the default
    speculative_method : speculative decoding: ``mtp``, ``eagle3``, ``draft`` or ``ngram``; None: none
    speculative_tokens : tokens drafted per step, k (1 to 16)
    acceptance_length : tokens a step emits on average, τ (1 to k + 1); None: the measured curve of the
        method and the model, else its family (``data/speculative.csv``)
    draft_model : the draft model of ``speculative_method="draft"`` (catalog id or record)
    prefix : :class:`~aisize.serving.prefix.Reuse`: shared prefix, multi-turn sessions, RAG chunks (needs
        ``requests_per_s``); hits come from the KV pool's free part and ``kv_tiers`` (:mod:`.reuse`)
    kv_tiers : :class:`~aisize.serving.tiers.KVTier` records below HBM (dram, nvme, storage), for this replica
    length_distribution : :class:`~aisize.serving.lengths.Lengths` whose means are ``input_tokens`` and
        ``output_tokens``: the KV in use, TTFT and TPOT tails follow the spread (:mod:`.lengths`)

    Returns
    -------
    :class:`ServingEstimate`. A model that does not fit gives ``feasible=False`` and the
    reason; a rate at or beyond capacity gives ``stable=False`` and infinite latencies.

    References
    ----------
    See the modules of :mod:`aisize.serving`; docs/DESIGN.md section 2, "Serving (one replica)".
    """
    arguments = dict(locals())
    est = _estimate(arguments)
    if est.uncalibrated and est.feasible and est.stable:
        est = _uncalibrated_range(est, arguments)
    return est


def replica(model, accelerator, **kwargs) -> Replica:
    """The :class:`~aisize.serving.replica.Replica` :func:`estimate` evaluates, from the same arguments: the
    model, GPU, engine as it runs and its limits, calibration, formats, lengths, and the shape (where
    ``attention_dp`` or ``expert_parallel`` is not given, the split with the highest throughput at the load
    given). Evaluate it at a load with :func:`aisize.serving.replica.evaluate`."""
    asked = inspect.signature(estimate).bind(model, accelerator, **kwargs)
    asked.apply_defaults()
    return _evaluated(_asked(asked.arguments))[0]


replica.__signature__ = inspect.signature(estimate).replace(return_annotation=Replica)


def estimate_capacity(model, accelerator, *, replicas: tuple | None = None, **kwargs) -> tuple[bool, float]:
    """(``feasible``, ``max_requests_per_s``) of :func:`estimate` flat out (no rate, no concurrency), the same two
    figures to the last bit, without the latencies it would compute and a capacity search never reads (the length
    tails of :mod:`.tails`, the KV-full rate, the iteration breakdown): a third of an estimate's work with a length
    distribution. ``kwargs`` are :func:`estimate`'s but the rate and the concurrency. ``replicas``: those
    :func:`candidate_replicas` built of the same arguments (their capacities computed once), with the engine given
    as an :class:`Engine` (a key or None resolves to another engine flat out than under a load)."""
    for name in ("requests_per_s", "concurrency"):
        if kwargs.get(name) is not None:
            raise ValueError(f"{name}={kwargs[name]!r}: estimate_capacity is the estimate flat out; give no "
                             f"requests_per_s or concurrency (call estimate for a load)")
    if replicas is not None and not isinstance(kwargs.get("engine"), Engine):
        raise ValueError(f"engine={kwargs.get('engine')!r} with replicas: give the engine as an Engine record (the "
                         f"replicas' engine is the one under a load; a key or None flat out is another)")
    asked = inspect.signature(estimate).bind(model, accelerator, **kwargs)
    asked.apply_defaults()
    a = _asked(asked.arguments) if replicas is None else _asked_at_rate(asked.arguments, replicas)
    _, cap, _ = _evaluated(a, latencies=False)
    fits = bool(cap.memory.fits)
    return fits, float(cap.state.requests_per_s) if fits else 0.0  # as _result reads them


def _uncalibrated_range(est: ServingEstimate, arguments: dict) -> ServingEstimate:
    """``est`` with the (low, high) its figures take under each calibrated generation's efficiencies (the
    fallback's point among them), and a note naming the spread."""
    calib = est.calibration_record
    keys = {"tokens": "output_tokens_per_s", "capacity": "max_output_tokens_per_s", "ttft": "ttft_s", "tpot": "tpot_s"}
    figures = {k: [getattr(est, a)] for k, a in keys.items()}
    overloaded = []
    for gen in calib.gemm_efficiency:
        if gen == calib.fallback_generation:
            continue
        other = _estimate({**arguments, "calibration": calib.with_(fallback_generation=gen)})
        if not other.feasible:
            continue
        figures["capacity"].append(other.max_output_tokens_per_s)  # a capacity whatever the load
        if other.stable:
            for k in ("tokens", "ttft", "tpot"):
                figures[k].append(getattr(other, keys[k]))
        else:  # the load asked for is past this generation's capacity: said apart, its latencies have no bound
            overloaded.append(gen)
    span = {k: (min(v), max(v)) for k, v in figures.items()}
    lo, hi = span["capacity"]
    note = (f"{est.accelerator}: no public run calibrates its generation; under the efficiencies of the calibrated "
            f"generations ({', '.join(calib.gemm_efficiency)}) a replica's capacity is {_sig(lo)} to {_sig(hi)} "
            f"output tokens/s (the point, {_sig(est.max_output_tokens_per_s)}, uses {calib.fallback_generation}'s)"
            + (f"; under {', '.join(overloaded)}'s the load asked for would overload it" if overloaded else ""))
    return replace(est, output_tokens_per_s_range=span["tokens"], max_output_tokens_per_s_range=span["capacity"],
                   ttft_range_s=span["ttft"], tpot_range_s=span["tpot"], overloaded_under=tuple(overloaded),
                   notes=est.notes + (note,))


@dataclass(frozen=True)
class Asked:
    """What :func:`estimate` was asked, checked once (:func:`_asked`): the replica at each shape the search tries,
    the load, and the workload beyond mean lengths."""

    replicas: tuple  # a Replica per candidate (attention DP, EP) split, in the search's order
    load: Load
    workload: object = None  # prefix reuse, KV tiers, length distribution (aisize.serving.reuse.ServingWorkload)


def _asked(a) -> Asked:
    """:func:`estimate`'s arguments, all of them by name (as bound), as checked values: the one place where its
    keywords become a load and the candidate replicas (the model, GPU, engine as it runs, calibration and
    speculation resolved once, the limits per shape)."""
    m = models.resolve(a["model"])
    requests_per_s, concurrency = a["requests_per_s"], a["concurrency"]
    if requests_per_s is not None and concurrency is not None:
        raise ValueError(f"requests_per_s={requests_per_s!r} and concurrency={concurrency!r} are both given: "
                         f"give a request rate (open loop) or a concurrency (closed loop), not both")
    engine = resolve_engine(a["engine"], flat_out=requests_per_s is None and concurrency is None)
    calib = resolve_calibration(a["calibration"])
    i = int(_scalar("input_tokens", checks.integer, a["input_tokens"], high=MAX_TOKENS))
    o = int(_scalar("output_tokens", checks.integer, a["output_tokens"], high=MAX_TOKENS))
    tp = int(_scalar("tensor_parallel", checks.integer, a["tensor_parallel"], high=4096))
    pp = int(_scalar("pipeline_parallel", checks.integer, a["pipeline_parallel"], high=1024))
    if requests_per_s is not None:
        requests_per_s = _scalar("requests_per_s", checks.positive, requests_per_s, high=1e9)
    if concurrency is not None:
        concurrency = _scalar("concurrency", checks.positive, concurrency, high=1e8)
    cv = _scalar("length_cv", checks.non_negative, a["length_cv"], high=100.0)
    max_batch_size, max_num_tokens = a["max_batch_size"], a["max_num_tokens"]
    if max_batch_size is not None:
        max_batch_size = _scalar("max_batch_size", checks.positive, max_batch_size, high=1e7)
    if max_num_tokens is not None:
        max_num_tokens = _scalar("max_num_tokens", checks.positive, max_num_tokens, high=1e8)
    kv_precision = a["kv_precision"]
    dev, costs, rates, spec, engine = parts(m, a["accelerator"], a["weight_precision"], kv_precision, calib, engine,
                                            method=a["speculative_method"], draft_tokens=a["speculative_tokens"],
                                            acceptance_length=a["acceptance_length"], draft_model=a["draft_model"])
    link = a["stage_link_bytes_per_s"]
    if link is None and pp > 1 and tp * pp > dev.scaleup_domain:
        link = scaleout_bytes_per_s(dev.id)
    dps = [a["attention_dp"]] if a["attention_dp"] is not None else attention_dp_choices(m, tp)
    eps = [a["expert_parallel"]] if a["expert_parallel"] is not None else expert_parallel_choices(m, tp)
    workload = serving_workload(a["prefix"], a["kv_tiers"], a["length_distribution"], i, o, requests_per_s,
                                costs.kv_bytes)
    replicas = []
    for dp in dps:
        for ep in eps:
            check_shape(m, tensor_parallel=tp, attention_dp=dp, pipeline_parallel=pp, expert_parallel=ep)
            shape = placed(ReplicaShape(tp, dp, pp, link, ep if costs.moe_layers else None), dev.scaleup_domain,
                           lambda: scaleout_bytes_per_s(dev.id))
            limits = engine_limits(costs, dev, engine, input_tokens=i, output_tokens=o, shape=shape,
                                   max_batch_size=max_batch_size, max_num_tokens=max_num_tokens)
            replicas.append(Replica(m, a["accelerator"], dev, costs, rates, calib, engine, spec, shape, limits,
                                    kv_precision, i, o))
    return Asked(tuple(replicas), Load(requests_per_s, concurrency, cv), workload)


def _evaluated(asked: Asked, *, latencies=True) -> tuple[Replica, object, ReplicaState | None]:
    """(the replica, its capacity, its state under the load; None where it does not fit) of what :func:`estimate`
    was asked: the shape search keeps the candidate with the highest score at that load. ``latencies=False``
    (:func:`estimate_capacity`): the capacity exact, the state's latencies left as the queueing model has them."""
    load, extras = asked.load, asked.workload
    if latencies and extras is not None and extras.reuse is None and len(asked.replicas) == 1:
        # one candidate settled without reuse: settle solves it anew at the lengths' context and never reads its state
        rep = asked.replicas[0]
        if not bool(rep.capacity.memory.fits):  # as evaluate says None
            return rep, rep.capacity, None
        return (rep,) + extras.settle(load, rep, rep.capacity, None)
    best = None
    for rep in asked.replicas:
        state = evaluate(rep, load)
        score = state.score if state is not None else -1.0
        if best is None or score > best[0]:
            best = (score, rep, state)
    _, rep, state = best
    cap = rep.capacity
    if extras is not None and state is not None:  # prefix reuse, KV tiers, length distributions, on the shape chosen
        if latencies or extras.reuse is not None:
            cap, state = extras.settle(load, rep, cap, state)
        else:  # settle without reuse: its capacity is the replica's at the lengths' decoding context (no fixed point)
            ctx = L.decode_context_tokens(extras.lengths) if extras.lengths else None
            cap = capacity(rep, cached_tokens=0.0, decode_context_tokens=ctx)
    return rep, cap, state


def _estimate(arguments) -> ServingEstimate:
    """The estimate of :func:`estimate`'s arguments by name."""
    return _result(*_evaluated(_asked(arguments)))


@dataclass(frozen=True)
class LatencyProbe:
    """What :func:`estimate` says of a replica's fit, capacity, stability and latencies at a load, to the bit,
    without the rest of it (the KV-full rate, the iteration breakdown, an uncalibrated GPU's range): all that a
    search for the fewest replicas meeting latency targets reads of each count it tries
    (aisize.plan.replica_count). :meth:`estimate` completes it into the estimate itself. Units as
    :class:`ServingEstimate`'s."""

    feasible: bool
    stable: bool
    max_requests_per_s: float
    ttft_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_s: float
    tpot_p95_s: float
    tpot_p99_s: float
    evaluated: tuple = field(repr=False, compare=False)  # (Replica, capacity, ReplicaState) evaluated
    arguments: dict = field(repr=False, compare=False)  # estimate's arguments by name
    replicas: tuple = field(repr=False, compare=False)  # the candidate replicas (Asked.replicas), for probe(replicas=)

    def estimate(self) -> ServingEstimate:
        """The :func:`estimate` of the same arguments, from the replica and state already evaluated."""
        est = _result(*self.evaluated)
        if est.uncalibrated and est.feasible and est.stable:
            est = _uncalibrated_range(est, self.arguments)
        return est


def probe(model, accelerator, *, replicas: tuple | None = None, **kwargs) -> LatencyProbe:
    """:func:`estimate`'s fit, capacity, stability and latencies, the same figures to the last bit (the same
    replica, load and state, read by :func:`_latencies`), without the rest of the estimate. ``kwargs`` are
    :func:`estimate`'s. ``replicas``: those of a probe of the same arguments at another request rate, length CV or
    length distribution (:attr:`LatencyProbe.replicas`, :func:`candidate_replicas`): a replica is the same at any
    (:func:`_asked`), so they are not built again and their capacities, computed once, are read again; ignored
    without a rate or with a concurrency."""
    asked = inspect.signature(estimate).bind(model, accelerator, **kwargs)
    asked.apply_defaults()
    arguments = dict(asked.arguments)
    again = replicas is not None and arguments["requests_per_s"] is not None and arguments["concurrency"] is None
    a = _asked_at_rate(arguments, replicas) if again else _asked(arguments)
    evaluated = _evaluated(a)
    cap = evaluated[1]
    fits, stable, *figures = _latencies(cap, evaluated[2])
    return LatencyProbe(fits, stable, float(cap.state.requests_per_s) if fits else 0.0, *figures,
                        evaluated=evaluated, arguments=arguments, replicas=a.replicas)


def candidate_replicas(model, accelerator, **kwargs) -> tuple:
    """The candidate replicas :func:`estimate` evaluates for its arguments (``kwargs``, no rate or concurrency)
    under a load (the engine resolved as at a rate): what :func:`probe`, :func:`estimate_capacity` and
    :func:`replica_estimate` take as ``replicas``, built once. The same at any rate, length CV, length
    distribution, prompt reuse or KV tiers (the load's and the workload's, not the replica's: :func:`_asked`)."""
    asked = inspect.signature(estimate).bind(model, accelerator, **kwargs)
    asked.apply_defaults()
    arguments = dict(asked.arguments) | dict(requests_per_s=None, concurrency=None, prefix=None, kv_tiers=None,
                                             length_distribution=None)
    arguments["engine"] = resolve_engine(arguments["engine"], flat_out=False)  # as it runs under a load
    return _asked(arguments).replicas


def replica_estimate(model, accelerator, *, replicas: tuple | None = None, **kwargs) -> ServingEstimate | None:
    """The estimate of :func:`estimate`'s arguments (no rate or concurrency: ``kwargs`` are the rest) with its
    replica as it runs under a load (the engine resolved as at a rate) and flat out: the replica, its capacity,
    limits and speculation, all that a latency curve of an estimate reads (:mod:`.curves`), the same as the
    estimate's at any rate, without a queue solved at one. ``replicas``: :func:`candidate_replicas` of the same
    arguments (built once). None where that is not so: more than one candidate (a shape search picks one at the
    load), or prompt reuse or a length distribution (their state at a rate enters the curve). Its latencies, rate
    and batch are flat out's: never read them as a rate's (the queue at a rate is :func:`probe`'s)."""
    for name in ("requests_per_s", "concurrency"):
        if kwargs.get(name) is not None:
            raise ValueError(f"{name}={kwargs[name]!r}: replica_estimate is the replica at no load in particular; "
                             f"give no requests_per_s or concurrency (probe or estimate for a load)")
    if any(kwargs.get(k) is not None for k in ("prefix", "kv_tiers", "length_distribution")):
        return None
    reps = replicas if replicas is not None else candidate_replicas(model, accelerator, **kwargs)
    if len(reps) != 1:
        return None
    rep = reps[0]
    cap = rep.capacity
    return _result(rep, cap, flat_out(rep, cap) if bool(cap.memory.fits) else None)


def _asked_at_rate(a, replicas: tuple) -> Asked:
    """:func:`_asked` of arguments that differ only in the load (the rate, None flat out, and the length CV) and
    the workload (prefix reuse, KV tiers, lengths) from those ``replicas`` were built of: those replicas (what
    _asked builds of the rest: the engine as it runs under a load, its limits, the shapes), with the load and the
    workload at this rate, checked as _asked checks them."""
    rate = a["requests_per_s"]
    rate = _scalar("requests_per_s", checks.positive, rate, high=1e9) if rate is not None else None  # None: flat out
    cv = _scalar("length_cv", checks.non_negative, a["length_cv"], high=100.0)
    rep = replicas[0]
    workload = serving_workload(a["prefix"], a["kv_tiers"], a["length_distribution"], rep.input_tokens,
                                rep.output_tokens, rate, rep.costs.kv_bytes)
    return Asked(replicas, Load(rate, None, cv), workload)


def decode_step(model, accelerator, *, batch, context_tokens, tensor_parallel=1, weight_precision="bf16",
                kv_precision="fp8", calibration: Calibration | str | None = None, engine: str = "trtllm") -> dict:
    """One decode iteration of a static batch (no prefill in flight), by kind of work [s].

    What a static-batch benchmark measures between tokens: ``batch`` sequences at a
    mean context of ``context_tokens``, on ``tensor_parallel`` GPUs, replayed from a CUDA
    graph. The dict's ``seconds`` is the iteration; the other keys are its parts. ``engine``
    names whose GEMMs, measured on the GPU, time the linear layers (with a calibration whose
    ``gemm_source`` is "kernels"); TensorRT-LLM's stand in for an engine without tables (LMDeploy's
    TurboMind runs cuBLAS/CUTLASS GEMMs of the same shapes).
    """
    m = models.resolve(model)
    calib = resolve_calibration(calibration)
    b = _scalar("batch", checks.positive, batch, high=1e7)
    ctx = _scalar("context_tokens", checks.non_negative, context_tokens, high=MAX_TOKENS)
    tp = int(_scalar("tensor_parallel", checks.integer, tensor_parallel, high=4096))
    check_shape(m, tensor_parallel=tp, attention_dp=1, pipeline_parallel=1)
    formats = weight_formats(weight_precision)
    dev = device(accelerator, formats, kv_precision)
    costs = model_costs(m, formats, kv_precision)
    rates = achieved_rates(dev, calib, checks.choice("engine", engine, ("trtllm", "vllm", "sglang")))
    it = iteration_time(costs, rates, calib, decode_sequences=b, decode_context=ctx, prefill_tokens=0.0,
                        prefill_prompts=0.0, prompt_tokens=ctx, gpus=tp)
    parts = _breakdown(costs, rates, calib, ReplicaShape(tp), b, ctx, 0)
    return {"seconds": float(it.seconds), "uncalibrated": rates.uncalibrated, **parts}
