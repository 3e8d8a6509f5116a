"""The planner's views for charts agree with plan() itself: layout candidates, GPUs against target
time, the queueing stations and their curves, the time range and the network's endpoints."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from aisize import catalog
from aisize.plan import (concurrency_curve, gpus_vs_days, latency_curve, layout_candidates, plan,
                         storage_latency_curve, sweep)
from aisize.plan import context as C
from aisize.plan import job as J
from aisize.queueing import latency_vs_load
from aisize.scenario import preset, preset_names
from aisize.units import DAY
from aisize.validation.ranges import mfu_range

PRESETS = preset_names()


@pytest.fixture(scope="module")
def plans():
    return {name: plan(preset(name)) for name in PRESETS}


@pytest.mark.parametrize("name", PRESETS)
def test_layout_candidates_rank_the_plans_own_search(plans, name):
    p = plans[name]
    for i, t in enumerate(p.training):
        df = layout_candidates(p.scenario, t.name, top=4)
        if t.model_kind != "transformer":
            assert df.empty
            continue
        assert 1 <= len(df) <= 4 and df["step_seconds"].is_monotonic_increasing
        assert (df["tp"] * df["pp"] * df["cp"] * df["dp"] == t.gpus).all()
        if t.layout.searched:  # the plan keeps the top candidate
            top = df.iloc[0]
            lay = t.layout
            assert (top.tp, top.pp, top.dp, top.zero_stage, top.micro_batch, top.recompute) == (
                lay.tensor_parallel, lay.pipeline_parallel, lay.data_parallel, lay.zero_stage, lay.micro_batch,
                lay.recompute)
            assert top.total_bytes == t.memory_bytes["total_bytes"]
        index = [w.name for w in p.scenario.workloads].index(t.name)
        assert layout_candidates(p.scenario, index, top=4).equals(df)


def test_layout_candidates_refuse_what_is_not_a_training_job(plans):
    s = plans["xe9680-genai"].scenario
    with pytest.raises(ValueError, match="workload"):
        layout_candidates(s, "no such job")
    with pytest.raises(ValueError, match="workload"):
        layout_candidates(s, "Chat assistant 8B")  # an inference service
    with pytest.raises(ValueError, match="workload"):
        layout_candidates(s, 99)
    with pytest.raises(ValueError, match="top"):
        layout_candidates(s, 0, top=0)


@pytest.mark.parametrize("name", PRESETS)
def test_seq_len_is_the_one_the_job_trains_at(plans, name):
    for t in plans[name].training:
        w = next(x for x in plans[name].scenario.workloads if x.name == t.name)
        if t.model_kind != "transformer":
            assert t.seq_len is None
            continue
        assert t.seq_len == (w.seq_len or min(catalog.transformers[t.model].max_seq, 4096))


def test_a_step_timed_jobs_curve_is_sized_at_its_plans_mfu_and_passes_through_the_plan(plans):
    """Issue 47: the step-time model times a transformer's full training; the curve is sized at the MFU it gives
    the job's own plan (a layout search per target would take half a second a chart) and holds that plan."""
    p = plans["xe9680-genai"]
    t = next(x for x in p.training if x.name == "Full fine-tune 8B")
    assert t.throughput_rule == "step-time"
    days = [0.05, 0.5, t.target_days, 3.0, 40.0]
    frame = gpus_vs_days(p.scenario, t.name, days)
    own = frame.loc[frame["target_days"] == t.target_days].iloc[0]
    assert (own.gpus, own.servers, own.training_days, own.goodput) == (t.gpus, t.servers, t.training_days, t.goodput)
    w = next(x for x in p.scenario.workloads if x.name == t.name).model_copy(update={"gpus": None})
    ctx = C.resolve(p.scenario.hardware)
    job = dataclasses.replace(J.job_inputs(w, ctx, p.scenario.policies), mfu=t.mfu_assumed)
    sized = J.size(job, w, ctx, p.scenario.policies, target_seconds=np.array(days) * DAY)
    others = frame["target_days"] != t.target_days
    assert list(frame.loc[others, "gpus"]) == [int(g) for g, d in zip(sized.gpus, days) if d != t.target_days]
    assert frame["gpus"].is_monotonic_decreasing


def test_a_step_timed_jobs_own_row_is_its_plan_to_the_bit(plans):
    """Each step-timed job's curve holds its own plan at its own target in every column, its time range included
    (the range the MFU curve gives there differs in the last bits for the LoRA 70B job)."""
    p = plans["xe9680-genai"]
    timed = [t for t in p.training if t.throughput_rule == "step-time"]
    assert len(timed) >= 2
    for t in timed:
        frame = gpus_vs_days(p.scenario, t.name, [0.5, t.target_days, 40.0])
        own = frame.loc[frame["target_days"] == t.target_days].iloc[0]
        assert (own.gpus, own.servers, own.goodput, own.training_days, own.days_low, own.days_high, own.plannable) \
            == (t.gpus, t.servers, t.goodput, t.training_days, t.days_low, t.days_high, True), t.name


QLORA = "xe9680-genai with its LoRA 70B as QLoRA"  # a transformer the MFU policy times (LoRA is step-timed)


def _scenario(name):
    if name != QLORA:
        return preset(name)
    s = preset("xe9680-genai")
    return s.model_copy(update={"workloads": [
        w.model_copy(update={"method": "qlora"}) if w.name == "LoRA fine-tune 70B" else w for w in s.workloads]})


@pytest.mark.parametrize("name, job", [(QLORA, "LoRA fine-tune 70B"), ("io-blender", "Vision training"),
                                       ("hpe-weka-resnet", 0)])
def test_gpus_vs_days_is_what_plan_gives_each_target(plans, name, job):
    p = plans[name] if name in plans else plan(_scenario(name))
    days = [0.05, 0.5, 3.0, 40.0]
    frame = gpus_vs_days(p.scenario, job, days, memory=True)
    t = p.training[0] if job == 0 else next(x for x in p.training if x.name == job)
    assert t.throughput_rule != "step-time"  # the step-timed curve's own test is above
    others = p.gpus - t.gpus
    for row in frame.itertuples():
        out = sweep(p.scenario, f"workloads.{t.name}.target_days", [row.target_days])
        assert row.plannable and int(out["gpus"].iloc[0]) - others == row.gpus, row
        variant = plan(_scenario(name).model_copy(update={"workloads": tuple(
            w.model_copy(update={"target_days": row.target_days, "gpus": None}) if w.name == t.name else w
            for w in p.scenario.workloads)}))
        v = next(x for x in variant.training if x.name == t.name)
        assert (v.gpus, v.servers, v.memory_fits) == (row.gpus, row.servers, row.memory_fits)
        assert (v.training_days, v.days_low, v.days_high, v.goodput) == pytest.approx(
            (row.training_days, row.days_low, row.days_high, row.goodput), rel=1e-12)
        assert v.training_days <= row.target_days * (1 + 1e-9)
    assert frame["gpus"].is_monotonic_decreasing


def test_gpus_vs_days_flags_targets_plan_refuses():
    s = preset("llama3-70b-pretrain")  # global batch 2,048 given: 8,464 GPUs cannot split it
    frame = gpus_vs_days(s, 0, [0.25, 26.37, 210.96, 843.8])
    assert frame["plannable"].tolist() == [False, True, True, True]
    assert frame["gpus"].iloc[0] == 10**7  # beyond the engines' GPU limit: shown at the cap
    # every plannable count is one over which some layout splits the 2,048 sequences (a count that cannot is
    # rounded up a server at a time); the job's own time reads its own plan
    w, ctx = s.workloads[0], C.resolve(s.hardware)
    job = J.job_inputs(w, ctx, s.policies)
    assert J.layouts_exist(job, ctx, np.array(frame["gpus"].iloc[1:]), 2048).all()
    t = plan(s).training[0]
    own = gpus_vs_days(s, 0, [t.training_days])
    assert own["gpus"].iloc[0] == t.gpus == 1024


def test_gpus_vs_days_checks_its_inputs(plans):
    s = plans["xe9680-genai"].scenario
    with pytest.raises(ValueError, match="days"):
        gpus_vs_days(s, 0, [1.0, -2.0])
    with pytest.raises(ValueError, match="workload"):
        gpus_vs_days(s, "Chat assistant 8B", [1.0])
    with pytest.raises(ValueError, match="memory"):
        gpus_vs_days(s, 0, [1.0], memory="yes")


@pytest.mark.parametrize("name", PRESETS)
def test_time_range_carries_the_published_mfus(plans, name):
    from aisize.validation.ranges import step_time_range
    for t in plans[name].training:
        r = t.days_range_mfu
        if t.model_kind != "transformer":  # a measured spread or none, not published LLM MFUs
            assert r is None
            continue
        if t.throughput_rule == "step-time":  # the step-time model's own error on published runs, not MFUs
            assert r is None and (t.days_low, t.days_high) == pytest.approx(step_time_range(t.training_days))
            continue
        published = mfu_range(t.gpus)
        assert (r.low, r.high, r.cases, r.expected) == (published.low, published.high, published.cases,
                                                        t.mfu_assumed)
        # time is inversely proportional to MFU (PaLM, arXiv 2204.02311, appendix B)
        assert t.days_low * r.high == pytest.approx(t.training_days * r.expected, rel=1e-12)
        assert t.days_high * r.low == pytest.approx(t.training_days * r.expected, rel=1e-12)


@pytest.mark.parametrize("name", PRESETS)
def test_storage_station_is_the_planners_queue(plans, name):
    p = plans[name]
    s = p.storage
    latency = catalog.storage[s.system].latency_seconds or C.STORAGE_LATENCY_SECONDS
    # Little's law channels: supplied IOPS x unloaded latency (2.5 M IOPS at 100 us -> 250)
    assert s.station.service_seconds == latency
    assert s.station.servers == max(1, round(s.supply_iops * latency))
    ops = max(s.read_iops + s.write_iops, 1e-9)
    assert float(latency_vs_load(s.station, ops).response_mean_seconds) == s.latency_mean_seconds
    # one curve (issue 49.1): the knee drawn is where the closed curve bends, N* = saturation x S (its asymptotes
    # meet; Lazowska et al. 1984, 5.3); the 2x-latency point is Little's law at the open-system knee, knee_iops x 2S,
    # further out on the straight part (1.41 N*), below the 2c of Little's flat channels (M/M/2 doubles at 0.707)
    assert s.knee_concurrency == int(s.station.capacity_per_s * latency * (1 + 1e-12))
    assert s.knee_factor_concurrency == int(s.knee_iops * 2 * latency * (1 + 1e-12)) < 2 * s.station.servers
    assert s.knee_concurrency <= s.knee_factor_concurrency
    assert s.outstanding_ios == pytest.approx((s.read_iops + s.write_iops) * s.latency_mean_seconds, rel=1e-12)
    # rag-service's station saturates below one IO in flight (2,544 IOPS of large IOs x 0.3 ms): its knee is 0
    knee = max(s.knee_factor_concurrency, 1e-3)
    r = storage_latency_curve(p, [1e-3, max(s.knee_concurrency, 1e-3), knee, s.knee_factor_concurrency + 1.0])
    r = r["response_mean_seconds"].tolist()
    # unloaded when idle, 1.62x at the bend, doubled past the 2x point
    assert latency * (1 - 1e-9) <= r[0] <= r[1] <= r[2] <= 2 * latency < r[3]
    if s.knee_concurrency >= 1:
        assert r[1] <= 1.62 * latency
    if s.outstanding_ios > 0 and math.isfinite(s.outstanding_ios):  # the blend's point lies on the closed curve
        at = storage_latency_curve(p, [s.outstanding_ios]).iloc[0]
        assert at.response_mean_seconds == pytest.approx(s.latency_mean_seconds, rel=1e-6)
    assert storage_latency_curve(s)["concurrency"].max() >= 2 * s.knee_concurrency - 1e-9


@pytest.mark.parametrize("name", PRESETS)
def test_inference_station_and_curves(plans, name):
    for i in plans[name].inference:
        assert (i.station.servers, i.station.service_seconds) == (i.replicas * i.max_batch, i.request_seconds)
        assert i.knee_concurrency == 2 * i.station.servers
        curve = latency_curve(i, 20)
        # up to 99 % of the capacity rate; random arrivals may fill the slots before that (utilisation > 1)
        if i.serving_mode == "disaggregated":  # up to 99 % of the busier pool
            assert curve["utilisation"].iloc[-1] == pytest.approx(0.99, rel=0.05) and len(curve) == 20
        else:
            top = 0.99 * i.estimate.max_requests_per_s * max(i.replicas, 1)
            assert curve["requests_per_s"].iloc[-1] == pytest.approx(top) and len(curve) == 20
            assert curve["utilisation"].iloc[-1] >= 0.94 and curve["utilisation"].is_monotonic_increasing
        # the curve is the plan's own model: at the planned rate it gives the plan's latencies
        at = np.interp(i.requests_per_s, curve.requests_per_s, curve.latency_mean_seconds)
        assert at == pytest.approx(i.latency_mean_seconds, rel=0.1)
        assert curve.latency_p95_seconds.is_monotonic_increasing
        closed = concurrency_curve(i.station, [1, i.station.servers])
        assert closed["response_mean_seconds"].tolist() == pytest.approx([i.request_seconds] * 2)


def test_curves_check_their_inputs(plans):
    p = plans["xe9680-genai"]
    with pytest.raises(ValueError, match="points"):
        latency_curve(p.inference[0], 1)
    with pytest.raises(ValueError, match="concurrency"):
        storage_latency_curve(p, [0.0])


@pytest.mark.parametrize("name", PRESETS)
def test_storage_fabric_endpoints_are_server_nics_plus_storage_ports(plans, name):
    n, s = plans[name].network, plans[name].storage
    port = catalog.links[n.storage_link].bandwidth_per_direction_bytes_per_s
    ports = max(1, math.ceil(s.supply_read_bytes_per_s / port))
    assert n.storage_fabric["endpoints"] == n.storage_nics + ports


def test_every_storage_unit_gets_its_ports():
    # three 4U chassis rated 15 GB/s each (DESIGN.md sec. 1) on 25 GbE (3.125 GB/s per port): 3 x 5 ports
    p = plan(preset("littles-law"))
    assert p.storage.units == 3 and p.network.storage_link == "eth-25g"
    assert p.network.storage_fabric["endpoints"] - p.network.storage_nics == 3 * math.ceil(15e9 / 3.125e9)


@pytest.mark.parametrize("name, link, per_direction", [
    ("xe9680-genai", "nvlink-4", 450e9),  # H100 NVLink: 900 GB/s both directions (DESIGN.md)
    ("hpe-weka-resnet", "nvlink-2", 150e9),  # V100 NVLink: 300 GB/s both directions
    ("littles-law", "pcie-gen4-x16", 31.5e9),  # L40S has no NVLink: PCIe Gen4 x16, 31.5 GB/s
])
def test_scale_up_link_is_the_one_tensor_parallel_traffic_crosses(plans, name, link, per_direction):
    n = plans[name].network
    assert n.scaleup_link == link
    assert n.scaleup_per_gpu_bytes_per_s == pytest.approx(per_direction, rel=0.01)
    assert np.isfinite(n.scaleup_domain) and n.scaleup_domain >= 1


def test_clear_caches_forgets_plans_and_the_same_plan_follows():
    from aisize.plan import clear_caches
    from aisize.plan import inference, job, training as plan_training
    from aisize.serving import costs

    s = preset("xe9680-genai")
    before = plan(s)
    memoised = (inference.plan_inference, plan_training.plan_training, job.job_inputs, costs._model_costs)
    assert all(f.cache_info().currsize > 0 for f in memoised)
    clear_caches()
    assert all(f.cache_info().currsize == 0 for f in memoised)
    after = plan(s)
    assert (after.gpus, after.servers) == (before.gpus, before.servers)
