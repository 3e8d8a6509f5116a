"""A closed-loop benchmark run on disaggregated pools: ``prompts`` requests, ``C`` in flight, all sent at once.

The published disaggregated runs are benchmark runs, not steady states: the client sends ``10·C`` prompts at an
infinite request rate behind a semaphore of ``C`` and divides the output tokens by the time from its first send to
its last completion [1, 2]. The run starts with all ``C`` prompts queued at the prefill pool at once, so the decode
pool fills at the prefill pool's pace, and it ends with the pools draining as the last requests finish; the mean
TTFT carries the start's queue and the throughput and the decode batch the start's and the end's idle slots.
:func:`aisize.serving.estimate_disaggregated` gives the steady state of the same pools; with ``prompts`` it gives
this run instead (docs/calibration-disagg.md, "The decode pool's batch at high concurrency").

:func:`benchmark_run` replays such a run on a :class:`~aisize.serving.pool_pair.PoolPair`, event by event, with
nothing fitted: a prefill replica runs iterations of up to its ``prefill_prompts`` waiting prompts (the lone
prompt's to the full iteration's seconds, linear in the count, as :func:`~aisize.serving.pool_pair.pools_state`
interpolates them by load); a prompt's KV cache reaches the decode pool its fixed time and transfer later and
waits there, first come first served, for a slot on the decode replica with the fewest requests; a decode replica
steps at ``PoolPair.decode_seconds`` of its batch, each step emitting the speculative acceptance length; a
finished request's client sends the next prompt at once. TTFT is a request's time from its send to its admission
to a decode slot (what the runs show: above the slots the waiting requests' TTFT holds the wait); TPOT its decode
time over its output tokens less one. Output lengths are uniform in ``[r·L, L]`` with mean ``output_tokens``
(the client's ``--random-range-ratio r``); prompts are of the mean length.

References
----------
.. [1] NVIDIA/srt-slurm ``src/srtctl/benchmarks/scripts/sa-bench/bench.sh`` @75f6e32a (``--num-prompts``
       ``concurrency * 10``, ``--request-rate inf``, ``--max-concurrency``, ``--random-range-ratio 0.8``) and its
       ``benchmark_serving.py`` (``asyncio.Semaphore(max_concurrency)``; ``benchmark_duration`` from the first send
       to the last completion; mean TPOT per request as ``(latency - ttft) / (output_len - 1)``).
.. [2] SemiAnalysisAI/InferenceX ``benchmarks/multi_node/amd_utils/bench.sh`` (the same client, ``10·C`` prompts).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from aisize.serving.tails import QUANTILES

MAX_PROMPTS = 2_000_000  # events grow with the prompts: a bound on one run's work


@dataclass(frozen=True)
class RunFigures:
    """A benchmark run's figures, whole deployment [count, 1/s, s]."""

    prompts: int
    duration_s: float  # first send to last completion
    requests_per_s: float  # prompts / duration
    output_tokens_per_s: float  # output tokens / duration
    ttft_s: float  # means over the requests
    tpot_s: float
    ttft_quantile_s: tuple  # at tails.QUANTILES (p95, p99)
    tpot_quantile_s: tuple
    decode_batch: float  # requests decoding per decode replica, averaged over the run


def output_lengths(output_tokens: float, prompts: int, range_ratio: float) -> np.ndarray:
    """``prompts`` output lengths uniform in ``[r·L, L]`` with mean ``output_tokens`` (at least 2 tokens), on
    evenly spaced quantiles in a fixed shuffled order: the same run every call [tokens]."""
    top = output_tokens / (0.5 * (1.0 + range_ratio))
    quantiles = (np.arange(prompts) + 0.5) / prompts
    lengths = np.maximum(np.round(top * (range_ratio + (1.0 - range_ratio) * quantiles)), 2.0)
    return lengths[np.random.default_rng(0).permutation(prompts)]


def benchmark_run(pair, prefill_replicas: int, decode_replicas: int, concurrency: int, prompts: int, *,
                  range_ratio: float = 1.0) -> RunFigures:
    """Replay a closed-loop benchmark run of ``prompts`` requests, ``concurrency`` in flight, all sent at once,
    on ``prefill_replicas`` and ``decode_replicas`` replicas of ``pair`` (module docstring) [count, s]."""
    p_n, d_n, c, n = int(prefill_replicas), int(decode_replicas), int(concurrency), int(prompts)
    slots = max(int(math.floor(pair.decode_slots)), 1)
    q, t_full, t_one = int(pair.prefill_prompts), pair.prefill_seconds, pair.lone_prefill_seconds
    head = pair.calibration.request_seconds + pair.kv_transfer_seconds
    tau = pair.tokens_per_step
    step = np.asarray(pair.decode_seconds(np.maximum(np.arange(slots + 1, dtype=float), 1e-9)), dtype=float)
    outs = output_lengths(float(pair.output_tokens), n, range_ratio)
    send, admitted, finished = np.zeros(n), np.full(n, np.nan), np.full(n, np.nan)
    waiting, ready = deque(range(min(c, n))), deque()  # the prefill queue; prefilled (ready time, request)
    sent = len(waiting)
    ids = [np.zeros(0, dtype=np.int64) for _ in range(d_n)]  # each decode replica's requests ...
    left = [np.zeros(0) for _ in range(d_n)]  # ... and the tokens each has still to emit
    prefill_busy, decode_busy = [False] * p_n, [False] * d_n
    events, order, batch_seconds = [], 0, 0.0

    def push(t, kind, who):
        nonlocal order
        heapq.heappush(events, (t, order, kind, who))
        order += 1

    def start_prefills(t):
        for k in range(p_n):
            if not prefill_busy[k] and waiting:
                batch = [waiting.popleft() for _ in range(min(q, len(waiting)))]
                prefill_busy[k] = True
                push(t + t_one + (t_full - t_one) * (len(batch) - 1) / max(q - 1, 1), "prefill", (k, batch))

    def admit_and_step(t):
        new = [[] for _ in range(d_n)]
        sizes = [len(x) for x in ids]
        while ready and ready[0][0] <= t:
            k = min(range(d_n), key=sizes.__getitem__)  # the replica with the fewest requests
            if sizes[k] >= slots:
                break
            i = ready.popleft()[1]
            admitted[i] = t
            new[k].append(i)
            sizes[k] += 1
        for k in range(d_n):
            if new[k]:
                ids[k] = np.concatenate([ids[k], np.asarray(new[k], dtype=np.int64)])
                left[k] = np.concatenate([left[k], outs[new[k]] - 1.0])
            if not decode_busy[k] and ids[k].size:
                decode_busy[k] = True
                push(t + step[ids[k].size], "decode", k)
        if ready and not all(decode_busy):
            push(ready[0][0], "ready", None)  # an idle replica wakes when the next KV cache arrives

    start_prefills(0.0)
    t = 0.0
    while events:
        t, _, kind, who = heapq.heappop(events)
        if kind == "prefill":
            k, batch = who
            prefill_busy[k] = False
            ready.extend((t + head, i) for i in batch)
        elif kind == "decode":
            decode_busy[who] = False
            batch_seconds += ids[who].size * step[ids[who].size]
            left[who] = left[who] - tau
            done = left[who] <= 0.0
            if done.any():
                finished[ids[who][done]] = t
                ids[who], left[who] = ids[who][~done], left[who][~done]
                more = min(int(done.sum()), n - sent)  # each finished client sends its next prompt
                send[sent:sent + more] = t
                waiting.extend(range(sent, sent + more))
                sent += more
        start_prefills(t)
        admit_and_step(t)
    ttft = admitted - send
    tpot = (finished - admitted) / (outs - 1.0)
    return RunFigures(n, t, n / t, float(outs.sum()) / t, float(ttft.mean()), float(tpot.mean()),
                      tuple(float(np.quantile(ttft, x)) for x in QUANTILES),
                      tuple(float(np.quantile(tpot, x)) for x in QUANTILES), batch_seconds / t / d_n)


__all__ = ["RunFigures", "benchmark_run", "output_lengths"]
