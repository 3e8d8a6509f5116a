"""Why a service misses its targets is typed in the planner and worded once in presentation (issue 47 item 4).

The planner states an :class:`aisize.plan.slo_reason.SloReason` (serving's refusals as serving worded them, the
planner's miss as :class:`UnmetTargets`); :func:`aisize.present.slo_text.slo_reason_text` words it. The sentences
below are the ones the planner built itself before it was typed (aisize.plan.replica_count._missed and
aisize.plan.inference._assemble at commit 491e75f), for agentic-coding with a 600 ms TTFT p95 target: 34 x TP 8
B200 replicas of DeepSeek-R1 reach 681 ms TTFT p95 and 7.8 ms TPOT p95.
"""

from __future__ import annotations

import json

from aisize.plan import plan
from aisize.plan.replica_count import REFINE_SHAPES, TOP_UP_SHARE, TOP_UP_STEPS
from aisize.plan.slo_reason import SloReason, UnmetTargets
from aisize.present.export import to_json
from aisize.present.findings import finding_text
from aisize.present.slo_text import slo_reason_text, unmet_targets_text
from aisize.scenario import io, preset

AGENTIC_600 = UnmetTargets(shapes_tried=1, top_up_steps=16, top_up_share=0.05, replicas=34, tensor_parallel=8,
                           pipeline_parallel=1, attention_dp=1, statistic="p95", ttft_seconds=0.6809687487413971,
                           ttft_target_seconds=0.6, tpot_seconds=0.00784331267552094, tpot_target_seconds=0.05)
AGENTIC_600_WORDS = ("none of the 1 best shapes the screen found meets the targets as estimated, with up to 16 steps "
                     "of 5% more replicas; at the screen's count, 34 x TP 8, reaches TTFT p95 681 ms (target 600 ms) "
                     "and TPOT p95 7.8 ms (target 50.0 ms)")


def test_the_typed_miss_reads_as_the_planners_sentence_did():
    assert unmet_targets_text(AGENTIC_600) == AGENTIC_600_WORDS
    assert slo_reason_text(SloReason(unmet=AGENTIC_600)) == AGENTIC_600_WORDS


def test_stages_and_attention_dp_are_named_only_where_the_shape_has_them():
    u = UnmetTargets(shapes_tried=6, top_up_steps=16, top_up_share=0.05, replicas=3, tensor_parallel=8,
                     pipeline_parallel=2, attention_dp=8, statistic="p99", ttft_seconds=1.23449,
                     ttft_target_seconds=1.0, tpot_seconds=0.01234, tpot_target_seconds=0.010)
    assert unmet_targets_text(u) == (
        "none of the 6 best shapes the screen found meets the targets as estimated, with up to 16 steps of 5% more "
        "replicas; at the screen's count, 3 x TP 8 x PP 2 (attention DP 8), reaches TTFT p99 1,234 ms (target "
        "1,000 ms) and TPOT p99 12.3 ms (target 10.0 ms)")


def test_the_pools_refusal_comes_first_then_the_fleets():
    pools = "no decode pool meets the TPOT p95 target 1 ms (best 8.778 ms)"
    screen = "no replica shape meets the TPOT p95 target 1 ms (best achievable 8.75 ms)"
    assert slo_reason_text(SloReason(pools_refusal=pools, screen_refusal=screen)) == f"disaggregated: {pools}; {screen}"
    assert slo_reason_text(SloReason(pools_refusal=pools, unmet=AGENTIC_600)) == \
        f"disaggregated: {pools}; {AGENTIC_600_WORDS}"
    assert slo_reason_text(SloReason(pools_refusal=pools)) == f"disaggregated: {pools}"
    assert slo_reason_text(SloReason(screen_refusal=screen)) == screen
    assert slo_reason_text(None) == ""


def _agentic(**targets):
    d = preset("agentic-coding").model_dump(mode="json", exclude_none=True)
    d["workloads"][0].update(targets)
    return plan(io.from_dict(d))


def test_a_planned_miss_carries_the_plans_figures_and_every_surface_reads_one_sentence():
    p = _agentic(ttft_target_ms=600)
    i = p.inference[0]
    u = i.slo_reason.unmet
    assert (u.top_up_steps, u.top_up_share) == (TOP_UP_STEPS, TOP_UP_SHARE) and 1 <= u.shapes_tried <= REFINE_SHAPES
    assert (u.tensor_parallel, u.pipeline_parallel, u.attention_dp, u.replicas) == \
        (i.tensor_parallel, i.pipeline_parallel, i.attention_dp, i.replicas)
    assert (u.ttft_seconds, u.tpot_seconds) == (i.ttft_p95_seconds, i.tpot_p95_seconds)
    assert (u.ttft_target_seconds, u.tpot_target_seconds) == (i.ttft_target_seconds, i.tpot_target_seconds)
    finding = next(f for f in p.findings if f.code == "inference.slo_unreachable")
    assert finding_text(finding) == f"{i.name}: {slo_reason_text(i.slo_reason)}"


def test_refused_pools_keep_serving_words_beside_the_screens():
    d = preset("rag-service").model_dump(mode="json", exclude_none=True)
    d["workloads"][0].update(serving="disaggregated", tpot_target_ms=1)
    i = next(w for w in plan(io.from_dict(d)).inference)
    r = i.slo_reason
    assert r.unmet is None and r.pools_refusal.startswith("no decode pool meets the TPOT p95 target 1 ms")
    assert r.screen_refusal.startswith("no replica shape meets the TPOT p95 target 1 ms")
    assert slo_reason_text(r) == f"disaggregated: {r.pools_refusal}; {r.screen_refusal}"


def test_a_service_that_meets_its_targets_has_no_reason():
    assert all(i.slo_reason is None for i in plan(preset("agentic-coding")).inference)


def test_the_json_states_the_sentence_and_an_empty_one_where_the_targets_are_met():
    p = _agentic(ttft_target_ms=600)
    assert json.loads(to_json(p))["inference"][0]["slo_reason"] == slo_reason_text(p.inference[0].slo_reason) != ""
    assert json.loads(to_json(plan(preset("agentic-coding"))))["inference"][0]["slo_reason"] == ""
    day = json.loads(to_json(plan(preset("fleet-over-the-day"))))["fleet"]["services"][0]["day"]
    assert day["peak_plan"]["slo_reason"] == ""  # the fleet's peak plan, nested in its day
