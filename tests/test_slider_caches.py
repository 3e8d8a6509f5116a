"""The caches a slider move re-plans from (issue 51 item 2) give the figures a fresh computation gives, and miss
where an input they read changed.

- :func:`aisize.serving.latency._solved`: :func:`~aisize.serving.latency.loaded_state`'s Little's-law root and the
  steady states at it and at its batch quantiles, by the costs and calibration (identity) and everything else the
  solve reads (value). A prompt-CV or length-CV move changes the queues' spread, not the root.
- :func:`aisize.plan.knee._at_rate`: a load-free replica's estimate at a top-up's rate is one object per
  (kept estimate, rate), so :func:`~aisize.plan.knee.elasticity_at` finds the knee it computed.

No timings are asserted (``benchmarks/bench_sliders.py --repeats`` counts the work a move repeats).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

from aisize import serving
from aisize.plan import inference as PI
from aisize.plan import knee as K
from aisize.plan import plan
from aisize.plan import replica_count as RC
from aisize.present.export import to_json
from aisize.scenario import from_dict, preset, to_dict
from aisize.serving import latency as L
from aisize.serving.estimate import replica_of


@pytest.fixture(scope="module")
def replica():
    """Llama 3.1 8B on one H100 (vLLM), its capacity and slots: the arguments of open_loop's loaded_state."""
    est = serving.estimate("llama-3.1-8b", "h100-sxm", tensor_parallel=1, input_tokens=2048, output_tokens=256,
                           engine="vllm")
    return est, replica_of(est)


def _args(est, rep, **given) -> dict:
    kw = dict(requests_per_s=np.array([2.0, 5.0, 0.8 * est.max_requests_per_s]),
              capacity_requests_per_s=est.max_requests_per_s, slots=float(est.max_concurrency),
              input_tokens=est.input_tokens, output_tokens=est.output_tokens,
              max_num_tokens=rep.limits.max_num_tokens, chunked_prefill=rep.engine.chunked_prefill, shape=rep.shape,
              launch=rep.launch, speculation=rep.speculation, length_cv=0.3, prompt_cv=0.5)
    kw.update(given)
    return kw


def _state(rep, costs=None, rates=None, calib=None, **kw):
    return L.loaded_state(costs or rep.costs, rates or rep.rates, calib or rep.calibration, **kw)


def _fresh(rep, **kw):
    """The same call with nothing kept: the figures every hit must equal."""
    L._SOLVED.clear()
    got = _state(rep, **kw)
    L._SOLVED.clear()
    return got


def _assert_same_figures(a, b):
    for f in dataclasses.fields(a):
        np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name), err_msg=f.name, strict=True)


def test_a_hit_gives_the_fresh_figures_and_a_spread_move_hits(replica):
    est, rep = replica
    kw = _args(est, rep)
    fresh = _fresh(rep, **kw)
    first = _state(rep, **kw)
    again = _state(rep, **kw)
    assert again.iteration_seconds is first.iteration_seconds  # the kept root, not a new solve
    _assert_same_figures(again, fresh)
    # the prompt's and the lengths' spread reach the queues only: the same root, other waits
    other = _state(rep, **_args(est, rep, prompt_cv=1.2, length_cv=0.9))
    assert other.iteration_seconds is first.iteration_seconds
    assert np.all(other.ttft_p95_seconds >= first.ttft_p95_seconds)
    assert other.ttft_p95_seconds[-1] > first.ttft_p95_seconds[-1]  # prompts queue at 80 % busy
    _assert_same_figures(other, _fresh(rep, **_args(est, rep, prompt_cv=1.2, length_cv=0.9)))


def _changed(est, rep):
    """Each input the solve reads, changed: (name, rates, calibration, loaded_state's keywords)."""
    rates, cal, launch, shape = rep.rates, rep.calibration, rep.launch, rep.shape
    yield "rate", rates, cal, _args(est, rep, requests_per_s=np.array([2.0, 5.5, 0.8 * est.max_requests_per_s]))
    yield "rate as a scalar", rates, cal, _args(est, rep, requests_per_s=3.0)
    yield "slots", rates, cal, _args(est, rep, slots=float(est.max_concurrency) - 7.0)
    yield "prompt", rates, cal, _args(est, rep, input_tokens=est.input_tokens + 64)
    yield "output", rates, cal, _args(est, rep, output_tokens=est.output_tokens - 32)
    yield "budget", rates, cal, _args(est, rep, max_num_tokens=rep.limits.max_num_tokens // 2)
    yield "chunking", rates, cal, _args(est, rep, chunked_prefill=not rep.engine.chunked_prefill)
    yield "context", rates, cal, _args(est, rep, decode_context_tokens=est.input_tokens * 1.5)
    yield "cached prefix", rates, cal, _args(est, rep, cached_tokens=512.0)
    yield "launch", rates, cal, _args(est, rep, launch=replace(launch, overlap=not launch.overlap))
    yield "shape", rates, cal, _args(est, rep, shape=replace(shape, tensor_parallel=2))
    yield "rates", replace(rates, memory_bytes_per_s=rates.memory_bytes_per_s * 0.9), cal, _args(est, rep)
    # an equal calibration that is another object: keyed by identity, so it misses (never a wrong hit)
    yield "calibration", rates, replace(cal, request_seconds=cal.request_seconds + 0.01), _args(est, rep)
    yield "bracket", rates, cal, _args(est, rep, requests_per_s=3.0, near=(2.0, 0.01, 5.0, 0.02))


def test_every_input_the_solve_reads_misses_when_changed(replica):
    est, rep = replica
    first = _state(rep, **_args(est, rep))
    got = [(name, rates, cal, kw, _state(rep, rates=rates, calib=cal, **kw)) for name, rates, cal, kw in
           _changed(est, rep)]  # first stays kept throughout: each would hit it if its change were not in the key
    kept = [first.iteration_seconds] + [g[-1].iteration_seconds for g in got]
    assert len({id(x) for x in kept}) == len(kept), "a changed input hit another's entry"
    for name, rates, cal, kw, state in got:
        _assert_same_figures(state, _fresh(rep, rates=rates, calib=cal, **kw))
    assert _fresh(rep, **_args(est, rep, input_tokens=est.input_tokens + 64)).iteration_seconds[0] != \
        first.iteration_seconds[0], "a changed prompt must change the root the test compares"


def test_a_record_whose_repr_is_shortened_is_not_kept(replica):
    est, rep = replica
    long = replace(rep.launch, graph_batch=np.arange(2000.0))  # numpy prints it with "..."
    other = replace(rep.launch, graph_batch=np.arange(2000.0) + (np.arange(2000) == 1000))
    assert repr(long) == repr(other)
    with pytest.raises(L._Unkeyed):
        L._value(long)
    assert L._value(rep.launch) == L._value(replace(rep.launch)) != L._value(replace(rep.launch, overlap=not rep.launch.overlap))


def test_a_kept_state_cannot_be_written_into(replica):
    est, rep = replica
    got = _state(rep, **_args(est, rep))
    with pytest.raises(ValueError):
        got.iteration_seconds[0] = 0.0


def test_the_estimate_at_a_rate_is_one_object_per_estimate_and_rate(replica):
    est, _ = replica
    a = K._at_rate(est, 3.0)
    assert K._at_rate(est, 3.0) is a and a.requests_per_s == 3.0 and a.replica is est.replica
    assert K._at_rate(est, 3.5) is not a
    copy = replace(est)
    assert K._at_rate(copy, 3.0) is not a  # another estimate, though equal: another object


def _sweep(field: str, values, **given) -> list[str]:
    """to_json of xe9680-genai's plan with its service's ``field`` at each value (the slider's path), the serving
    caches kept across the plans."""
    out = []
    for v in values:
        data = to_dict(preset("xe9680-genai"))
        for w in data["workloads"]:
            if w["kind"] == "inference":
                w.update(given, **{field: v})
        PI.plan_inference.cache_clear()
        out.append(to_json(plan(from_dict(data))))
    return out


@pytest.mark.parametrize("field, values, given", [
    ("prompt_cv", (0.0, 0.3, 0.6, 0.9, 0.6), {"requests_per_s": 200.0}),
    ("output_cv", (0.2, 0.5, 0.8, 0.5), {"requests_per_s": 200.0, "prompt_cv": 0.4}),
    ("ttft_target_ms", (1000.0, 800.0, 640.0, 800.0), {"requests_per_s": 200.0}),
    ("tpot_target_ms", (50.0, 40.0, 30.0, 40.0), {"requests_per_s": 120.0})])
def test_moves_plan_what_a_plan_without_the_caches_plans(monkeypatch, field, values, given):
    kept = _sweep(field, values, **given)
    monkeypatch.setattr(L, "_KEPT_SOLVES", 0)  # every root solved afresh
    monkeypatch.setattr(K, "_KEPT_ELASTICITIES", 0)  # every knee's elasticity computed afresh
    monkeypatch.setattr(RC, "_KEPT_ELASTICITIES", 0)  # ... and no walk's length kept (replica_count reads it too)
    L._SOLVED.clear()
    K._ELASTICITIES.clear()
    K._AT_RATE.clear()
    assert _sweep(field, values, **given) == kept
