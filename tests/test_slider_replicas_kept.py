"""A length-CV move probes the replicas kept from the last move (their candidate replicas do not depend on the
lengths: :func:`aisize.serving.estimate.candidate_replicas`, :func:`aisize.plan.replica_count._replica_key`), and a
replica's capacity at a decoding context is computed once (:func:`aisize.serving.replica.capacity`; issue 51
item 2). Every figure must be the one computed afresh; no timings are asserted here."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import aisize.serving.estimate  # noqa: F401 (the modules, which aisize.serving's functions of the same name hide)
import aisize.serving.replica  # noqa: F401
from aisize.plan import clear_caches
from aisize.plan import replica_count as RC
from aisize.serving import ENGINES
from aisize.serving import lengths as L
from aisize.serving.throughput import max_throughput
from preset_plans import plans_json

E = sys.modules["aisize.serving.estimate"]
R = sys.modules["aisize.serving.replica"]
KW = dict(weight_precision="bf16", kv_precision="bf16", engine=ENGINES["trtllm"], input_tokens=1024, output_tokens=256)
CASES = [("llama-3-8b", dict(tensor_parallel=1)), ("llama-3-8b", dict(tensor_parallel=2, engine=ENGINES["vllm"])),
         ("llama-3-70b", dict(tensor_parallel=4, weight_precision="fp8", kv_precision="fp8",
                              engine=ENGINES["sglang"])),
         ("deepseek-r1", dict(tensor_parallel=8, weight_precision="fp8", kv_precision="fp8"))]  # MoE: two splits
SPREADS = [(0.0, 0.7), (0.4, 0.0), (1.2, 1.5)]


def _fields(x) -> dict:
    return {k: v for k, v in vars(x).items() if k not in ("evaluated", "arguments", "replicas")}


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) or (x is None and y is None)
               for x, y in zip(_fields(a).values(), _fields(b).values()))


@pytest.mark.parametrize("model, args", CASES)
def test_replicas_kept_across_lengths_probe_and_cap_as_fresh_ones(model, args):
    kw = KW | args
    gpu = "h200-sxm" if model == "deepseek-r1" else "h100-sxm"
    kept = E.candidate_replicas(model, gpu, **kw)
    for p_cv, o_cv in SPREADS:
        spread = L.Lengths.lognormal(kw["input_tokens"], kw["output_tokens"], p_cv, o_cv)
        fresh_cap = E.estimate_capacity(model, gpu, length_distribution=spread, **kw)
        assert E.estimate_capacity(model, gpu, length_distribution=spread, replicas=kept, **kw) == fresh_cap
        rate = 0.6 * fresh_cap[1]
        fresh = E.probe(model, gpu, requests_per_s=rate, length_distribution=spread, **kw)
        again = E.probe(model, gpu, requests_per_s=rate, length_distribution=spread, replicas=kept, **kw)
        assert _fields(again) == _fields(fresh)
        assert again.estimate() == fresh.estimate()
    plain = E.probe(model, gpu, requests_per_s=5.0, length_cv=0.5, replicas=kept, **kw)
    assert _fields(plain) == _fields(E.probe(model, gpu, requests_per_s=5.0, length_cv=0.5, **kw))


def test_kept_replicas_need_the_engine_as_a_record():
    kept = E.candidate_replicas("llama-3-8b", "h100-sxm", tensor_parallel=1, **KW)
    with pytest.raises(ValueError, match="engine='trtllm' with replicas"):
        E.estimate_capacity("llama-3-8b", "h100-sxm", tensor_parallel=1, replicas=kept, **KW | {"engine": "trtllm"})


def test_a_capacity_kept_is_the_one_computed_afresh():
    rep = E.candidate_replicas("llama-3-8b", "h100-sxm", tensor_parallel=1, **KW)[0]

    def fresh(cached, context):
        return max_throughput(rep.costs, rep.device, rep.rates, rep.calibration, rep.engine, rep.limits,
                              input_tokens=rep.input_tokens, output_tokens=rep.output_tokens, shape=rep.shape,
                              speculation=rep.speculation, cached_tokens=cached, decode_context_tokens=context)
    for cached, context in [(0.0, None), (0.0, 1400.5), (0, 1400.5), (300.0, 1400.5), (0.0, np.float64(2000.0))]:
        first = R.capacity(rep, cached, context)
        assert R.capacity(rep, cached, context) is first  # kept
        want = fresh(cached, context)
        assert float(first.state.requests_per_s) == float(want.state.requests_per_s)
        assert float(first.state.concurrency) == float(want.state.concurrency)
    assert R.capacity(rep, 0, 1400.5) is not R.capacity(rep, 0.0, 1400.5)  # 0 and 0.0 kept apart
    arr = np.array([1000.0, 2000.0])
    assert R.capacity(rep, 0.0, arr) is not R.capacity(rep, 0.0, arr)  # an array is computed each time
    assert len(rep.__dict__["_capacities"]) <= R.KEPT_CAPACITIES


SWEEPS = [
    [{"requests_per_s": 200.0, "output_cv": cv} for cv in (0.1, 0.3, 0.5, 0.8, 1.2)],
    [{"requests_per_s": 200.0, "prompt_cv": cv} for cv in (0.1, 0.3, 0.5, 0.8, 1.2)],
    [{"requests_per_s": 60.0, "prompt_cv": 0.4, "output_cv": cv, "length_cv": 0.3} for cv in (0.2, 0.6, 1.0)],
]


@pytest.mark.parametrize("k", range(len(SWEEPS)))
def test_a_cv_sweep_plans_what_it_plans_afresh(monkeypatch, k):
    clear_caches()
    fast = plans_json(SWEEPS[k])
    clear_caches()
    monkeypatch.setattr(RC, "_replica_key", lambda key: key)  # replicas kept per lengths, as before
    monkeypatch.setattr(R, "_scalar_key", lambda value: None)  # every capacity computed afresh
    assert plans_json(SWEEPS[k]) == fast
    clear_caches()


def test_a_capacity_kept_across_contexts_changes_the_plans(monkeypatch):
    # the equality above can fail: a capacity kept whatever the decoding context plans other fleets
    clear_caches()
    right = plans_json(SWEEPS[0])
    clear_caches()
    monkeypatch.setattr(R, "_scalar_key", lambda value: ("any",))
    assert plans_json(SWEEPS[0]) != right
    clear_caches()
