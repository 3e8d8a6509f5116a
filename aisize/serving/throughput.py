"""Maximum throughput of one replica: the concurrency its limits allow, and its steady state.

At an unbounded request rate (every request waiting from the start, as in a
max-throughput benchmark) a replica runs at the largest concurrency its engine
admits: the batch limit, the KV pool's full-length sequences, and the token
budget (see :mod:`aisize.serving.engine` and :mod:`aisize.serving.steady`). With
attention data parallelism each group schedules its own batch, so the batch
limit and token budget apply per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.serving.engine import trtllm_bench_kv_requests, trtllm_bench_limits
from aisize.serving.memory import ReplicaMemory, replica_memory
from aisize.serving.prefix import prefill_work
from aisize.serving.steady import SteadyState, steady_state, token_budget_concurrency


UNLIMITED_BATCH = 10**6  # no batch limit of its own: the KV pool decides
DEFAULT_TOKENS = 8192  # a token budget when an engine row gives none


@dataclass(frozen=True)
class EngineLimits:
    """The scheduler limits in force for a replica (per attention-DP group) [count, tokens]."""

    max_batch_size: object
    max_num_tokens: object


@dataclass(frozen=True)
class MaxThroughput:
    """A replica at its largest admissible concurrency."""

    limits: EngineLimits
    memory: ReplicaMemory
    concurrency_by_batch_limit: object
    concurrency_by_kv: object
    concurrency_by_tokens: object
    state: SteadyState

    @property
    def limited_by(self):
        """Which limit sets the concurrency: 'batch size', 'KV cache' or 'token budget'."""
        c = np.stack(np.broadcast_arrays(self.concurrency_by_batch_limit, self.concurrency_by_kv,
                                         self.concurrency_by_tokens))
        names = np.array(["batch size", "KV cache", "token budget"])
        out = names[np.argmin(c, axis=0)]
        return str(out) if out.ndim == 0 else out


def engine_limits(costs, device, engine, *, input_tokens, output_tokens, shape, max_batch_size=None,
                  max_num_tokens=None) -> EngineLimits:
    """The engine's limits per attention-DP rank: as given, else its own; trtllm-bench chooses missing ones by
    its heuristic for this workload, other engines leave a missing batch limit to the KV pool. An engine whose
    flags are the replica's (SGLang) splits them among the shape's attention-DP ranks."""
    mbs = engine.rank_limit(max_batch_size if max_batch_size is not None else engine.max_batch_size,
                            shape.attention_dp)
    mnt = engine.rank_limit(max_num_tokens if max_num_tokens is not None else engine.max_num_tokens,
                            shape.attention_dp)
    if not engine.key.startswith("trtllm-bench"):
        mbs = UNLIMITED_BATCH if mbs is None else mbs
        mnt = DEFAULT_TOKENS if mnt is None else mnt
    if mbs is None or mnt is None:
        req = trtllm_bench_kv_requests(costs, device.memory_bytes, shape.gpus, shape.attention_tp,
                                       engine.kv_memory_fraction, input_tokens, output_tokens)
        h_bs, h_nt = trtllm_bench_limits(np.maximum(req, 1.0), input_tokens, output_tokens,
                                         pipeline_parallel=shape.pipeline_parallel,
                                         chunked_prefill=engine.chunked_prefill)
        mbs = h_bs if mbs is None else mbs
        mnt = h_nt if mnt is None else mnt
    elif not engine.chunked_prefill:
        mnt = np.maximum(mnt, input_tokens)  # an unchunked prompt must fit one iteration
    return EngineLimits(mbs, mnt)


def max_throughput(costs, device, rates, calib, engine, limits: EngineLimits, *, input_tokens, output_tokens,
                   shape, speculation=None, cached_tokens=0.0, decode_context_tokens=None) -> MaxThroughput:
    """Steady state of a replica at the largest concurrency its limits and memory allow.

    With p pipeline stages, p micro-batches are in flight, each within the limits. A cached prompt
    prefix (``cached_tokens``) is held in the KV pool but not computed, so it counts in memory and
    not in the token budget (see :func:`~aisize.serving.steady.steady_state`).
    """
    dp = shape.attention_dp * shape.pipeline_parallel  # independently scheduled batches
    extra = 0.0 if speculation is None else speculation.draft_weights_bytes / shape.gpus
    mem = replica_memory(costs, engine, device.memory_bytes, sequence_tokens=input_tokens + output_tokens,
                         max_num_tokens=limits.max_num_tokens, gpus=shape.tensor_parallel,
                         attention_dp=shape.attention_dp, pipeline_parallel=shape.pipeline_parallel,
                         extra_weights_bytes=extra, expert_parallel=shape.expert_parallel)
    by_batch = limits.max_batch_size * dp
    new_tokens = prefill_work(input_tokens, cached_tokens)[0]
    by_tokens = token_budget_concurrency(new_tokens, output_tokens, limits.max_num_tokens,
                                         whole_prompts=not engine.chunked_prefill) * dp
    by_kv = mem.sequences
    concurrency = np.maximum(np.minimum(np.minimum(by_batch, by_kv), by_tokens), 1.0)
    state = steady_state(costs, rates, calib, concurrency=concurrency, input_tokens=input_tokens,
                         output_tokens=output_tokens, max_num_tokens=limits.max_num_tokens * dp,
                         chunked_prefill=engine.chunked_prefill, shape=shape,
                         launch=engine.launch(limits.max_batch_size, dp), speculation=speculation,
                         cached_tokens=cached_tokens, decode_context_tokens=decode_context_tokens)
    return MaxThroughput(limits, mem, by_batch, by_kv, by_tokens, state)
