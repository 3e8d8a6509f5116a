"""A service is sized with the replica layouts its engine runs and meets its own targets (issue 49.2,
docs/engine-shapes.md): vLLM serves DeepSeek-R1 FP8 on one 8-GPU node as TP 8 + EP or DP 8 + EP (vLLM recipes,
DeepSeek-V3 usage guide), across two H100 nodes as TP 8 x PP 2; agentic-coding was planned as 14 x TP 1 x PP 8,
a layout no engine publishes."""

from __future__ import annotations

import pytest

from aisize import models, serving
from aisize.plan import plan
from aisize.plan import context as C
from aisize.plan.replica_count import _evaluate, _one, below_knee, meets_targets
from aisize.present.slo_text import slo_reason_text
from aisize.scenario import io, preset, preset_names
from aisize.serving import hardware, sizing
from aisize.serving.shapes import ENGINE_LAYOUTS, ReplicaShape, engine_runs


def _shapes(model="deepseek-r1", accelerator="b200", engine="vllm", **kw):
    dev = hardware.device(accelerator, "fp8", "fp8")
    return sizing.candidate_shapes(models.resolve(model), dev, scaleout_bytes_per_s=50e9, engine=engine, **kw)


def test_deepseek_r1_on_one_node_is_offered_tp8_and_dp8_ep8_and_no_pipeline_inside_a_server():
    shapes = {(s.tensor_parallel, s.attention_dp, s.pipeline_parallel) for s in _shapes()}
    assert {(8, 1, 1), (8, 8, 1)} <= shapes  # the recipe's TP8+EP and DP8+EP
    assert (1, 1, 8) not in shapes and (2, 1, 4) not in shapes  # no recipe pipelines one node's GPUs
    assert all(tp == 8 and dp == 1 for tp, dp, pp in shapes if pp > 1)  # a stage is a whole node, no DP with PP


def test_the_rule_and_its_table():
    assert not engine_runs(ReplicaShape(1, 1, 8), 8) and not engine_runs(ReplicaShape(8, 8, 2), 8)
    assert engine_runs(ReplicaShape(8, 8, 1), 8) and engine_runs(ReplicaShape(8, 1, 2), 8)
    assert engine_runs(ReplicaShape(1, 1, 4), 1)  # no NVLink: TP 1 is the widest, stages are GPUs
    assert {"vllm", "sglang", "trtllm"} <= set(ENGINE_LAYOUTS)
    assert all(v.source for v in ENGINE_LAYOUTS.values())
    # an engine without published attention-DP recipes is offered TP only
    assert all(s.attention_dp == 1 for s in _shapes(engine="my-engine"))


def test_a_shape_the_scenario_fixes_is_tried_as_given():
    shapes = _shapes(tensor_parallel=1, pipeline_parallel=8)
    assert [(s.tensor_parallel, s.pipeline_parallel) for s in shapes] == [(1, 8)] * len(shapes)


def test_agentic_coding_runs_a_vllm_recipe_and_meets_its_targets_with_the_fewest_replicas():
    sc = preset("agentic-coding")
    i = plan(sc).inference[0]
    assert (i.tensor_parallel, i.pipeline_parallel) == (8, 1) and i.attention_dp in (1, 8)
    assert i.ttft_met and i.tpot_met and not i.slo_reason
    assert i.ttft_p95_seconds <= 5.0 and i.tpot_p95_seconds <= 0.050
    # 14 x TP 1 x PP 8 before, the forced-TP 8 attempt bought 160; 13 x TP 8 met the targets at 92 % busy, past
    # the latency knee, so the planner adds replicas short of it (aisize.plan.replica_count.below_knee)
    assert i.gpus <= 120 and i.latency_elasticity <= C.KNEE_ELASTICITY
    # one replica fewer misses a target or runs past the knee as the plan estimates it (the fewest that hold)
    w = sc.workloads[0]
    ctx, cal = C.resolve(sc.hardware), C.serving_calibration(sc.policies)
    shape = ReplicaShape(i.tensor_parallel, i.attention_dp, i.pipeline_parallel)
    kw = dict(weight_precision=w.weight_precision, kv_precision=w.kv_precision, input_tokens=w.prompt_tokens,
              output_tokens=w.output_tokens)
    one = _one(w, shape, kw, serving.ENGINES[w.engine], cal)
    _, fewer = _evaluate(w, ctx, sc.policies, models.resolve(w.model), shape, i.replicas - 1, one)
    assert not (meets_targets(w, fewer, 5.0, 0.050) and below_knee(w, fewer))


def test_deepseek_r1_on_h100_pipelines_across_two_nodes_as_vllm_does():
    # 671 GB of FP8 weights do not fit 8 x 80 GB: vLLM's multi-node layout, TP 8 inside a node x PP 2 across
    r1 = next(i for i in plan(preset("serving-at-scale")).inference if i.model == "deepseek-r1")
    assert (r1.tensor_parallel, r1.pipeline_parallel) == (8, 2)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_service_runs_an_engine_layout_and_meets_its_targets(name):
    for i in plan(preset(name)).inference:
        if i.serving_mode != "aggregated" or i.slo_reason:
            continue
        assert engine_runs(ReplicaShape(i.tensor_parallel, i.attention_dp, i.pipeline_parallel), 8) or \
            i.pipeline_parallel == 1, (name, i.name)
        assert i.ttft_met and i.tpot_met, (name, i.name, i.ttft_p95_seconds, i.tpot_p95_seconds)


def _agentic(**targets):
    d = preset("agentic-coding").model_dump(mode="json", exclude_none=True)
    d["workloads"][0].update(targets)
    return plan(io.from_dict(d)).inference[0]


def test_a_target_only_speculation_reaches_is_met_not_refused():
    # the screen leaves MTP out: its best TPOT p95 at light load is 6.8 ms; the estimate with MTP reaches 6 ms
    i = _agentic(tpot_target_ms=6)
    assert i.best_tpot_seconds > 0.006
    assert i.tpot_met and i.ttft_met and not i.slo_reason and i.tpot_p95_seconds <= 0.006
    assert (i.tensor_parallel, i.pipeline_parallel) == (8, 1)


def test_a_miss_is_said_with_its_figures():
    i = _agentic(ttft_target_ms=600)  # TTFT p95 stays near 0.65-0.70 s however many TP 8 replicas serve it
    assert not i.ttft_met and i.slo_reason is not None
    u = i.slo_reason.unmet  # the planner's miss, typed: the nearest shape as the plan estimates it
    assert i.slo_reason.pools_refusal is None and not i.slo_reason.screen_refusal and u is not None
    assert (u.statistic, u.ttft_target_seconds, u.tpot_target_seconds) == ("p95", 0.6, 0.05)
    assert (u.tensor_parallel, u.pipeline_parallel, u.replicas) == (8, 1, i.replicas)
    assert u.ttft_seconds == i.ttft_p95_seconds > 0.6 and u.tpot_seconds == i.tpot_p95_seconds  # the plan's figures
    text = slo_reason_text(i.slo_reason)
    assert "TTFT p95" in text and "target 600 ms" in text
