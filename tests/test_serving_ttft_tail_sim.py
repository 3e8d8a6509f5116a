"""A rate-driven estimate's TTFT p95 against the scheduler simulation (issue 48 item 4, issue 49).

The p95 is the larger of the queueing model's and the iteration mixture's
(:func:`aisize.serving.latency.replica_ttft_quantiles`): an arrival waits out the rest of an iteration that carries
a Poisson number of prompts, then shares its own with the prompts that arrived meanwhile. The simulation
(:mod:`aisize.serving.simulate`, seed 3, 1500 Poisson requests) schedules every iteration. Measured when this
was written (estimate / simulation - 1): Llama 3.1 8B TP1 at 30 % and 60 % of capacity -0.05 % and -4.1 % (the
queueing model's p95 alone -2.0 % and -9.7 %); 70B TP4 -3.4 % and -9.6 % (-8.2 % and -25 %).
"""

import numpy as np
import pytest

from aisize import serving
from aisize.serving.latency import loaded_state, ttft_mixture_quantiles
from aisize.serving.replica import Load, evaluate
from aisize.serving.simulate import simulate_estimate

KW = dict(weight_precision="fp8", kv_precision="fp8", input_tokens=1024, output_tokens=256)
TOLERANCE = 0.12  # the 70B at 60 % load is 9.6 % low: the mixture holds the waits for the token budget at their mean


def _loaded_state(e, rates):
    """The queueing model alone (:func:`loaded_state`) at the estimate's replica."""
    rep = e.replica
    return loaded_state(rep.costs, rep.rates, rep.calibration, requests_per_s=rates,
                        capacity_requests_per_s=e.max_requests_per_s, slots=e.max_concurrency,
                        input_tokens=rep.input_tokens, output_tokens=rep.output_tokens,
                        max_num_tokens=rep.limits.max_num_tokens * rep.groups,
                        chunked_prefill=rep.engine.chunked_prefill, shape=rep.shape, launch=rep.launch)


@pytest.mark.parametrize("model,tp", [("llama-3.1-8b", 1), ("llama-3.1-70b", 4)])
def test_ttft_p95_within_tolerance_of_the_simulation_and_nearer_than_the_queueing_model(model, tp):
    base = serving.estimate(model, "h100-sxm", tensor_parallel=tp, **KW, requests_per_s=1.0)
    for share in (0.3, 0.6):
        rate = share * base.max_requests_per_s
        e = serving.estimate(model, "h100-sxm", tensor_parallel=tp, **KW, requests_per_s=rate)
        queueing = float(_loaded_state(e, np.array([rate])).ttft_p95_seconds[0])  # the p95 before the mixture
        sim = simulate_estimate(e, requests_per_s=rate, requests=1500, seed=3).ttft_p95_seconds
        assert e.ttft_p95_s == pytest.approx(sim, rel=TOLERANCE), (model, share, e.ttft_p95_s, sim)
        assert abs(e.ttft_p95_s - sim) <= abs(queueing - sim), (model, share, e.ttft_p95_s, queueing, sim)
        assert e.ttft_s < e.ttft_p95_s < e.ttft_p99_s


def test_the_vectorized_mixture_is_ttft_tail_at_each_rate():
    """latency.ttft_mixture_quantiles over many rates at once is tails.ttft_tail (as the reuse path runs it, one
    class of request) at each, to rounding."""
    from aisize.serving.reuse import ServingWorkload

    e = serving.estimate("llama-3.1-70b", "h100-sxm", tensor_parallel=4, **KW, requests_per_s=1.0)
    rep = e.replica
    rates = np.array([0.1, 0.5, 0.9]) * e.max_requests_per_s
    ls = _loaded_state(e, rates)
    q95, q99 = ttft_mixture_quantiles(
        rep.costs, rep.rates, rep.calibration, requests_per_s=rates, concurrency=ls.concurrency,
        iteration_seconds=ls.iteration_seconds, decode_iteration_seconds=ls.decode_iteration_seconds,
        prefill_iteration_seconds=ls.prefill_iteration_seconds, ttft_seconds=ls.ttft_seconds,
        input_tokens=rep.input_tokens, output_tokens=rep.output_tokens,
        max_num_tokens=rep.limits.max_num_tokens * rep.groups, chunked_prefill=rep.engine.chunked_prefill,
        shape=rep.shape, launch=rep.launch)
    for r, a, b in zip(rates, q95, q99):
        load = Load(r)
        _, one = ServingWorkload(None, (), None).settle(load, rep, rep.capacity, evaluate(rep, load))
        assert (a, b) == pytest.approx((one.ttft.p95_seconds, one.ttft.p99_seconds), rel=1e-9)
    assert np.all(np.diff(q95) > 0) and np.all(q99 > q95)
