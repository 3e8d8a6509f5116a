"""A service is sized to meet its own targets (issue 49): where the sizing found a shape, the fleet bought meets
the TTFT and TPOT targets as the plan estimates them; agentic-coding had "TPOT p95 60.7 ms over the 50.0 ms
target" with 12 replicas at 63 % busy, though more replicas of that shape meet it."""

from __future__ import annotations

import pytest

from aisize.plan import plan
from aisize.scenario import preset, preset_names


@pytest.mark.parametrize("name", preset_names())
def test_no_preset_service_misses_a_target_a_shape_can_meet(name):
    for i in plan(preset(name)).inference:
        if i.slo_reason:  # no shape on this hardware meets them: said, with the numbers
            continue
        assert i.ttft_met and i.tpot_met, (name, i.name, i.ttft_p95_seconds, i.tpot_p95_seconds)


def test_agentic_coding_buys_the_replicas_its_tpot_target_needs():
    i = plan(preset("agentic-coding")).inference[0]
    assert i.tpot_met and i.tpot_p95_seconds <= i.tpot_target_seconds
    # the shape vLLM's recipe runs (TP 8 in one DGX B200, not PP 8), sized short of the latency knee: 13 of them
    # met the targets at 92 % busy, where 10 % more load added 42 % to the request latency
    assert (i.tensor_parallel, i.pipeline_parallel) == (8, 1) and i.replicas >= 14 and i.utilisation < 0.85


@pytest.mark.parametrize("name", preset_names())
def test_no_preset_service_is_sized_past_its_latency_knee(name):
    from aisize.plan.context import KNEE_ELASTICITY
    for i in plan(preset(name)).inference:
        if i.slo_reason or i.pools_estimate is not None:  # a miss is said; pools are sized by their own search
            continue
        assert i.latency_elasticity <= KNEE_ELASTICITY, (name, i.name, i.latency_elasticity, i.utilisation)
