"""A discrete-event simulation of one replica's continuous-batching scheduler (simpy).

It checks the closed forms of :mod:`.steady` and :mod:`.latency` with the same
iteration-time model, so a disagreement points at the queueing and batching
approximations, not at the roofline. The scheduler is the one the closed forms
describe (Orca/vLLM/TensorRT-LLM iteration-level scheduling [1, 2]):

- each iteration, every running sequence past its prefill decodes one token;
- then waiting requests are admitted first-come first-served while the batch limit,
  the KV pool (blocks for the whole request when the engine reserves them) and the
  token budget allow; without chunked prefill a prompt must fit the budget whole and
  the first that does not ends the admission [3]; with chunking the budget left is
  given to prefilling prompts in order;
- a prompt whose prefill completes samples its first token (TTFT); a request frees
  its KV blocks after its last token.

Arrivals are Poisson (or all at once, as in a max-throughput benchmark); lengths
are fixed or gamma-distributed with a coefficient of variation.

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


@dataclass
class _Request:
    arrival: float
    prompt: int
    output: int
    kv_tokens: int  # tokens of KV reserved
    prefilled: int = 0
    generated: int = 0
    first_token: float = math.nan
    done: float = math.nan
    cached: int = 0  # prompt tokens found in a KV cache: not prefilled, still attended to
    tag: object = None  # the request's class (e.g. the tier its history came from), for by_tag
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
    concurrency: float  # mean requests admitted
    ttft_by_tag: dict = field(default_factory=dict)  # mean TTFT of the requests of each tag [s]


def _lengths(rng, mean, cv, n):
    if cv <= 0:
        return np.full(n, int(mean))
    shape = 1.0 / cv**2
    return np.maximum(np.rint(rng.gamma(shape, mean / shape, n)), 1).astype(int)


def simulate(costs, rates, calib, *, input_tokens, output_tokens, requests_per_s=None, requests=2000,
             max_batch_size, max_num_tokens, kv_pool_tokens, chunked_prefill, reserve_full_sequence=True,
             block_tokens=32, shape, length_cv=0.0, warmup_share=0.2, seed=1, lengths=None, source=None,
             on_kv=None, launch=None, cooldown_share=0.0) -> SimulationResult:
    """Run the scheduler over ``requests`` requests and measure throughput and latencies.

    Parameters
    ----------
    costs, rates, calib : the iteration model's inputs (see :func:`~aisize.serving.iteration.iteration_time`)
    input_tokens, output_tokens : mean lengths [tokens]
    requests_per_s : Poisson arrival rate; None: every request arrives at t = 0 (max throughput)
    requests : requests simulated [count]
    max_batch_size, max_num_tokens : the engine's limits (whole replica)
    kv_pool_tokens : KV tokens the replica holds [tokens]
    chunked_prefill, reserve_full_sequence, block_tokens : scheduler policy
    shape : :class:`~aisize.serving.shapes.ReplicaShape`
    length_cv : coefficient of variation of both lengths (gamma-distributed); 0: fixed
    warmup_share : share of the first requests left out of the statistics
    seed : random seed (the run is reproducible)
    lengths : :class:`~aisize.serving.lengths.Lengths` to draw prompts and outputs from (instead of length_cv)
    source : a request source instead of the Poisson arrivals: ``source(env, submit)`` is a simpy process
        calling ``submit(prompt, output, cached=0, tag=None, arrival=None)``, which queues a request and returns it
        (its ``finished`` event fires at its last token); ``source.requests`` is how many it sends
    on_kv : called with the KV tokens the running requests hold after every change (a cache's HBM tier)
    launch : the engine's CUDA-graph and host-overlap behaviour (:class:`~aisize.serving.engine.Launch`), as
        the closed forms apply it; None: every iteration graphed and overlapped
    cooldown_share : share of the last requests (by arrival) left out: they meet a draining replica, which
        matters when a long-tailed output keeps a few requests running long after the others
    """
    n = int(checks.scalar("requests", checks.integer("requests", requests if source is None else source.requests,
                                                     low=10, high=10**7)))
    rng = np.random.default_rng(seed)
    if lengths is not None:
        prompts, outputs = lengths.input.sample(rng, n), lengths.output.sample(rng, n)
    else:
        prompts = _lengths(rng, input_tokens, length_cv, n)
        outputs = _lengths(rng, output_tokens, length_cv, n)
    gaps = (np.zeros(n) if requests_per_s is None
            else rng.exponential(1.0 / checks.positive("requests_per_s", requests_per_s), n))
    env = simpy.Environment()
    waiting, running, finished = deque(), [], []
    arrived = env.event()
    stats = {"iterations": 0, "busy": 0.0, "batch_sum": 0.0}
    kw = shape.kwargs()

    def blocks(tokens):
        return math.ceil(tokens / block_tokens) * block_tokens

    def submit(prompt, output, cached=0, tag=None, arrival=None):
        nonlocal arrived
        reserve = prompt + (output if reserve_full_sequence else 1)
        cached = int(min(cached, prompt - 1))  # the last prompt token is always computed (it samples)
        r = _Request(env.now if arrival is None else arrival, int(prompt), int(output), blocks(reserve),
                     prefilled=cached, cached=cached, tag=tag, finished=env.event())
        waiting.append(r)
        if not arrived.triggered:
            arrived.succeed()
        return r

    def arrivals():
        nonlocal arrived
        for k in range(n):
            if gaps[k] > 0:
                yield env.timeout(gaps[k])
            reserve = prompts[k] + (outputs[k] if reserve_full_sequence else 1)
            waiting.append(_Request(env.now, int(prompts[k]), int(outputs[k]), blocks(reserve)))
            if not arrived.triggered:
                arrived.succeed()

    def engine():
        nonlocal arrived
        used_kv = 0
        while len(finished) < n:
            if not waiting and not running:
                arrived = env.event()
                yield arrived
            head = waiting[0] if waiting else None
            if not running and head and not chunked_prefill and head.prompt - head.cached > max_num_tokens:
                raise ValueError(f"a prompt of {waiting[0].prompt:,} tokens exceeds max_num_tokens={max_num_tokens:,} "
                                 f"and prefills are not chunked: it can never be admitted")
            if not running and waiting and waiting[0].kv_tokens > kv_pool_tokens:
                raise ValueError(f"a request of {waiting[0].kv_tokens:,} KV tokens exceeds kv_pool_tokens="
                                 f"{kv_pool_tokens:,.0f}: it can never be admitted")
            decoding = [r for r in running if r.prefilled >= r.prompt]
            budget = max_num_tokens - len(decoding)
            batch = len(running)
            # admit in order: KV blocks, batch slots, and (unchunked) the whole prompt within the budget
            while waiting and batch < max_batch_size:
                r = waiting[0]
                if used_kv + r.kv_tokens > kv_pool_tokens or (not chunked_prefill and r.prompt - r.cached > budget):
                    break
                waiting.popleft()
                running.append(r)
                used_kv += r.kv_tokens
                batch += 1
                if not chunked_prefill:
                    budget -= r.prompt - r.cached
            if on_kv is not None:
                on_kv(used_kv)
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
            ctx = float(np.mean([r.prompt + r.generated for r in decoding])) if decoding else 0.0
            # (chunks of prompts none of which completes still run through every layer: a vanishing prompt
            # count keeps their tokens in the iteration model without sampling or attention)
            mode = {} if launch is None else dict(
                graphed=launch.graphed(len(decoding), len(decoding) + prefill_tokens, prefill_tokens > 0),
                overlap=launch.overlap)
            t = float(iteration_time(costs, rates, calib, decode_sequences=float(len(decoding)),
                                     decode_context=ctx, prefill_tokens=float(prefill_tokens),
                                     prefill_prompts=float(sampling) if sampling or not prefill_tokens else 1e-9,
                                     prompt_tokens=math.sqrt(sq / sampling) if sampling else 1.0, **kw, **mode).seconds)
            stats["iterations"] += 1
            stats["busy"] += t
            stats["batch_sum"] += len(running)
            yield env.timeout(t)
            for r in list(running):
                if id(r) in chunk:
                    r.prefilled += chunk[id(r)]
                    if r.prefilled >= r.prompt:
                        r.first_token, r.generated = env.now, 1
                elif r.prefilled >= r.prompt:
                    r.generated += 1
                if r.prefilled >= r.prompt and r.generated >= r.output:
                    r.done = env.now
                    running.remove(r)
                    used_kv -= r.kv_tokens
                    finished.append(r)
                    if r.finished is not None:
                        r.finished.succeed()
                    if on_kv is not None:
                        on_kv(used_kv)

    env.process(arrivals() if source is None else source(env, submit))
    env.run(until=env.process(engine()))  # a source may keep sending: stop with the n-th finished request
    return _measure(finished, warmup_share, stats, cooldown_share)


def _measure(finished, warmup_share, stats, cooldown_share=0.0) -> SimulationResult:
    done = sorted(finished, key=lambda r: r.arrival)
    keep = done[int(len(done) * warmup_share):len(done) - int(len(done) * cooldown_share)]
    ttft = np.array([r.first_token - r.arrival for r in keep])
    tpot = np.array([(r.done - r.first_token) / (r.output - 1) for r in keep if r.output > 1])
    tags = {r.tag for r in keep if r.tag is not None}
    by_tag = {t: float(np.mean([r.first_token - r.arrival for r in keep if r.tag == t])) for t in tags}
    start, end = min(r.arrival for r in keep), max(r.done for r in keep)
    # throughput over the measured window: tokens of the kept requests over the time they span
    out_tokens = sum(r.output for r in keep)
    span = end - start
    return SimulationResult(len(keep), out_tokens / span, len(keep) / span, float(ttft.mean()),
                            float(np.percentile(ttft, 95)), float(tpot.mean()) if tpot.size else 0.0,
                            float(np.percentile(tpot, 95)) if tpot.size else 0.0,
                            stats["busy"] / max(stats["iterations"], 1),
                            stats["batch_sum"] / max(stats["iterations"], 1), by_tag)


def simulate_estimate(est, *, requests_per_s=None, requests=2000, length_cv=0.0, seed=1,
                      calibration=None, lengths=None, cooldown_share=0.0) -> SimulationResult:
    """:func:`simulate` the replica of a :class:`~aisize.serving.ServingEstimate` with its engine's limits.

    ``requests_per_s`` is the rate at this replica (None: all requests at once); ``lengths`` draws the
    prompts and outputs from :class:`~aisize.serving.lengths.Lengths`.
    """
    from aisize import models
    from aisize.serving.calibration import CALIBRATION
    from aisize.serving.costs import model_costs
    from aisize.serving.engine import ENGINES
    from aisize.serving.hardware import device
    from aisize.serving.iteration import achieved_rates
    from aisize.serving.shapes import ReplicaShape

    cal = calibration or CALIBRATION
    engine = ENGINES[est.engine]
    m = est.model_record or models.resolve(est.model)
    dev = device(est.accelerator_record or est.accelerator, est.weight_precision, est.kv_precision)
    costs = model_costs(m, est.weight_precision, est.kv_precision)
    groups = est.attention_dp * est.pipeline_parallel
    kv_split = min(est.tensor_parallel // est.attention_dp, costs.kv_heads) * est.pipeline_parallel
    pool_tokens = est.kv_pool_bytes * kv_split * est.attention_dp / (costs.kv_bytes_per_token_full
                                                                     + costs.kv_bytes_per_token_window)
    return simulate(costs, achieved_rates(dev, cal), cal, input_tokens=est.input_tokens,
                    output_tokens=est.output_tokens, requests_per_s=requests_per_s, requests=requests,
                    max_batch_size=est.max_batch_size * groups, max_num_tokens=est.max_num_tokens * groups,
                    kv_pool_tokens=pool_tokens, chunked_prefill=engine.chunked_prefill,
                    reserve_full_sequence=engine.reserve_full_sequence, block_tokens=engine.block_tokens,
                    shape=ReplicaShape(est.tensor_parallel, est.attention_dp, est.pipeline_parallel),
                    length_cv=length_cv, warmup_share=0.0 if requests_per_s is None else 0.2, seed=seed,
                    lengths=lengths, launch=engine.launch(est.max_batch_size * groups), cooldown_share=cooldown_share)
