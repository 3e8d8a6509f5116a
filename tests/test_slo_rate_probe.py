"""The autoscaler's SLO rate (the highest rate a replica takes within the targets) is bisected on latency probes
(issue 51: a target's move on fleet-over-the-day re-planned it from 14 full estimates, 26 ms; 18 ms now): the same
rate to the bit as on full estimates, on the preset and on variants across GPUs, models, lengths and statistics."""

from __future__ import annotations

import pytest

from aisize import models, serving
from aisize.plan import plan
from aisize.plan import service_day as SD
from aisize.scenario import from_dict, preset, to_dict

VARIANTS = [  # server, model, weights, TTFT and TPOT targets [ms], prompt, output, statistic
    ("dgx-h100", "llama-3.1-70b", "fp8", 2000, 50, 2048, 512, "p95"),
    ("dgx-b200", "llama-3.1-8b", "bf16", 300, 10, 8000, 64, "p99"),
    ("gb200-nvl72", "qwen3-235b-a22b", "fp8", 1000, 20, 256, 2000, "mean"),
    ("mi355x-8gpu-platform", "llama-3.1-70b", "fp8", 5000, 100, 2048, 512, "p95"),
    ("dgx-a100", "llama-3.1-8b", "bf16", 1000, 50, 2048, 512, "p95"),  # a GPU the serving calibration does not cover
]


def _by_estimates(w, i, ctx, capacity, policies) -> float:
    """The bisection as it was: each step a full :func:`aisize.serving.estimate`."""
    arch, kw, lo, hi = models.resolve(w.model), SD._estimate_kw(w, i, ctx, policies), 0.0, capacity
    for _ in range(SD.SLO_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid > 0 and SD._meets(w, serving.estimate(arch, ctx.accelerator, requests_per_s=mid, **kw)):
            lo = mid
        else:
            hi = mid
    return lo


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[0]}-{v[1]}-{v[7]}")
def test_the_slo_rate_on_probes_is_the_rate_on_estimates(monkeypatch, variant):
    server, model, weights, ttft, tpot, prompt, output, statistic = variant
    d = to_dict(preset("fleet-over-the-day"))
    d["hardware"]["server"] = d["pools"][0]["server"] = server
    w = d["workloads"][0]
    w.update(model=model, weight_precision=weights, ttft_target_ms=ttft, tpot_target_ms=tpot, prompt_tokens=prompt,
             output_tokens=output, slo_statistic=statistic)
    seen, real = [], SD.slo_rate

    def both(*args):
        got = real(*args)
        seen.append((got, _by_estimates(*args)))
        return got
    monkeypatch.setattr(SD, "slo_rate", both)
    SD.service_day.cache_clear()
    SD._SLO_RATES.clear()  # bisected here, not read from an earlier plan
    plan(from_dict(d))
    assert seen and all(a == b for a, b in seen), seen
    assert any(a > 0 for a, _ in seen)  # a rate met the targets: the bisection ran, not its fallback


def test_a_fleet_setting_move_reads_the_kept_slo_rate_and_a_target_move_does_not(monkeypatch):
    """The SLO rate is kept by what it reads: an engine-start move (the day's, not the replica's) plans the same day
    from the kept rate without bisecting again; a TTFT-target move bisects again."""
    bisected = []
    real = SD._bisected
    monkeypatch.setattr(SD, "_bisected", lambda *a: bisected.append(a[4]) or real(*a))
    d = to_dict(preset("fleet-over-the-day"))
    SD._SLO_RATES.clear()
    first = plan(from_dict(d))
    assert len(bisected) == 1
    d["workloads"][0]["fleet"]["autoscaling"]["engine_start_seconds"] = 240.0
    again = plan(from_dict(d))
    rate = first.fleet.services[0].day.requests_per_s_per_replica
    assert len(bisected) == 1 and again.fleet.services[0].day.requests_per_s_per_replica == rate
    d["workloads"][0]["ttft_target_ms"] = 1500
    plan(from_dict(d))
    assert len(bisected) == 2
