"""The planner's training layout is the one the search chose, built once (issue 47 items 2 and 5).

Each transformer job's plan holds one :class:`aisize.training.TrainingLayout` (``t.layout.value``) and the
one :func:`aisize.training.estimate` of it (``t.estimate``); its headline step time, MFU, parts and memory
are that estimate's. These tests rebuild the estimate and the search from aisize.training's public calls,
outside the planner, and fail where the plan's figures are not theirs.
"""

from __future__ import annotations

import re

import pytest

from aisize import format as F
from aisize import models
from aisize import training
from aisize.plan import context as C
from aisize.plan import job as J
from aisize.plan.training import plan_training
from aisize.precision import peak_flops_per_s
from aisize.scenario import preset, preset_names
from aisize.scenario.io import from_dict, to_dict
from aisize.scenario.model import Layout
from aisize.training.parallel import ModelSizes
from aisize.units import DAY

HYBRID = "nemotron-3-nano-30b-a3b"  # Nemotron-H family: Mamba-2 + attention + MoE layers (data/transformers.csv)


def _jobs():
    out = []
    for name in preset_names():
        s = preset(name)
        out += [(name, w.name) for w in s.workloads if w.kind == "training"]
    return out


JOBS = _jobs()


def _planned(name, job):
    s = preset(name)
    ctx = C.resolve(s.hardware)
    w = next(x for x in s.workloads if x.name == job)
    return s, ctx, w, plan_training(w, ctx, s.policies)


def _engine(job, ctx, layout):
    """aisize.training.estimate at ``layout`` with the plan's hardware, called directly (not through the plan)."""
    lora = {} if job.lora_rank is None else {"lora_rank": job.lora_rank, "qlora": job.qlora}
    return training.estimate(job.model, ctx.accelerator, layout=layout, precision=job.dtype, compiled=True,
                             optimizer=job.optimizer, scaleup_bytes_per_s=J.scaleup_bytes_per_s(ctx),
                             scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, oversubscription=ctx.oversubscription,
                             switch_radix=ctx.switch_radix, calibration=job.calibration, **lora)


def test_every_preset_has_a_transformer_training_job_to_check():
    kinds = {_planned(n, j)[3].model_kind for n, j in JOBS}
    assert "transformer" in kinds  # else the tests below check nothing


@pytest.mark.parametrize("name, job", JOBS)
def test_the_plans_step_time_and_memory_are_the_estimate_at_its_layout(name, job):
    s, ctx, w, t = _planned(name, job)
    if t.model_kind != "transformer":
        assert t.layout.value is None and t.estimate is None
        return
    inputs = J.job_inputs(w, ctx, s.policies)
    lay = t.layout.value
    assert isinstance(lay, training.TrainingLayout)
    assert (lay.gpus, lay.global_batch, lay.seq_len) == (t.gpus, t.layout.global_batch, t.seq_len)
    est = _engine(inputs, ctx, lay)
    assert t.memory_bytes == est.memory.as_dict()
    assert est.layout == t.estimate.layout  # the plan kept the estimate it read
    if t.throughput_rule != "step-time":  # adapters: the step-time model books full-training FLOPs
        assert inputs.lora_rank is not None and t.step_seconds_predicted is None
        return
    assert t.step_seconds_predicted == est.step_seconds
    assert t.step_parts_seconds == {k: getattr(est.step, k) for k in training.PARTS}
    sixteen = peak_flops_per_s(ctx.accelerator, training.recipe(inputs.dtype, ctx.accelerator).high_dtype)
    assert t.mfu_predicted == pytest.approx(est.mfu * sixteen / t.peak_flops_per_s, rel=1e-12)
    # the headline time is the step-time model's: steps x predicted step, over the goodput
    steps = inputs.tokens / (lay.global_batch * lay.seq_len)
    assert t.training_days * DAY * t.goodput == pytest.approx(steps * est.step_seconds, rel=1e-12)


@pytest.mark.parametrize("name, job", JOBS)
def test_a_searched_layout_is_the_searchs_first_row(name, job):
    s, ctx, w, t = _planned(name, job)
    if t.model_kind != "transformer" or not t.layout.searched:
        return
    inputs = J.job_inputs(w, ctx, s.policies)
    lora = {} if inputs.lora_rank is None else {"lora_rank": inputs.lora_rank, "qlora": inputs.qlora}
    df = training.search_layouts(inputs.model, ctx.accelerator, t.gpus, global_batch=t.layout.global_batch,
                                 seq_len=t.seq_len, scaleout_bytes_per_s=ctx.scaleout_bytes_per_s,
                                 precision=inputs.dtype, optimizer=inputs.optimizer,
                                 headroom=s.policies.memory_headroom, top=1,
                                 scaleup_bytes_per_s=J.scaleup_bytes_per_s(ctx), framework=J.FRAMEWORK,
                                 compiled=True, oversubscription=ctx.oversubscription,
                                 switch_radix=ctx.switch_radix, calibration=inputs.calibration, **lora)
    assert training.chosen_layout(df, 0) == t.layout.value
    row = df.iloc[0]
    assert (row.tp, row.pp, row.cp, row.dp, row.micro_batch) == (
        t.layout.tensor_parallel, t.layout.pipeline_parallel, t.layout.context_parallel, t.layout.data_parallel,
        t.layout.micro_batch)
    assert row.step_seconds == t.estimate.step_seconds and row.total_bytes == t.memory_bytes["total_bytes"]


LAYOUT_TEXT = re.compile(r"TP(\d+) PP(\d+)(?:x(\d+))? CP(\d+) DP(\d+)(?: EP(\d+))? ZeRO-(\d) mb(\d+)")


@pytest.mark.parametrize("name, job", JOBS)
def test_the_layout_shown_multiplies_to_the_jobs_gpus(name, job):
    t = _planned(name, job)[3]
    m = LAYOUT_TEXT.match(F.layout(t.layout))
    assert m, F.layout(t.layout)
    tp, pp, vp, cp, dp, ep, zero, mb = (int(g) if g else None for g in m.groups())
    assert tp * pp * cp * dp == t.gpus
    lay = t.layout.value
    if lay is not None:  # the words are the TrainingLayout's degrees
        assert (tp, pp, cp, dp, zero, mb) == (lay.tp, lay.pp, lay.cp, lay.dp, lay.zero_stage,
                                              lay.pipeline_micro_batch)
        assert (vp or 1) == lay.vp and (ep or 1) == lay.ep
        assert mb * dp * lay.pipeline_microbatches * lay.accumulation == lay.global_batch


def _with(name, job, **update):
    d = to_dict(preset(name))
    next(x for x in d["workloads"] if x.get("name") == job).update(update)
    s = from_dict(d)
    ctx = C.resolve(s.hardware)
    w = next(x for x in s.workloads if x.name == job)
    return plan_training(w, ctx, s.policies)


@pytest.mark.parametrize("name, job", [("shared-cluster", "Pre-train 8B"),
                                       ("llama3-70b-pretrain", "Llama-3-70B pre-training")])
def test_a_given_layout_equal_to_the_searched_one_plans_the_same(name, job):
    # the planner once rebuilt a given layout with its own batch convention; given or searched, one layout
    # is one TrainingLayout with one step time (PP 1 here, interleaved PP 2 x 4 with CP 2 for Llama-3-70B)
    auto = _planned(name, job)[3]
    lay = auto.layout
    given = _with(name, job, gpus=auto.gpus, target_days=None, global_batch=lay.global_batch, layout={
        "tensor_parallel": lay.tensor_parallel, "pipeline_parallel": lay.pipeline_parallel,
        "context_parallel": lay.context_parallel, "expert_parallel": lay.expert_parallel,
        "zero_stage": lay.zero_stage, "micro_batch": lay.micro_batch, "recompute": lay.recompute,
        "schedule": lay.schedule, "virtual_stages": lay.virtual_stages})
    assert not given.layout.searched
    assert given.layout.value == lay.value
    assert given.step_seconds_predicted == auto.step_seconds_predicted
    assert given.memory_bytes == auto.memory_bytes and given.training_days == auto.training_days


def test_a_hybrid_job_plans_at_a_layout_its_mamba_heads_allow():
    t = _with("shared-cluster", "Pre-train 8B", model=HYBRID, tokens_billion=100.0, seq_len=8192,
              global_batch=512, gpus=64, target_days=None)
    units = ModelSizes.of(t.layout.value.model).tensor_parallel_units
    assert units == 8  # gcd of 32 attention heads, 64 Mamba-2 heads and 8 Mamba-2 groups
    assert units % t.layout.tensor_parallel == 0 and t.throughput_rule == "step-time"
    assert t.step_seconds_predicted == t.estimate.step_seconds > 0 and t.memory_fits


def test_the_planners_layout_check_reads_a_hybrids_mamba_groups():
    # 1,152 GPUs, one sequence per step, CP 1: TP x PP = 1,152. Nemotron 3 Super's 8 Mamba-2 groups cap TP
    # at 8, so PP 144 > 88 layers: no layout. Reading the 32 attention heads only said TP 16 x PP 72 would do.
    k = ModelSizes.of(models.resolve("nemotron-3-super-120b-a12b"))
    assert J._layout_exists(1152, 1, k, 72) is False
    assert J._layout_exists(1152, 1, k._replace(mamba_heads=0, mamba_groups=0), 72) is True
    assert J._layout_exists(576, 1, k, 72) is True  # TP 8 x PP 72


@pytest.mark.parametrize("layout", [
    {"tensor_parallel": 2, "pipeline_parallel": 2, "micro_batch": 2},
    {"tensor_parallel": 3},  # 32 heads: refused at every count
    {"pipeline_parallel": 4, "schedule": "interleaved-1f1b", "virtual_stages": 4, "context_parallel": 2},
])
def test_a_charts_plannable_counts_are_the_counts_a_given_layout_builds_at(layout):
    # gpus_vs_days marks the counts plan() can plan at; it ANDs the rules TrainingLayout raises, vectorized
    s = preset("shared-cluster")
    ctx = C.resolve(s.hardware)
    w = next(x for x in s.workloads if x.name == "Pre-train 8B").model_copy(
        update={"layout": Layout(zero_stage=1, **layout), "global_batch": 1024})
    job = J.job_inputs(w, ctx, s.policies)
    gpus = [8, 16, 24, 32, 48, 56, 64, 96, 128, 256, 512, 1024, 2048]
    mask = J.fixed_layout_holds(job, w.layout, gpus, 1024)
    for g, ok in zip(gpus, mask):
        try:
            J.fixed_layout(job, w.layout, g, 1024)
            built = True
        except ValueError:
            built = False
        assert built == bool(ok), g
    assert mask.any() == (layout.get("tensor_parallel") != 3)


def test_a_hybrid_that_fits_nowhere_shows_the_frugal_layout_its_mamba_groups_allow():
    # 120B parameters' full training state on 8 H100s fits no layout: the plan shows the most memory-frugal
    # one (ZeRO-3, full recompute) to say by how much, still one TrainingLayout with one estimate
    t = _with("xe9680-genai", "Full fine-tune 8B", model="nemotron-3-super-120b-a12b", gpus=8, target_days=None)
    lay = t.layout.value
    assert not t.layout.searched and not t.memory_fits
    assert (lay.zero_stage, lay.recompute, lay.pipeline_micro_batch) == (3, "full", 1)
    assert ModelSizes.of(lay.model).tensor_parallel_units % lay.tp == 0 and lay.tp * lay.dp == 8
    assert t.memory_bytes["total_bytes"] == t.estimate.memory.total_bytes > t.gpu_memory_bytes
