"""The replica-count search's probes (issue 51 item 2): :func:`aisize.serving.estimate.probe` gives what the
search reads of a count it tries, the fit, capacity, stability and latencies of :func:`aisize.serving.estimate`,
to the bit, and its ``estimate()`` is that estimate; a plan searched with probes is the plan searched with full
estimates. No timings are asserted here (``benchmarks/bench_sliders.py`` measures them)."""

from __future__ import annotations

import math
import sys
from dataclasses import fields

import pytest

import aisize.serving.estimate  # noqa: F401 (the module, which aisize.serving's function of the same name hides)
from aisize import serving
from aisize.plan import clear_caches, plan
from aisize.plan import replica_count as RC
from aisize.present.export import to_json
from aisize.scenario import from_dict, preset, to_dict
from aisize.serving import lengths as L

E = sys.modules["aisize.serving.estimate"]
READ = ("feasible", "stable", "max_requests_per_s", "ttft_s", "ttft_p95_s", "ttft_p99_s", "tpot_s", "tpot_p95_s",
        "tpot_p99_s")


def _same(a, b) -> bool:
    """Equal to the bit: the same type and value, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


DENSE = dict(input_tokens=1024, output_tokens=256, weight_precision="bf16", kv_precision="bf16", engine="trtllm")
CASES = [  # (model, GPU, arguments): dense at TP 1 and 2, 70B in FP8, MoE (a shape search), an uncalibrated GPU
    ("llama-3-8b", "h100-sxm", dict(DENSE, tensor_parallel=1)),
    ("llama-3-8b", "h100-sxm", dict(DENSE, tensor_parallel=2, length_cv=0.5)),
    ("llama-3-70b", "h100-sxm", dict(DENSE, tensor_parallel=4, weight_precision="fp8", kv_precision="fp8")),
    ("llama-3-70b", "h100-sxm", dict(DENSE, tensor_parallel=1)),  # does not fit
    ("llama-3-8b", "h100-sxm", dict(DENSE, tensor_parallel=1,
                                    length_distribution=L.Lengths.lognormal(1024, 256, 0.4, 1.0))),
    ("deepseek-r1", "b200", dict(tensor_parallel=8, weight_precision="fp8", kv_precision="fp8", input_tokens=900,
                                 output_tokens=200, engine="sglang")),
    ("llama-2-7b", "a100-sxm-80gb", dict(DENSE, tensor_parallel=1)),
]


@pytest.mark.parametrize("model, gpu, kw", CASES)
@pytest.mark.parametrize("share", [0.05, 0.5, 0.9, 0.99, 1.2])  # of the replica's capacity; past it: unstable
def test_a_probe_reads_what_the_estimate_reads_to_the_bit(model, gpu, kw, share):
    fits, cap = E.estimate_capacity(model, gpu, **kw)
    rate = share * cap if fits else 1.0
    est = serving.estimate(model, gpu, requests_per_s=rate, **kw)
    got = E.probe(model, gpu, requests_per_s=rate, **kw)
    # on the replicas of a probe at another rate (their capacities computed there): the same figures
    again = E.probe(model, gpu, requests_per_s=rate, replicas=E.probe(model, gpu, requests_per_s=0.37 * rate,
                                                                        **kw).replicas, **kw)
    for probed in (got, again):
        for name in READ:
            assert _same(getattr(probed, name), getattr(est, name)), (name, getattr(probed, name), getattr(est, name))
        done = probed.estimate()
        for f in fields(est):
            if f.compare:
                assert _same(getattr(done, f.name), getattr(est, f.name)), f.name
        assert RC.meets_targets(_W, probed, 1.0, 0.05) == RC.meets_targets(_W, est, 1.0, 0.05)
        assert RC._miss(_W, probed, 1.0, 0.05) == RC._miss(_W, est, 1.0, 0.05)


class _W:  # a service as meets_targets reads it
    slo_statistic = "p95"


def _sweep() -> list[str]:
    """to_json of the default service's plan along the request-rate slider and the output CV (a length
    distribution), with the caches a slider keeps."""
    base, out = to_dict(preset("xe9680-genai")), []
    for rate, cv in [(1.0, 0.0), (20.0, 0.0), (80.0, 0.0), (200.0, 0.0), (630.0, 0.0), (200.0, 0.7), (45.0, 1.0)]:
        data = to_dict(preset("xe9680-genai"))
        for w, w0 in zip(data["workloads"], base["workloads"]):
            if w["kind"] == "inference":
                w.update(requests_per_s=rate, output_cv=cv)
        out.append(to_json(plan(from_dict(data))))
    return out


def test_a_plan_searched_with_probes_is_the_plan_searched_with_estimates(monkeypatch):
    clear_caches()
    fast = _sweep()
    probes = len(RC._probes._entries)
    assert probes  # the search probed
    clear_caches()
    monkeypatch.setattr(RC, "probe", _full)
    assert _sweep() == fast
    clear_caches()


def _full(model, accelerator, replicas=None, **kw):
    """A probe that is the estimate itself, made afresh (what the search read of each count before probes)."""
    est = serving.estimate(model, accelerator, **kw)
    object.__setattr__(est, "estimate", lambda: est)
    object.__setattr__(est, "replicas", None)
    return est
