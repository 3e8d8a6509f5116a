"""A shape the sizing screen's capacity already rules out is not estimated again (issue 51 item 2): with a best
fleet found, :func:`aisize.plan.replica_count._screened_out` reads the replicas a shape needs at capacity from
the screen's max-throughput state, which for a load-free replica without speculation or a length spread is the
estimate's to the bit, instead of :func:`aisize.serving.estimate.estimate_capacity`. Every plan must be the one
made without it; no timings are asserted here (``benchmarks/bench_sliders.py`` measures them)."""

from __future__ import annotations

import dataclasses
import math
import sys

import pytest

import aisize.serving.estimate  # noqa: F401 (the module, which aisize.serving's function of the same name hides)
from aisize import models, serving
from aisize.plan import clear_caches
from aisize.plan import inference as PI
from aisize.plan import replica_count as RC
from aisize.serving.calibration import CALIBRATION
from aisize.serving.sizing import candidate_shapes, choose_fleet
from preset_plans import plans_json

E = sys.modules["aisize.serving.estimate"]


@pytest.mark.parametrize("model, acc, i, o, eng", [
    ("llama-3-8b", "h100-sxm", 1024, 256, "trtllm"), ("llama-3-8b", "h100-sxm", 3000, 700, "vllm"),
    ("llama-3-70b", "h100-sxm", 1024, 256, "sglang"), ("llama-3-70b", "b200", 2000, 300, "trtllm")])
def test_the_screens_capacity_is_the_estimates_to_the_bit(model, acc, i, o, eng):
    arch, engine = models.resolve(model), serving.ENGINES[eng]
    dev = serving.hardware.device(acc, "bf16", "bf16")
    shapes = candidate_shapes(arch, dev, scaleout_bytes_per_s=50e9, gpus_per_server=8, max_servers=4, engine=engine)
    fleet = choose_fleet(arch, acc, weight_precision="bf16", kv_precision="bf16", input_tokens=i, output_tokens=o,
                         requests_per_s=100.0, ttft_target_s=10.0, tpot_target_s=1.0, shapes=shapes, engine=engine,
                         calibration=CALIBRATION)
    assert len(fleet.ranked) >= 2
    for shape, _, _ in fleet.ranked:  # multi-server pipeline stages among them
        fits, cap = E.estimate_capacity(arch, acc, tensor_parallel=shape.tensor_parallel,
                                        pipeline_parallel=shape.pipeline_parallel, attention_dp=shape.attention_dp,
                                        stage_link_bytes_per_s=shape.stage_link_bytes_per_s, weight_precision="bf16",
                                        kv_precision="bf16", input_tokens=i, output_tokens=o, engine=engine,
                                        calibration=CALIBRATION)
        assert fits and fleet.capacity_of(shape) == cap, shape


_plans = plans_json


SWEEPS = [
    ("xe9680-genai", [{"requests_per_s": 200.0, "prompt_tokens": p} for p in (700, 1024, 1700, 2200)]),
    ("xe9680-genai", [{"requests_per_s": r, "output_tokens": 256 + 40 * k}
                      for k, r in enumerate((20.0, 90.0, 200.0, 630.0))]),
    ("serving-at-scale", [{"prompt_tokens": p} for p in (500, 2000)]),
    ("shared-cluster", [{"output_tokens": o} for o in (150, 400)]),
]


def _pruned(monkeypatch) -> list:
    got, real = [], RC._screened_out

    def screened(*args):
        out = real(*args)
        got.append(out)
        return out
    monkeypatch.setattr(RC, "_screened_out", screened)
    return got


@pytest.mark.parametrize("k", range(len(SWEEPS)))
def test_a_sweep_plans_what_it_plans_estimating_each_capacity(monkeypatch, k):
    name, steps = SWEEPS[k]
    clear_caches()
    pruned = _pruned(monkeypatch)
    fast = _plans(steps, name)
    clear_caches()
    monkeypatch.setattr(RC, "_screened_out", lambda *args: False)
    assert _plans(steps, name) == fast
    clear_caches()
    if k < 2:
        assert any(pruned)  # the screen ruled shapes out


def _ruled_out(monkeypatch, factor) -> list:
    """(ruled out, as the estimate's capacity would rule it out) of each shape the screen's capacity, read at
    ``factor`` times itself, was asked about in SWEEPS' plans."""
    out, ctxs, real, sized = [], [], RC._screened_out, RC._sized_by_estimate

    def remember(w, ctx, *args):
        ctxs.append(ctx)
        return sized(w, ctx, *args)

    def screened(w, arch, fleet, shape, one, floor):
        said = real(w, arch, dataclasses.replace(fleet, capacity_of=lambda s: factor * fleet.capacity_of(s)), shape,
                    one, floor)
        if said:
            fits, cap = E.estimate_capacity(arch, ctxs[-1].accelerator, **one)
            out.append(not fits or math.ceil(w.requests_per_s / cap) * shape.gpus >= floor)
        return said
    monkeypatch.setattr(PI, "_sized_by_estimate", remember)  # where plan_inference reads it
    monkeypatch.setattr(RC, "_screened_out", screened)
    clear_caches()
    for name, steps in SWEEPS:
        _plans(steps, name)
    clear_caches()
    return out


def test_every_shape_ruled_out_is_one_the_estimates_capacity_rules_out(monkeypatch):
    said = _ruled_out(monkeypatch, 1.0)
    assert len(said) >= 4 and all(said)


def test_a_capacity_read_low_rules_out_what_the_estimate_keeps(monkeypatch):
    # the check above can fail: the screen's capacity read at half rules out shapes the estimate's does not (the
    # sweeps plan the same all the same: here no shape so ruled out would have won)
    said = _ruled_out(monkeypatch, 0.5)
    assert not all(said)


def test_a_replica_with_speculation_or_lengths_is_estimated():
    arch = models.resolve("llama-3-8b")
    w = type("W", (), {"prefix": None, "kv_tiers": None, "requests_per_s": 1e6})()
    fleet = type("F", (), {"capacity_of": staticmethod(lambda s: 1.0)})()
    shape = type("S", (), {"gpus": 1})()
    assert RC._screened_out(w, arch, fleet, shape, {"length_distribution": None}, 10.0)
    assert not RC._screened_out(w, arch, fleet, shape, {"length_distribution": object()}, 10.0)
    assert not RC._screened_out(w, arch, fleet, shape, {"length_distribution": None, "speculative_method": "mtp"},
                                10.0)
    w.prefix = object()  # prompt reuse: not load-free
    assert not RC._screened_out(w, arch, fleet, shape, {"length_distribution": None}, 10.0)
