"""The capacity-only estimate (issue 51 item 2) gives the figures the whole estimate gives, to the last bit.

:func:`aisize.serving.estimate.estimate_capacity` is :func:`aisize.serving.estimate` flat out without the latencies
a capacity search never reads (with a length distribution, the length tails: most of a length-CV move's work).
Every estimate the planner makes for every preset is taken again without its rate, both ways, and the fit and the
capacity must be equal (``==`` on floats: the same bits). The presets carry lengths from distributions, speculation,
MoE models, prompt reuse (which both refuse without a rate) and GPUs no public run calibrates. No timings are asserted here
(``benchmarks/bench_sliders.py`` measures them).
"""

from __future__ import annotations

import pytest

from aisize import serving
from aisize.plan import clear_caches, plan
from aisize.plan import replica_count as RC
from aisize.scenario import preset, preset_names
from aisize.serving.estimate import estimate_capacity
from aisize.serving.lengths import Lengths

PER_PRESET = 6  # distinct argument sets checked per preset (the first ones the planner makes)


def _estimate_calls(name: str) -> list:
    """(model, accelerator, keyword arguments less the load) of the first :data:`PER_PRESET` distinct estimates the
    plan of preset ``name`` makes."""
    seen, calls = set(), []
    real, real_probe = serving.estimate, RC.probe

    def recorded(model, accelerator, kw):
        rest = {k: v for k, v in kw.items() if k not in ("requests_per_s", "concurrency", "replicas")}
        key = (repr(model), repr(accelerator), repr(sorted(rest.items())))
        if key not in seen and len(calls) < PER_PRESET:
            seen.add(key)
            calls.append((model, accelerator, rest))

    def recording(model, accelerator, **kw):
        recorded(model, accelerator, kw)
        return real(model, accelerator, **kw)

    def probing(model, accelerator, **kw):
        recorded(model, accelerator, kw)
        return real_probe(model, accelerator, **kw)

    _forget()  # memoised searches would not estimate again
    serving.estimate = recording  # the planner calls it as aisize.serving.estimate
    RC.probe = probing  # ... and its replica-count search as aisize.serving.estimate.probe
    try:
        plan(preset(name))
    finally:
        serving.estimate, RC.probe = real, real_probe
        _forget()
    return calls


def _forget() -> None:
    """Every memoised planner result, and the estimates the replica count keeps across plans (which
    ``clear_caches`` does not find: they are not lru_cache functions)."""
    clear_caches()
    for kept in (RC._estimates, RC._probes, RC._replicas, RC._capacities):
        kept._entries.clear()


SERVING_PRESETS = [n for n in preset_names() if any(w.kind == "inference" for w in preset(n).workloads)]


@pytest.mark.parametrize("name", SERVING_PRESETS)
def test_capacity_only_equals_the_whole_estimate_for_every_preset(name):
    calls = _estimate_calls(name)
    assert calls, f"{name} has a service, but its plan made no estimate"
    for model, accelerator, kw in calls:
        if kw.get("prefix") is not None:  # reuse needs a rate: both refuse it flat out
            for flat_out in (serving.estimate, estimate_capacity):
                with pytest.raises(ValueError, match="prefix needs requests_per_s"):
                    flat_out(model, accelerator, **kw)
            continue
        whole = serving.estimate(model, accelerator, **kw)
        assert estimate_capacity(model, accelerator, **kw) == (bool(whole.feasible), whole.max_requests_per_s), kw


def _lengths(cv):
    return Lengths.lognormal(input_tokens=2000, output_tokens=400, input_cv=cv, output_cv=cv)


@pytest.mark.parametrize("kw", [
    dict(length_distribution=None),
    dict(length_distribution="cv0.5"),
    dict(length_distribution="cv1.5", speculative_method="mtp", speculative_tokens=2),
])
def test_capacity_only_with_lengths_and_speculation(kw):
    kw = dict(kw)
    if isinstance(kw.get("length_distribution"), str):
        kw["length_distribution"] = _lengths(float(kw["length_distribution"][2:]))
    args = dict(tensor_parallel=4, weight_precision="fp8", input_tokens=2000, output_tokens=400, **kw)
    model, gpu = ("deepseek-v3", "h200-sxm") if "speculative_method" in kw else ("llama-3-70b", "h100-sxm")
    if "speculative_method" in kw:
        args["tensor_parallel"] = 8
    whole = serving.estimate(model, gpu, **args)
    assert whole.feasible
    got = estimate_capacity(model, gpu, **args)
    assert got == (True, whole.max_requests_per_s)
    if kw.get("length_distribution") is not None:
        # the lengths' decoding context moves the capacity: a path that left it out would be caught above
        plain = serving.estimate(model, gpu, **{**args, "length_distribution": None})
        assert plain.max_requests_per_s != whole.max_requests_per_s


def test_capacity_only_of_a_model_that_does_not_fit():
    kw = dict(tensor_parallel=1, weight_precision="bf16", input_tokens=2000, output_tokens=400,
              length_distribution=_lengths(0.5))
    whole = serving.estimate("llama-3.1-405b", "h100-sxm", **kw)
    assert not whole.feasible
    assert estimate_capacity("llama-3.1-405b", "h100-sxm", **kw) == (False, 0.0)


@pytest.mark.parametrize("load", [{"requests_per_s": 2.0}, {"concurrency": 8}])
def test_capacity_only_refuses_a_load(load):
    with pytest.raises(ValueError, match=next(iter(load))):
        estimate_capacity("llama-3-70b", "h100-sxm", tensor_parallel=4, input_tokens=2000, output_tokens=400,
                            **load)
