"""Latency of one replica under load: mean and p95 TTFT and TPOT at a request rate.

Requests arrive as a Poisson stream of rate λ. In steady state a replica with
mean iteration time T holds ``B = λ·(T + (O-1)·T)`` requests (Little's law [1])
and each iteration carries a Poisson number of new prefills with mean ``m = λ·T``.
Iterations without a prefill take ``T0``; those with one take ``T1`` (the
iteration model with ``m / (1 - e^-m)`` prefills, the conditional mean), so
``T = e^-m·T0 + (1 - e^-m)·T1``: a fixed point in T, solved by damped iteration.

- TPOT: a request decodes over ``O - 1`` iterations; the number that carry a
  prefill is binomial with p = 1 - e^-m, so its mean TPOT is T and its p95 is
  ``T0 + (T1 - T0)·(p + 1.645·sqrt(p(1-p)/(O-1)))`` (normal approximation).
- TTFT: admission wait + the wait for the next iteration to start (uniform over
  one iteration) + the iteration carrying the prefill. Admission is a queue for
  the replica's ``c`` slots (the concurrency its batch limit and KV pool allow),
  each held for ``S = T + (O - 1)·T``: M/G/c with the Allen-Cunneen correction
  for the service-time variability of the lengths [2], and the Erlang C tail for p95 [3].

λ at or beyond the replica's capacity is unstable: reported as such, with
infinite latencies, never as a negative wait.

References
----------
.. [1] Little 1961, "A proof for the queuing formula L = λW", Oper. Res. 9(3).
.. [2] Allen 1990, "Probability, Statistics and Queueing Theory", sec. 6.4 (G/G/c).
.. [3] Kleinrock 1975, "Queueing Systems" vol. 1, sec. 3.5 (M/M/c waiting-time tail).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.queueing import erlang_c
from aisize.serving.steady import steady_state

Z95 = 1.6448536269514722  # standard normal 95th percentile
_ITERATIONS = 60


@dataclass(frozen=True)
class LoadedState:
    """A replica at request rate λ (per replica) [s, count]."""

    requests_per_s: object
    stable: object
    utilisation: object  # λ / capacity
    concurrency: object  # mean requests in flight
    iteration_seconds: object  # mean
    decode_iteration_seconds: object  # T0
    prefill_iteration_seconds: object  # T1
    ttft_seconds: object
    ttft_p95_seconds: object
    tpot_seconds: object
    tpot_p95_seconds: object
    queue_seconds: object  # mean admission wait


def loaded_state(costs, rates, calib, *, requests_per_s, capacity_requests_per_s, slots, input_tokens,
                 output_tokens, max_num_tokens, chunked_prefill, shape, length_cv=0.0) -> LoadedState:
    """Mean and p95 latencies of a replica serving ``requests_per_s`` (Poisson).

    Parameters
    ----------
    costs, rates, calib : as for :func:`~aisize.serving.iteration.iteration_time`
    requests_per_s : λ, arrivals per second at this replica
    capacity_requests_per_s : the replica's maximum rate (from its max-throughput state)
    slots : requests the replica admits at once (batch limit and KV pool) [count]
    input_tokens, output_tokens : mean lengths [tokens]
    max_num_tokens, chunked_prefill : the engine's token budget and prefill mode
    shape : :class:`~aisize.serving.shapes.ReplicaShape`
    length_cv : coefficient of variation of the request lengths (0: fixed lengths)
    """
    lam = np.asarray(requests_per_s, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    cap = np.asarray(capacity_requests_per_s, dtype=float)
    util = lam / cap
    stable = util < 1.0
    lam_s = np.where(stable, lam, 0.5 * cap)  # evaluate unstable points somewhere finite, then mark them

    def state(t):
        return steady_state(costs, rates, calib, concurrency=np.maximum(np.minimum(lam_s * o * t, slots), 1e-9),
                            input_tokens=input_tokens, output_tokens=output_tokens, max_num_tokens=max_num_tokens,
                            chunked_prefill=chunked_prefill, shape=shape, arrivals="poisson")

    t = np.zeros(np.broadcast(lam_s, o).shape) + 1e-3
    for _ in range(_ITERATIONS):  # damped fixed point: T -> B = λ·O·T -> T
        t = 0.5 * t + 0.5 * state(t).iteration_seconds
    st = state(t)
    mean, t0, t1, p = st.iteration_seconds, st.decode_iteration_seconds, st.prefill_iteration_seconds, st.prefill_share
    hold = (st.prefill_iterations + o - 1.0) * mean  # a slot is held while prefilling and for O - 1 decodes
    c = np.maximum(np.floor(slots), 1.0)
    offered = lam_s * hold
    util = np.maximum(util, offered / c)  # random arrivals mix prefills less well than a waiting queue
    stable = util < 1.0
    offered = np.minimum(offered, 0.9999 * c)
    pw = erlang_c(c, offered)
    ac = 0.5 * (1.0 + np.asarray(length_cv, dtype=float) ** 2)  # (c_a² + c_s²)/2 with Poisson arrivals
    rate = (c - offered) / hold  # c·μ - λ
    wq = ac * pw / rate
    wq95 = ac * np.maximum(np.log(np.maximum(pw, 1e-300) / 0.05), 0.0) / rate
    # prefill: one iteration, or with chunking its spans, stretched by the prompts queued for the budget
    budget_load = np.minimum(lam_s * mean * np.asarray(input_tokens, dtype=float)
                             / np.maximum(max_num_tokens - st.concurrency, 1.0), 0.95)
    t_prefill = st.prefill_iterations * t1 / (1.0 - budget_load) if chunked_prefill else t1
    ttft = wq + 0.5 * mean + t_prefill
    ttft95 = wq95 + 0.95 * mean + t_prefill
    n = np.maximum(o - 1.0, 1.0)
    with np.errstate(invalid="ignore"):  # unstable points may hold inf - inf; they are replaced below
        tpot95 = t0 + (t1 - t0) * np.minimum(p + Z95 * np.sqrt(p * (1.0 - p) / n), 1.0)
    inf = np.inf
    return LoadedState(lam, stable, util, np.where(stable, np.minimum(lam_s * o * mean, c), inf),
                       mean, t0, t1, np.where(stable, ttft, inf), np.where(stable, ttft95, inf),
                       np.where(stable, mean, inf), np.where(stable, tpot95, inf), np.where(stable, wq, inf))
