"""A discrete-event simulation of one replica's continuous-batching scheduler (simpy).

It checks the closed forms of :mod:`.steady` and :mod:`.latency` with the same
iteration-time model, so a disagreement points at the queueing and batching
approximations, not at the roofline. The scheduler is the one the closed forms
describe (Orca/vLLM/TensorRT-LLM iteration-level scheduling [1, 2]):

- each iteration, every running sequence past its prefill decodes one token; an engine that does not mix
  prefill into decode iterations (``mixes_prefill`` false in its ``data/engines.csv`` row: SGLang's own
  default) runs an iteration with prompt work alone, the decodes waiting for it
  (:attr:`~aisize.serving.engine.Engine.mixes_prefill`);
- then waiting requests are admitted first-come first-served while the batch limit,
  the KV pool (blocks for the whole request when the engine reserves them) and the
  token budget allow; without chunked prefill a prompt must fit the budget whole and
  the first that does not ends the admission [3]; with chunking the budget left is
  given to prefilling prompts in order;
- a prompt whose prefill completes samples its first token (TTFT); a request frees
  its KV blocks after its last token.

Arrivals are Poisson, a closed loop (a new request as one finishes), all at once (a
max-throughput benchmark) or a caller's source (sessions, :mod:`.simulate_reuse`);
lengths are fixed, gamma-distributed with a coefficient of variation, or drawn from
:class:`~aisize.serving.lengths.Lengths`. A prompt prefix found in a KV cache is held,
not prefilled.

References
----------
.. [1] Yu et al. 2022 (Orca), OSDI'22; Kwon et al. 2023 (vLLM), SOSP'23.
.. [2] Agrawal et al. 2024 (Sarathi-Serve), OSDI'24 (chunked prefill under a token budget).
.. [3] TensorRT-LLM ``microBatchScheduler.cpp`` / ``capacityScheduler.cpp`` (GUARANTEED_NO_EVICT).
.. [4] Team SimPy, "SimPy: discrete-event simulation for Python", simpy.readthedocs.io.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import simpy

from aisize import checks
from aisize.serving.iteration import iteration_time
from aisize.serving.prefix import prefill_work
from aisize.serving.replica import Load, Replica


@dataclass
class _Request:
    arrival: float
    prompt: int
    output: int
    kv_tokens: int  # tokens of KV reserved
    prefilled: int = 0
    generated: float = 0.0  # tokens out so far (a speculative step adds τ on average)
    visible: float = 0.0  # when the engine can see it (arrival + the request's fixed time)
    first_token: float = math.nan
    done: float = math.nan
    cached: int = 0  # prompt tokens found in a KV cache: not prefilled, still attended to
    tag: object = None  # the request's class (e.g. the tier its history came from), for ttft_by_tag
    finished: object = None  # a simpy event triggered at its last token (sessions wait on it)


@dataclass(frozen=True)
class SimulationResult:
    """Measured over the requests that arrived after the warm-up [1/s, s, count]."""

    requests: int
    output_tokens_per_s: float
    requests_per_s: float
    ttft_seconds: float
    ttft_p95_seconds: float
    tpot_seconds: float  # mean over requests of (last token - first token) / (output - 1)
    tpot_p95_seconds: float
    iteration_seconds: float  # mean
    concurrency: float  # mean requests admitted (time-weighted over the measured window)
    ttft_by_tag: dict = field(default_factory=dict)  # mean TTFT of the requests of each tag [s]


def _lengths(rng, mean, cv, n):
    if cv <= 0:
        return np.full(n, int(mean))
    shape = 1.0 / cv**2
    return np.maximum(np.rint(rng.gamma(shape, mean / shape, n)), 1).astype(int)


@dataclass(frozen=True)
class Run:
    """How one simulation runs, beyond its load (:class:`~aisize.serving.replica.Load`) [count, s]."""

    requests: int = 2000  # requests simulated (a source's own count replaces it)
    seed: int = 1  # random seed (the run is reproducible)
    warmup_share: float = 0.2  # share of the first requests left out of the statistics
    # share of the last requests (by arrival) left out: they meet a draining replica, which matters when a
    # long-tailed output keeps a few requests running long after the others
    cooldown_share: float = 0.0
    stagger_seconds: float = 0.0  # a closed loop's first requests spread over this span
    request_seconds: float | None = None  # a request's fixed time before the engine sees it (None: the calibration's)
    lengths: object = None  # aisize.serving.lengths.Lengths to draw prompts and outputs from (instead of length_cv)
    # a request source instead of the load's arrivals: ``source(env, submit)`` is a simpy process calling
    # ``submit(prompt, output, cached=0, tag=None, arrival=None)``, which queues a request and returns it (its
    # ``finished`` event fires at its last token); ``source.requests`` is how many it sends
    source: object = None
    on_kv: object = None  # called with the KV tokens the running requests hold after every change (an HBM tier)


def simulate(rep: Replica, load: Load, run: Run = Run()) -> SimulationResult:
    """Run the scheduler of replica ``rep`` under ``load`` and measure throughput and latencies.

    Parameters
    ----------
    rep : :class:`~aisize.serving.replica.Replica`: its costs, rates and calibration time the iterations; its
        engine's policy (chunked prefill, whole-request reservation, KV block size), its limits (whole replica:
        each attention-DP rank's times the ranks), KV pool, shape, launch and speculation drive the scheduler.
        With the launch's host overlap the next iteration's batch is chosen when this one starts, so a request
        that arrives meanwhile waits one more iteration; with speculation each decode step emits τ tokens
    load : :class:`~aisize.serving.replica.Load`: ``requests_per_s`` a Poisson rate (an open loop), or
        ``concurrency`` a closed loop (a new request sent the moment one finishes, the first ones spread over
        ``run.stagger_seconds``), neither: every request at t = 0; ``length_cv`` the coefficient of variation of
        both lengths (gamma-distributed around the replica's means; 0: fixed)
    run : :class:`Run`
    """
    groups = rep.groups
    batch_limit, token_limit = int(rep.limits.max_batch_size), int(rep.limits.max_num_tokens)
    max_batch_size, max_num_tokens = batch_limit * groups, token_limit * groups
    kv_pool_tokens, block_tokens = rep.pool_tokens, rep.engine.block_tokens
    chunked_prefill, reserve_full_sequence = rep.engine.chunked_prefill, rep.engine.reserve_full_sequence
    launch, speculation, costs, rates, calib = (rep.engine.launch(batch_limit, groups), rep.speculation, rep.costs,
                                                rep.rates, rep.calibration)
    requests_per_s, concurrency = load.requests_per_s, load.concurrency
    source, on_kv, stagger_seconds = run.source, run.on_kv, run.stagger_seconds
    request_seconds = calib.request_seconds if run.request_seconds is None else run.request_seconds
    lengths = run.lengths
    n = int(checks.scalar("requests", checks.integer("requests", run.requests if source is None else source.requests,
                                                     low=10, high=10**7)))
    if requests_per_s is not None and concurrency is not None:
        raise ValueError("requests_per_s and concurrency are both given: give one (an open or a closed loop)")
    rng = np.random.default_rng(run.seed)
    if lengths is not None:
        prompts, outputs = lengths.input.sample(rng, n), lengths.output.sample(rng, n)
    else:
        prompts = _lengths(rng, rep.input_tokens, load.length_cv, n)
        outputs = _lengths(rng, rep.output_tokens, load.length_cv, n)
    gaps = (np.zeros(n) if requests_per_s is None
            else rng.exponential(1.0 / checks.positive("requests_per_s", requests_per_s), n))
    c = None if concurrency is None else int(checks.scalar("concurrency", checks.integer("concurrency", concurrency,
                                                                                       high=10**6)))
    tau = 1.0 if speculation is None else speculation.acceptance_length
    verify = 1.0 if speculation is None else speculation.verify_tokens
    env = simpy.Environment()
    waiting, running, finished = deque(), [], []
    wake = [env.event()]
    stats = {"iterations": 0, "busy": 0.0, "sent": 0, "timeline": [], "last_send": None}
    kw = rep.shape.kwargs()

    graphs = {}  # (sequences, tokens, prefill) -> launch.graphed (a few distinct keys, asked every iteration)
    version = [0]  # bumped whenever the running set changes: the decode-only look-ahead is valid within one
    ahead = _DecodeAhead(tau)
    reported = [None]  # the KV tokens on_kv was last told

    def step_seconds(decoding, ctx, prefill_tokens, sampling, sq):
        """Iteration time(s) [s]: ``ctx`` a scalar, or an array of the coming decode-only iterations' contexts."""
        key = (decoding, decoding * verify + prefill_tokens, prefill_tokens > 0)
        if key not in graphs:
            graphs[key] = bool(launch.graphed(*key))
        # (chunks of prompts none of which completes still run through every layer: a vanishing prompt
        # count keeps their tokens in the iteration model without sampling or attention)
        return iteration_time(costs, rates, calib, decode_sequences=float(decoding), decode_context=ctx,
                              prefill_tokens=float(prefill_tokens),
                              prefill_prompts=float(sampling) if sampling or not prefill_tokens else 1e-9,
                              prompt_tokens=math.sqrt(sq / sampling) if sampling else 1.0, graphed=graphs[key],
                              overlap=launch.overlap, speculation=speculation if decoding else None, **kw).seconds

    def blocks(tokens):
        return math.ceil(tokens / block_tokens) * block_tokens

    def submit(prompt, output, cached=0, tag=None, arrival=None):
        reserve = prompt + (output if reserve_full_sequence else 1)
        cached = int(min(cached, prompt - 1))  # the last prompt token is always computed (it samples)
        r = _Request(env.now if arrival is None else arrival, int(prompt), int(output), blocks(reserve),
                     prefilled=cached, visible=env.now + request_seconds, cached=cached, tag=tag,
                     finished=env.event())
        waiting.append(r)
        stats["sent"] += 1
        if c is not None and stats["sent"] >= n:
            stats["last_send"] = env.now
        if not wake[0].triggered:
            wake[0].succeed()
        return r

    def send(k):
        submit(int(prompts[k]), int(outputs[k]))

    def arrivals():
        if c is not None:  # closed loop: the first requests spread over one lifetime, then one per completion
            for k in range(min(c, n)):
                if k and stagger_seconds > 0:
                    yield env.timeout(stagger_seconds / c)
                send(k)
            return
        for k in range(n):
            if gaps[k] > 0:
                yield env.timeout(gaps[k])
            send(k)

    def scheduler():
        used_kv = 0
        seen_until = 0.0  # with overlap, this iteration's batch was chosen when the previous one started
        while len(finished) < n:
            if not waiting and not running:
                wake[0] = env.event()
                yield wake[0]
            now = env.now
            cutoff = seen_until if launch.overlap else now
            head = waiting[0] if waiting else None
            if not running and head and not chunked_prefill and head.prompt - head.cached > max_num_tokens:
                raise ValueError(f"a prompt of {head.prompt:,} tokens exceeds max_num_tokens={max_num_tokens:,} "
                                 f"and prefills are not chunked: it can never be admitted")
            if not running and waiting and waiting[0].kv_tokens > kv_pool_tokens:
                raise ValueError(f"a request of {waiting[0].kv_tokens:,} KV tokens exceeds kv_pool_tokens="
                                 f"{kv_pool_tokens:,.0f}: it can never be admitted")
            if not running and waiting and waiting[0].visible > cutoff:  # idle until the next one shows
                yield env.timeout(max(waiting[0].visible - now, 0.0) + 1e-9)
                seen_until = env.now
                continue
            decoding = [r for r in running if r.prefilled >= r.prompt]
            mixes = launch.mixes_prefill  # else a prefill iteration runs alone and the decodes wait for it
            budget = max_num_tokens - (len(decoding) * verify if mixes else 0)
            batch = len(running)
            # admit in order: KV blocks, batch slots, and (unchunked) the whole prompt within the budget
            while waiting and batch < max_batch_size and waiting[0].visible <= cutoff:
                r = waiting[0]
                if used_kv + r.kv_tokens > kv_pool_tokens or (not chunked_prefill and r.prompt - r.cached > budget):
                    break
                waiting.popleft()
                running.append(r)
                version[0] += 1
                used_kv += r.kv_tokens
                batch += 1
                if not chunked_prefill:
                    budget -= r.prompt - r.cached
            if on_kv is not None and used_kv != reported[0]:  # unchanged: the tier was resized to it already
                on_kv(used_kv)
                reported[0] = used_kv
            # prompt tokens this iteration: whole prompts, or chunks from the budget in order
            chunk, sampling, prefill_tokens, sq = {}, 0, 0, 0.0
            for r in running:
                if r.prefilled < r.prompt:
                    take = r.prompt - r.prefilled if not chunked_prefill else min(r.prompt - r.prefilled,
                                                                                   max(budget - prefill_tokens, 0))
                    if take <= 0:
                        continue
                    chunk[id(r)] = take
                    prefill_tokens += take
                    if r.prefilled + take >= r.prompt:
                        sampling += 1
                        sq += float(prefill_work(r.prompt, r.cached)[1]) ** 2
            if not chunk and decoding and len(decoding) == len(running):
                t = ahead.next(version[0], decoding, step_seconds)
            elif chunk and not mixes:
                t = float(step_seconds(0, 0.0, prefill_tokens, sampling, sq))
            else:
                ctx = sum(r.prompt + r.generated for r in decoding) / len(decoding) if decoding else 0.0
                t = float(step_seconds(len(decoding), ctx, prefill_tokens, sampling, sq))
            stats["iterations"] += 1
            stats["busy"] += t
            stats["timeline"].append((env.now, t, len(running)))
            seen_until = env.now
            yield env.timeout(t)
            if not chunk:  # decode only: every sequence gains τ tokens, then the finished leave in batch order
                for r in running:
                    if r.prefilled >= r.prompt:
                        r.generated += tau
            else:
                for r in running:
                    if id(r) in chunk:
                        r.prefilled += chunk[id(r)]
                        if r.prefilled >= r.prompt:
                            r.first_token, r.generated = env.now, 1
                    elif r.prefilled >= r.prompt and mixes:
                        r.generated += tau
            for r in [r for r in running if r.prefilled >= r.prompt and r.generated >= r.output]:
                r.done = env.now
                running.remove(r)
                version[0] += 1
                used_kv -= r.kv_tokens
                finished.append(r)
                r.finished.succeed()
                if on_kv is not None:
                    on_kv(used_kv)
                    reported[0] = used_kv
                if c is not None and stats["sent"] < n:
                    send(stats["sent"])

    env.process(arrivals() if source is None else source(env, submit))
    env.run(until=env.process(scheduler()))  # a source may keep sending: stop with the n-th finished request
    return _measure(finished, run.warmup_share, stats, run.cooldown_share)


class _DecodeAhead:
    """Times of the coming decode-only iterations of one unchanged running set, from one vectorised call.

    While no request is admitted or finishes, every running sequence gains τ tokens per iteration, so the
    k-th coming iteration's mean context is (Σ context + k·m·τ) / m: the same sum the per-iteration mean
    takes (bit for bit when τ = 1, the contexts being whole numbers). The look-ahead runs to the first
    request's last token (the set changes there), at most :attr:`LIMIT` iterations; an admission drops it.
    """

    LIMIT = 256

    def __init__(self, tau):
        self.tau, self.key, self.times, self.k = tau, None, (), 0

    def next(self, version, decoding, step_seconds):
        if self.key != version or self.k >= len(self.times):
            m = len(decoding)
            total = sum(r.prompt + r.generated for r in decoding)
            left = min(math.ceil((r.output - r.generated) / self.tau) for r in decoding)
            k = np.arange(min(max(left, 1), self.LIMIT))
            ctx = (total + k * (m * self.tau)) / m
            self.key, self.times, self.k = version, np.broadcast_to(step_seconds(m, ctx, 0, 0, 0.0), ctx.shape), 0
            self.times = self.times.tolist()
        self.k += 1
        return self.times[self.k - 1]


def _measure(finished, warmup_share, stats, cooldown_share=0.0) -> SimulationResult:
    done = sorted(finished, key=lambda r: r.arrival)
    keep = done[int(len(done) * warmup_share):len(done) - int(len(done) * cooldown_share)]
    ttft = np.array([r.first_token - r.arrival for r in keep])
    tpot = np.array([(r.done - r.first_token) / (r.output - 1) for r in keep if r.output > 1])
    tags = {r.tag for r in keep if r.tag is not None}
    by_tag = {t: float(np.mean([r.first_token - r.arrival for r in keep if r.tag == t])) for t in tags}
    start, end = min(r.arrival for r in keep), max(r.done for r in keep)
    if stats.get("last_send") is not None and stats["last_send"] > start:
        # a closed loop drains after its last request is sent: count what completes while it is full
        end = stats["last_send"]
        out_tokens = sum(r.output for r in done if start < r.done <= end)
        completed = sum(1 for r in done if start < r.done <= end)
    else:  # throughput over the measured window: tokens of the kept requests over the time they span
        out_tokens, completed = sum(r.output for r in keep), len(keep)
    span = end - start
    t = np.array(stats["timeline"]) if stats["timeline"] else np.zeros((1, 3))
    inside = (t[:, 0] >= start) & (t[:, 0] < end)
    w = t[inside, 1] if inside.any() else np.ones(1)
    batch = float(np.sum(t[inside, 2] * w) / np.sum(w)) if inside.any() else 0.0
    iteration = float(np.mean(t[inside, 1])) if inside.any() else stats["busy"] / max(stats["iterations"], 1)
    return SimulationResult(len(keep), out_tokens / span, completed / span, float(ttft.mean()),
                            float(np.percentile(ttft, 95)), float(tpot.mean()) if tpot.size else 0.0,
                            float(np.percentile(tpot, 95)) if tpot.size else 0.0, iteration, batch, by_tag)


def simulate_replica(rep, *, requests_per_s=None, concurrency=None, requests=2000, length_cv=0.0, seed=1,
                     warmup_share=0.2, request_seconds=None, stagger_seconds=0.0, lengths=None, source=None,
                     on_kv=None, cooldown_share=0.0) -> SimulationResult:
    """:func:`simulate` a :class:`~aisize.serving.replica.Replica`: its costs, rates, engine policy and limits
    (whole replica: each attention-DP rank's times the ranks), KV pool, shape, launch and speculation.

    The keywords are the fields of :class:`~aisize.serving.replica.Load` (``requests_per_s``, ``concurrency``,
    ``length_cv``) and of :class:`Run` (the others; ``request_seconds`` None: the replica's calibration's).
    """
    return simulate(rep, Load(requests_per_s, concurrency, length_cv),
                    Run(requests=requests, seed=seed, warmup_share=warmup_share, cooldown_share=cooldown_share,
                        stagger_seconds=stagger_seconds, request_seconds=request_seconds, lengths=lengths,
                        source=source, on_kv=on_kv))


def simulate_estimate(est, *, requests_per_s=None, concurrency=None, requests=2000, length_cv=0.0, seed=1,
                      calibration=None, lengths=None, cooldown_share=0.0) -> SimulationResult:
    """:func:`simulate_replica` the replica of a :class:`~aisize.serving.ServingEstimate` (``est.replica``).

    ``requests_per_s`` is the rate at this replica, ``concurrency`` a closed loop's requests in flight
    (neither: all requests at once). The closed loop's first requests spread over one request lifetime.
    ``lengths`` draws the prompts and outputs from :class:`~aisize.serving.lengths.Lengths`.
    """
    from aisize.serving.estimate import replica_of

    stagger = est.e2e_s if concurrency is not None and np.isfinite(est.e2e_s) else 0.0
    return simulate_replica(replica_of(est, calibration), requests_per_s=requests_per_s, concurrency=concurrency,
                            requests=requests, length_cv=length_cv, seed=seed,
                            warmup_share=0.0 if requests_per_s is None and concurrency is None else 0.2,
                            stagger_seconds=stagger, lengths=lengths, cooldown_share=cooldown_share)
