"""A disaggregated deployment as a value (:class:`PoolPair`) and the one model of its latencies (:func:`pools_state`).

Both :func:`aisize.serving.estimate_disaggregated` (given pools, scored on published runs by
``check_serving_disagg.py``) and :func:`aisize.serving.disaggregated.size_pools` (the planner's search over pool
counts) evaluate a pair through :func:`pools_state`, so the latency the sizing saw at the counts it buys is the
latency the plan shows (docs/serving-replica.md, "Disaggregated pools").

References
----------
.. [3] Allen 1990, "Probability, Statistics and Queueing Theory", sec. 6.4 (G/G/c, Allen-Cunneen).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.queueing import mgc_wait
from aisize.serving.engine import Launch
from aisize.serving.iteration import iteration_time
from aisize.serving.latency import littles_law_concurrency
from aisize.serving.replica import Replica
from aisize.serving.tails import QUANTILES, normal_quantile


@dataclass(frozen=True)
class PoolPair:
    """One disaggregated deployment's prefill and decode replicas and the KV link between them, built once: what
    every latency of its pools is computed from (docs/serving-replica.md) [count, s, B, B/s].

    The two replicas share the model's costs, the GPU's achieved rates, the calibration and the mean lengths;
    each has its own shape and limits (prefill: prompts and tokens per iteration; decode: its batch limit)."""

    prefill: Replica
    decode: Replica  # with the speculative decoding in force
    decode_launch: Launch  # how decode iterations launch (the sizing screen: every one graphed, host overlapped)
    prefill_prompts: int  # whole prompts a full prefill iteration carries, whole replica
    prefill_seconds: float  # that full prefill iteration [s]
    lone_prefill_seconds: float  # an iteration of one prompt [s]
    decode_slots: float  # sequences a decode replica holds at most (its batch limit and KV pool) [count]
    kv_bytes_per_request: float  # the prompt's KV cache, whole model [B]
    kv_link: str  # scale-up, scale-out or given
    kv_link_bytes_per_s: float  # achieved rate per prefill GPU, one direction (the link efficiency applied) [B/s]
    kv_transfer_seconds: float  # one request's KV cache over its prefill GPUs' links [s]

    @property
    def calibration(self):
        return self.decode.calibration

    @property
    def input_tokens(self):
        return self.decode.input_tokens

    @property
    def output_tokens(self):
        return self.decode.output_tokens

    @property
    def tokens_per_step(self) -> float:
        """Tokens a decode step emits: 1, or the speculative acceptance length."""
        spec = self.decode.speculation
        return 1.0 if spec is None else spec.acceptance_length

    @property
    def decode_steps(self) -> float:
        """A request's decode iterations, first token included (prefill emits it) [count]."""
        return max(1.0 + (self.output_tokens - 1.0) / self.tokens_per_step, 1.0)

    @property
    def head_seconds(self) -> float:
        """What every request's TTFT holds beside the prefill queue and iterations: time outside the GPU and
        its KV transfer [s]."""
        return self.calibration.request_seconds + self.kv_transfer_seconds

    def decode_seconds(self, batch):
        """A decode-only iteration of ``batch`` sequences at the mean context ``I + O/2`` (vectorized) [s]."""
        rep, b = self.decode, np.asarray(batch, dtype=float)
        i, o = rep.input_tokens, rep.output_tokens
        return iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=b, decode_context=i + 0.5 * o,
                              prefill_tokens=0.0 * b, prefill_prompts=0.0 * b, prompt_tokens=float(i),
                              graphed=self.decode_launch.graphed(b, b, False), overlap=self.decode_launch.overlap,
                              speculation=rep.speculation, **rep.shape.kwargs()).seconds



def pools_state(pair: PoolPair, prefill_replicas: int, decode_replicas: int, requests_per_s, *,
                slot_wait: bool = True) -> dict:
    """TTFT, TPOT (means, p95 and p99), decode batch and prefill utilisation of ``prefill_replicas`` and
    ``decode_replicas`` replicas of ``pair`` at open-loop throughputs (vectorized) [s, count].

    Keys ttft, ttft95, ttft99, tpot, tpot95, tpot99, batch, rho, t_pre, and ok (the prefill queue is stable). The
    prefill pool is a queue of ``replicas x prompts per iteration`` slots with deterministic service, its wait at a
    quantile from the M/M/c tail scaled to Allen-Cunneen's mean [3]; a lone prompt runs in a smaller iteration than
    a full one. The decode batch is Little's law on a replica's share, up to its slots, and at a quantile the
    Poisson batch's ``B + z·sqrt(B)`` (:func:`~aisize.serving.tails.normal_quantile`), at most its slots; with
    ``slot_wait`` (open loop: arrivals at random) a request waits for a free slot as in an M/D/c queue over the
    slots, a wait in its TTFT. A closed loop holds no more requests than its clients, and the caller queues
    those beyond the pools' capacity itself."""
    x = np.asarray(requests_per_s, dtype=float)
    t_full, t_one, slots = pair.prefill_seconds, pair.lone_prefill_seconds, pair.decode_slots
    servers = prefill_replicas * pair.prefill_prompts
    ok, _, wq, *wq_q = mgc_wait(np.maximum(x, 1e-12), t_full, servers, service_cv=0.0, quantiles=QUANTILES)
    rho = np.minimum(x * t_full / servers, 1.0)
    t_pre = t_one + (t_full - t_one) * rho  # a lone prompt early, full iterations near saturation
    steps, tau = pair.decode_steps, pair.tokens_per_step
    if steps > 1:
        b = littles_law_concurrency(x / decode_replicas * (steps - 1.0), pair.decode_seconds, slots)
    else:
        b = 0.0 * x
    head = pair.calibration.request_seconds + t_pre + pair.kv_transfer_seconds
    t_dec = pair.decode_seconds(np.maximum(b, 1e-9))
    # a request holds one of a decode replica's slots for its decode iterations; with every slot busy it waits for
    # one before its first decode step (its first token streams from there): M/D/c over the slots [3]
    wd, wd_q = np.zeros(np.shape(t_dec)), [np.zeros(np.shape(t_dec))] * len(QUANTILES)
    if slot_wait and steps > 1:
        ok_d, _, wd, *wd_q = mgc_wait(np.maximum(x / decode_replicas, 1e-12), (steps - 1.0) * t_dec,
                                      max(np.floor(slots), 1.0), service_cv=0.0, quantiles=QUANTILES)
        ok = ok & ok_d
    out = dict(ok=ok, ttft=head + wq + wd, tpot=t_dec / tau, batch=b, rho=rho, t_pre=t_pre)
    for q, wait_q, wait_dq in zip(QUANTILES, wq_q, wd_q):
        # the prefill queue's and the decode slots' waits at their q-quantiles (summed: a bound); the decode batch,
        # Poisson, at B + z·sqrt(B), at most the slots (the rest wait for one)
        b_q = np.minimum(b + normal_quantile(q) * np.sqrt(np.maximum(b, 0.0)), slots)
        out[f"ttft{q * 100:.0f}"] = head + wait_q + wait_dq
        out[f"tpot{q * 100:.0f}"] = pair.decode_seconds(np.maximum(b_q, 1e-9)) / tau
    return out


__all__ = ["PoolPair", "pools_state"]
