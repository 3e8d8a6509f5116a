"""A replica under a closed-loop client: a fixed number of requests in flight, no think time.

Benchmarks that size for a latency target hold C requests in flight and send a new one the
moment one finishes (InferenceX, ``vllm bench serve --max-concurrency``, SGLang's
``bench_serving``, AIPerf's concurrency mode) [1, 2]. Unlike a Poisson stream (an open
loop, :mod:`.latency`), the number in the system never varies, so nothing waits for
admission while C fits the replica's slots (batch limit and KV pool):

- the batch holds the C requests but those on their way to it (the request's fixed time
  outside the GPU and the wait for the next scheduling step, a share of each request's life);
  on average ``B / O`` of them finish each iteration and are replaced, so the steady state is
  that of B requests with prefills spread over the iterations
  (:func:`~aisize.serving.steady.steady_state` with random arrivals);
- TPOT is the mean iteration (decode-only iterations and those that carry a prefill), over the
  tokens a step emits (more than one with speculative decoding); where the engine runs a prefill
  alone (``Engine.mixes_prefill`` False, SGLang's own default), the decodes wait for it (:mod:`.steady`);
- TTFT is the request's fixed time outside the GPU, the wait for the engine to take the
  request (the rest of the running iteration, length-biased, and one more iteration when
  the host has already scheduled the next one: an overlap scheduler), with TensorRT-LLM's
  attention-DP balancing the wait until every rank has a prompt
  (:func:`~aisize.serving.steady.balance_wait_iterations`), the whole iterations until the scheduler next
  takes requests in where it polls only every N (SGLang's ``--scheduler-recv-interval``,
  :meth:`~aisize.serving.engine.Launch.receive_wait_iterations`), then the iteration(s) that run its prefill;
- throughput follows from Little's law on the loop: ``C / (TTFT + (O - 1)·TPOT)``
  requests per second [3].

With more requests than slots the batch runs full and the rest wait for a slot, as many
request-lifetimes as it takes the replica to free ``C - slots`` slots.

References
----------
.. [1] SemiAnalysisAI/InferenceX ``utils/bench_serving/benchmark_serving.py``
       (``--max-concurrency`` semaphore, ``--request-rate inf``).
.. [2] vLLM ``benchmarks/benchmark_serving.py`` ``--max-concurrency``; NVIDIA AIPerf concurrency mode.
.. [3] Little 1961, Oper. Res. 9(3); Lazowska et al. 1984, "Quantitative System Performance",
       ch. 3 (the interactive response-time law, zero think time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.queueing import mgc_wait
from aisize.serving.engine import GRAPHED
from aisize.serving.iteration import prepare_iteration_time
from aisize.serving.prefix import prefill_work
from aisize.serving.steady import balance_wait_iterations, prepare_steady_state
from aisize.serving.tails import QUANTILES, normal_quantile, residual_quantile


@dataclass(frozen=True)
class ClosedLoopState:
    """A replica holding ``concurrency`` requests in flight (per replica) [count, 1/s, s]."""

    concurrency: object  # requests the client holds in flight
    batch: object  # of them, in the engine's batch
    requests_per_s: object
    iteration_seconds: object  # mean: the mean TPOT
    decode_iteration_seconds: object
    prefill_iteration_seconds: object
    ttft_seconds: object
    ttft_p95_seconds: object
    tpot_seconds: object
    tpot_p95_seconds: object
    ttft_p99_seconds: object
    tpot_p99_seconds: object
    queue_seconds: object  # mean wait for a slot (0 while C fits the slots)


def closed_loop_state(costs, rates, calib, *, concurrency, slots, input_tokens, output_tokens, max_num_tokens,
                      chunked_prefill, shape, launch=GRAPHED, speculation=None, cached_tokens=0.0,
                      decode_context_tokens=None) -> ClosedLoopState:
    """Throughput and mean/p95/p99 latencies of a replica under a closed loop of ``concurrency`` requests.

    Parameters
    ----------
    costs, rates, calib : as for :func:`~aisize.serving.iteration.iteration_time`
    concurrency : requests in flight, C (> 0) [count]
    slots : requests the replica admits at once (batch limit and KV pool) [count]
    input_tokens, output_tokens : mean lengths [tokens]
    max_num_tokens, chunked_prefill : the engine's token budget (whole replica) and prefill mode
    shape : :class:`~aisize.serving.shapes.ReplicaShape`
    launch : the engine's CUDA-graph and overlap behaviour (:class:`~aisize.serving.engine.Launch`)
    speculation : :class:`~aisize.serving.speculative.Speculation`, or None
    cached_tokens, decode_context_tokens : a cached prompt prefix and the decoding context, as for
        :func:`~aisize.serving.steady.steady_state`
    """
    c = np.asarray(concurrency, dtype=float)
    full = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    ctx = full + 0.5 * o if decode_context_tokens is None else decode_context_tokens
    i, attention = prefill_work(full, cached_tokens)
    cap = np.maximum(np.floor(slots), 1.0)
    outside = 0.0  # share of a request's life spent before the engine takes it (in flight, not in the batch)
    e2e_prev = before_prev = 0.0
    # what the loop's arguments fix, read once (the same figures as steady_state's and iteration_time's, to the bit)
    steady = prepare_steady_state(costs, rates, calib, input_tokens=full, output_tokens=o,
                                  max_num_tokens=max_num_tokens, chunked_prefill=chunked_prefill, shape=shape,
                                  arrivals="poisson", launch=launch, speculation=speculation,
                                  cached_tokens=cached_tokens, decode_context_tokens=decode_context_tokens)
    own_at = prepare_iteration_time(costs, rates, calib, decode_context=ctx, prompt_tokens=attention,
                                    overlap=launch.overlap, speculation=speculation, **shape.kwargs())
    for _ in range(4):  # the batch, its iterations and the time outside the batch depend on each other
        b = np.minimum(c * (1.0 - outside), cap)
        st = steady(np.maximum(b, 1e-9))
        mean, t0, t1, p = (st.iteration_seconds, st.decode_iteration_seconds, st.prefill_iteration_seconds,
                           st.prefill_share)
        tau = st.tokens_per_step
        steps = 1.0 + (o - 1.0) / tau
        decoding = b * (steps - 1.0) / steps
        # with mixing, the prompt shares the budget and the iteration with the decodes; without, it runs alone
        riding = decoding if launch.mixes_prefill else 0.0 * decoding
        room = np.maximum(max_num_tokens - riding * (1.0 if speculation is None else speculation.verify_tokens), 1.0)
        # the iteration that carries this request's prompt (a longer prompt spans several full iterations)
        own_tokens = np.minimum(i, room)
        graphed = launch.graphed(riding, riding + own_tokens, True)
        own = own_at(riding, own_tokens, 1.0 + 0.0 * b, graphed, True)
        # the iteration that prefills (without mixing, steady_state's prefill step is it plus a decode iteration)
        t_pre = st.prompt_iteration_seconds
        t_prefill = np.where(st.prefill_iterations > 1, st.prefill_iterations * t_pre, np.maximum(own, t_pre))
        # length-biased rest of the running iteration (without mixing, a prefill iteration and then a decode one)
        residual = ((1.0 - p) * t0**2 + p * t1**2 if launch.mixes_prefill else t0**2 + p * t_pre**2) / (2.0 * mean)
        scheduled = mean if launch.overlap else 0.0  # the host already chose the next iteration's batch
        # prompts queue for the token budget: without chunking q whole prompts fit an iteration (q servers,
        # each busy for the iteration that carries the prefill); with chunking they share the budget left
        # after decoding (one server, a prompt's share of it) -- as for random arrivals (:mod:`.latency`)
        fit = room / i if chunked_prefill else np.maximum(np.floor(room / i), 1.0)
        servers, service = (1.0, t_pre * i / room) if chunked_prefill else (fit, t_pre)
        x = np.minimum(c, cap) / np.maximum(e2e_prev - before_prev, 1e-12) if _ else 0.0 * b
        ok, _w, wait, _w95 = mgc_wait(np.maximum(x, 1e-12), np.maximum(service, 1e-12), servers, service_cv=0.0)
        rho = np.minimum(x * service / servers, 1.0)
        backlog = np.where(ok, np.maximum(wait - rho * service / 2.0, 0.0), 0.0)
        # attention-DP balancing holds the prompt until every rank has one (TensorRT-LLM's enable_balance); the
        # loop keeps the ranks' shares equal, so a new prompt goes to the rank whose request ended (steady.py [4])
        held, _ = balance_wait_iterations(launch, shape.attention_dp, b / steps, ranks_full=True)
        polled = launch.receive_wait_iterations() * mean  # the scheduler takes requests in every N iterations
        before = calib.request_seconds + residual + scheduled + polled + backlog + held * mean  # sent, not in batch
        ttft = before + t_prefill
        e2e = ttft + (steps - 1.0) * mean
        outside = before / e2e
        e2e_prev, before_prev = e2e, before
    x_batch = np.minimum(c, cap / (1.0 - outside)) / e2e
    queue = np.maximum(c / x_batch - e2e, 0.0)  # waiting for one of the slots to free
    n = np.maximum(steps - 1.0, 1.0)

    def at_quantile(q):
        """TTFT and TPOT q-quantiles: the running iteration's rest and the balancing wait at their q-quantiles;
        a request's iterations carry a binomial number of prefills (the batch does not fluctuate: C is fixed)."""
        _, held_q = balance_wait_iterations(launch, shape.attention_dp, b / steps, ranks_full=True, quantile=q)
        polled_q = launch.receive_wait_iterations(q) * mean
        ttft_q = (calib.request_seconds + residual_quantile(q, p, t0, t1) + scheduled + polled_q + held_q * mean
                  + t_prefill)
        spread = np.minimum(p + normal_quantile(q) * np.sqrt(p * (1.0 - p) / n), 1.0)
        return ttft_q + queue, np.maximum(t0 + (t1 - t0) * spread, mean) / tau

    (ttft95, tpot95), (ttft99, tpot99) = (at_quantile(q) for q in QUANTILES)
    return ClosedLoopState(concurrency=c, batch=b, requests_per_s=x_batch, iteration_seconds=mean,
                           decode_iteration_seconds=t0, prefill_iteration_seconds=t1, ttft_seconds=ttft + queue,
                           ttft_p95_seconds=ttft95, tpot_seconds=mean / tau, tpot_p95_seconds=tpot95,
                           ttft_p99_seconds=ttft99, tpot_p99_seconds=tpot99, queue_seconds=queue)
