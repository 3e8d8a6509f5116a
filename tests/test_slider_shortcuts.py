"""The shortcuts that spare a slider move work (issue 51 item 2) give the figures the full computation gives.

The storage plan is reused while the workloads' plans are the same objects (or equal records) and the context's
and policies' fields it read are equal (:meth:`aisize.plan.incremental.PlanCache.reuse`).

A fabric's oversubscription slows a collective only past one switch (:func:`aisize.training.comm.scaleout_rate`):
a training job on at most ``switch_radix`` GPUs shares its layout search and estimate across oversubscriptions
(:func:`aisize.plan.job.fabric_seen`), and the app's plan cache reuses the plan of a job whose searches ran at no more
(:func:`aisize.plan.cluster._fabric_free`). The L40S server has no
NVLink (scale-up domain 1 GPU), so on an 8-port switch 8 GPUs are the most one switch holds (32 GPUs see the ratio).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from aisize.plan import job as J
from aisize.plan import context as C
from aisize.plan import clear_caches, cluster, plan
from aisize.present.export import to_json
from aisize.plan import incremental
from aisize.plan.incremental import PlanCache
from aisize.scenario import from_dict, preset, to_dict
from aisize.training import search_layouts

RADIX = 8


def _data(oversubscription: float, gpus=(RADIX, 4 * RADIX)) -> dict:
    """The default preset on 4-GPU L40S servers and 8-port switches, its training jobs on ``gpus`` GPUs."""
    d = to_dict(preset("xe9680-genai"))
    d["hardware"].update(server="generic-4x-l40s", switch_radix=RADIX, oversubscription=oversubscription)
    jobs = [w for w in d["workloads"] if w["kind"] == "training"]
    for w, n in zip(jobs, gpus):
        w.update(gpus=n, target_days=None)
    return d


def _direct(job, ctx, policies, gpus, oversubscription):
    """The search as :func:`aisize.plan.job.search` runs it, without its memo and with the oversubscription given."""
    return search_layouts(job.model, ctx.accelerator, gpus, global_batch=8 * gpus, seq_len=job.seq_len,
                          scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, precision=job.dtype, optimizer=job.optimizer,
                          headroom=policies.memory_headroom, top=5, scaleup_bytes_per_s=J.scaleup_bytes_per_s(ctx),
                          framework=J.FRAMEWORK, compiled=True, oversubscription=oversubscription,
                          switch_radix=ctx.switch_radix, calibration=job.calibration)


def test_oversubscription_reaches_a_job_only_past_one_switch():
    s = from_dict(_data(4.0))
    ctx = C.resolve(s.hardware)
    w = next(w for w in s.workloads if w.kind == "training" and w.model == "llama-3-8b")
    job = J.job_inputs(w, ctx, s.policies)
    within = [_direct(job, ctx, s.policies, RADIX, o) for o in (1.0, 4.0)]
    pd.testing.assert_frame_equal(within[0], within[1], check_exact=True)
    past = [_direct(job, ctx, s.policies, 4 * RADIX, o) for o in (1.0, 4.0)]
    assert (past[1]["step_seconds"].iloc[0] > past[0]["step_seconds"].iloc[0]), "the bound would be loose"
    assert J.fabric_seen(ctx, RADIX).oversubscription == 1.0 and J.fabric_seen(ctx, RADIX + 1) is ctx
    # the memoised search at the real oversubscription gives the direct search's frame
    memo = J.search(job, ctx, s.policies, RADIX, 8 * RADIX, 5)
    pd.testing.assert_frame_equal(memo, within[1], check_exact=True)


def test_an_oversubscription_move_reuses_the_jobs_within_one_switch_and_replans_the_rest():
    cache = PlanCache()
    plans = {}
    for o in (1.0, 2.0, 4.0, 1.0):
        s = from_dict(_data(o))
        plans[o] = cached = plan(s, cache)
        assert to_json(cached) == to_json(plan(s)), f"oversubscription {o}: the cached plan is not the fresh one"
    small, large = plans[1.0].training
    assert all(p.training[0] is small for p in plans.values())  # one entry served every oversubscription
    assert plans[4.0].training[1].step_seconds_predicted > large.step_seconds_predicted  # the 8-GPU job sees the leaves' ratio


@pytest.mark.parametrize("gpus", [(RADIX, 4 * RADIX), (4 * RADIX, RADIX)])
def test_a_plan_key_that_ignored_the_fabric_is_caught(monkeypatch, gpus):
    """The comparison above can fail: a plan cache that keyed every training job without the oversubscription
    reuses the 32-GPU job's stale plan."""
    monkeypatch.setattr(cluster, "_fabric_free", lambda counts, ctx: True)
    cache = PlanCache()
    plan(from_dict(_data(1.0, gpus)), cache)
    s = from_dict(_data(4.0, gpus))
    assert to_json(plan(s, cache)) != to_json(plan(s))


def test_a_search_memo_that_ignored_the_fabric_is_caught(monkeypatch):
    """Fresh plans can fail too: searches memoised on the non-blocking fabric at every count give the 32-GPU job
    the ratio-1 layout and time."""
    clear_caches()
    monkeypatch.setattr(J, "fabric_seen", lambda ctx, g: J._non_blocking(ctx) if ctx.oversubscription > 1 else ctx)
    plan(from_dict(_data(1.0)))
    s = from_dict(_data(4.0))
    stale = to_json(plan(s))
    monkeypatch.undo()
    clear_caches()
    assert stale != to_json(plan(s))


def _moved(data: dict, section: str, field: str, value) -> dict:
    out = json.loads(json.dumps(data))
    out[section][field] = value
    return out


def test_a_price_or_fabric_move_keeps_the_storage_plan_and_a_storage_input_replans_it():
    data = to_dict(preset("xe9680-genai"))
    cache = PlanCache()
    first = plan(from_dict(data), cache)
    for moved in (_moved(data, "hardware", "oversubscription", 2.0),
                  _moved(data, "cost", "life_years", data["cost"]["life_years"] + 1)):
        s = from_dict(moved)
        cached = plan(s, cache)
        assert cached.storage is first.storage  # reused: what it reads did not move
        # the jobs, sized for a target time on at most 64 GPUs, are the same plans
        assert all(a is b for a, b in zip(cached.training, first.training))
        assert to_json(cached) == to_json(plan(s))
    for moved in (_moved(data, "policies", "storage_usable_ratio", 0.5),
                  _moved(data, "policies", "checkpoint_retention", 9)):
        s = from_dict(moved)
        cached = plan(s, cache)
        assert cached.storage is not first.storage
        assert to_json(cached) == to_json(plan(s))


def test_a_storage_key_that_ignored_the_workloads_is_caught(monkeypatch):
    """The comparison above can fail: a storage entry reused whatever the workloads' plans say is stale."""
    monkeypatch.setattr(incremental, "_same", lambda a, b: True)
    data = to_dict(preset("xe9680-genai"))
    cache = PlanCache()
    plan(from_dict(data), cache)
    data["workloads"][1]["target_days"] /= 4  # the 8B fine-tune on more GPUs: more reads, bigger checkpoints
    s = from_dict(data)
    assert to_json(plan(s, cache)) != to_json(plan(s))


def _cv_sweep() -> list[str]:
    """The default preset's service at 200 requests/s, its prompt CV moved as the slider moves it: each plan's JSON."""
    from aisize.plan import inference as PI

    out = []
    for cv in (0.0, 0.1, 0.2, 0.5, 0.9):
        d = to_dict(preset("xe9680-genai"))
        service = next(w for w in d["workloads"] if w["kind"] == "inference")
        service.update(requests_per_s=200.0, prompt_cv=cv)
        PI.plan_inference.cache_clear()
        out.append(to_json(plan(from_dict(d))))
    return out


def test_a_shape_ruled_out_by_its_capacity_without_a_rate_plans_what_the_loaded_estimate_plans(monkeypatch):
    """At 200 requests/s a shape another already beats stops at the capacity of its estimate without a rate; the
    long way (no load-free shortcuts, nothing kept) estimates it at the screen's count and must plan the same."""
    from aisize.plan import replica_count as RC

    fast = _cv_sweep()
    monkeypatch.setattr(RC, "load_free", lambda w, arch: False)
    monkeypatch.setattr(RC, "_estimates", RC._Kept(0))
    monkeypatch.setattr(RC, "_probes", RC._Kept(0))
    monkeypatch.setattr(RC, "_replicas", RC._Kept(0))
    monkeypatch.setattr(RC, "_capacities", RC._Kept(0))
    assert _cv_sweep() == fast
