"""Two shortcuts of the Little's-law solve (issue 51 item 2) change no figure: each is checked against the long way.

- the scan's steady states (the bracket search at slots / 2^k, the same at any rate) are kept from a solve of the
  same replica at another rate (``latency._scanned``): a rate move solves each shape at new rates only;
- the steady states at the batch's p95 and p99 come from one call, the quantiles along a new axis
  (``latency._tail_states``), where they took one call each.

The long way is the code with both off (no kept scan, one steady_state call per quantile); estimates (``repr``:
every exported float to the last bit) and latency curves (their bytes) must be the same, over sweeps of the rate
that hit the kept scans. No timings are asserted here (``benchmarks/bench_sliders.py`` measures them).
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize import serving
from aisize.plan import clear_caches
from aisize.serving import latency as L
from aisize.serving.curves import latency_curve, latency_elasticity
from aisize.serving.lengths import Lengths
from aisize.serving.steady import steady_state

CASES = {
    "dense 8B, TP 1": dict(model="llama-3-8b", accelerator="h100-sxm", tensor_parallel=1, input_tokens=1024,
                           output_tokens=256),
    "dense 70B, lengths": dict(model="llama-3-70b", accelerator="h100-sxm", tensor_parallel=4,
                               weight_precision="fp8", input_tokens=2000, output_tokens=400,
                               length_distribution=Lengths.lognormal(2000, 400, 0.6, 0.8)),
    "MoE, MTP, attention DP": dict(model="deepseek-v3", accelerator="h200-sxm", tensor_parallel=8,
                                   weight_precision="fp8", input_tokens=1000, output_tokens=1000,
                                   speculative_method="mtp", speculative_tokens=2),
    "vLLM, 405B PP 2": dict(model="llama-3.1-405b", accelerator="h100-sxm", tensor_parallel=8, pipeline_parallel=2,
                            weight_precision="fp8", input_tokens=4000, output_tokens=500, engine="vllm"),
}


def _long_way(costs, rates, calib, tokens_per_s, slots, steps, near, kwargs):
    """``latency._solved`` as it was: the scan evaluated each solve, one steady_state call per quantile."""
    last = []

    def state_at(concurrency):
        if last and last[0] is concurrency:
            return last[1]
        st = steady_state(costs, rates, calib, concurrency=np.maximum(concurrency, 1e-9), **kwargs)
        last[:] = [concurrency, st]
        return st

    bracket = None
    if near is not None:
        r_lo, t_lo, r_hi, t_hi = (np.asarray(v, dtype=float) for v in near)
        bracket = (np.minimum(r_lo * steps * t_lo, slots), t_lo, np.minimum(r_hi * steps * t_hi, slots), t_hi)
    st = state_at(L.littles_law_concurrency(tokens_per_s, lambda x: state_at(x).iteration_seconds, slots, bracket))
    tails = {q: state_at(np.minimum(st.concurrency + L.normal_quantile(q) * np.sqrt(st.concurrency),
                                    np.maximum(slots, 1.0))) for q in L.QUANTILES}
    return st, tails


def _figures(case: dict, rates) -> list:
    """Every figure of the estimate at each rate, its latency curve and knee elasticity, in one process (the later
    rates find the kept scans)."""
    kw = dict(case)
    model, gpu = kw.pop("model"), kw.pop("accelerator")
    out = []
    for r in rates:
        est = serving.estimate(model, gpu, requests_per_s=r, **kw)
        out.append(repr(est))
        if est.feasible and est.stable:
            out.append(latency_curve(est, 12).to_numpy().tobytes())
            out.append(repr(latency_elasticity(est, est.requests_per_s, statistic="p95")))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_kept_scans_and_one_call_tails_give_the_long_ways_figures(name, monkeypatch):
    case = CASES[name]
    cap = serving.estimate(case["model"], case["accelerator"],
                           **{k: v for k, v in case.items() if k not in ("model", "accelerator")})
    assert cap.feasible
    rates = cap.max_requests_per_s * np.array([0.05, 0.3, 0.31, 0.6, 0.85, 0.97, 1.02, 0.5])
    clear_caches()
    fast = _figures(case, rates)
    assert L._SCANNED, "no scan was kept: the shortcut is not exercised"
    clear_caches()
    monkeypatch.setattr(L, "_solved", _long_way)
    slow = _figures(case, rates)
    clear_caches()
    assert len(fast) == len(slow) > len(rates)
    for a, b in zip(fast, slow):
        assert a == b


def test_a_kept_scan_is_the_scan_of_the_same_replica_only():
    """Two replicas that differ only in what the scan reads (the slots, here through the batch limit) keep two
    scans; the same replica at two rates keeps one."""
    clear_caches()
    kw = dict(tensor_parallel=1, input_tokens=1024, output_tokens=256)
    serving.estimate("llama-3-8b", "h100-sxm", requests_per_s=5.0, **kw)
    one = len(L._SCANNED)
    serving.estimate("llama-3-8b", "h100-sxm", requests_per_s=7.0, **kw)
    assert len(L._SCANNED) == one
    serving.estimate("llama-3-8b", "h100-sxm", requests_per_s=7.0, max_batch_size=64, **kw)
    assert len(L._SCANNED) == one + 1
    clear_caches()
    assert not L._SCANNED and not L._SOLVED
