"""Views of one training job beyond its plan: the best layouts that fit, and GPUs against target time.

Both read the job through :mod:`aisize.plan.job`, the glue ``plan()`` itself
uses (sequence length, precision, optimizer, LoRA, scale-up link, sizing), so
what they show is what the planner would choose. A job's figures do not depend on
the rest of the scenario (packing decides only which servers it runs on).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from aisize import checks
from aisize.plan import context as C
from aisize.plan import job as J
from aisize.plan.training import days_range, plan_training
from aisize.units import DAY

def training_workload(scenario, workload):
    """The :class:`~aisize.scenario.Training` entry ``workload`` names: its name, or its index in ``workloads``."""
    items = scenario.workloads
    names = [w.name for w in items]
    if isinstance(workload, (int, np.integer)) and not isinstance(workload, bool):
        if not 0 <= workload < len(items):
            raise ValueError(f"workload={workload!r} is not allowed: an index must be 0-{len(items) - 1}")
        w = items[int(workload)]
    elif isinstance(workload, str) and workload in names:
        w = items[names.index(workload)]
    else:
        raise ValueError(f"workload={workload!r} is not allowed: give a workload name ({', '.join(names)}) "
                         "or an index")
    if w.kind != "training":
        training = [n for n, x in zip(names, items) if x.kind == "training"]
        raise ValueError(f"workload={workload!r} is not allowed: {w.name!r} is a {w.kind} workload; "
                         f"training workloads: {', '.join(training) or '(none)'}")
    return w


def layout_candidates(scenario, workload, top: int = 10) -> pd.DataFrame:
    """The fastest parallel layouts that fit for a transformer training job, at its planned GPUs and batch.

    Parameters
    ----------
    scenario : an :class:`~aisize.scenario.Scenario`
    workload : the training workload's name, or its index in ``scenario.workloads``
    top : rows returned [count]

    Returns
    -------
    :func:`aisize.training.search_layouts`'s DataFrame (layout columns ``tp``, ``pp``, ``cp``, ``dp``,
    ``ep``, ``schedule``, ``virtual_stages``, ``zero_stage``, ``micro_batch``, ``recompute``; the
    step-time parts; ``step_seconds``, ``mfu``, ``tokens_per_s`` and every memory line item [B] per GPU),
    searched exactly as ``plan()`` searches (its first row is the
    plan's layout when the layout is "auto"); empty for a model that is not a transformer.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 3 (via :func:`aisize.training.search_layouts`).
    """
    n = int(checks.scalar("top", checks.integer("top", top, high=10**6)))
    w = training_workload(scenario, workload)
    ctx = C.resolve(scenario.hardware)
    job = J.job_inputs(w, ctx, scenario.policies)
    if job.kind != "transformer":
        return pd.DataFrame()
    t = plan_training(w, ctx, scenario.policies)
    return J.search(job, ctx, scenario.policies, t.gpus, t.layout.global_batch, top=n)


def gpus_vs_days(scenario, workload, days, *, memory: bool = False) -> pd.DataFrame:
    """GPUs (whole servers) one training job needs for each target time, sized as ``plan()`` sizes it.

    A transformer's full training is timed by the step-time model at the layout the plan chooses; searching
    that for every target takes a layout search per candidate count (half a second for a chart), so its
    curve is sized at the MFU the model predicts for the job's own plan, and passes through that plan exactly
    (the row at its own target, or at its own time when its GPUs are given). Other targets read what that MFU
    gives; ``plan()`` at such a target searches layouts again and may settle on a nearby count.

    Parameters
    ----------
    scenario : an :class:`~aisize.scenario.Scenario`
    workload : the training workload's name, or its index in ``scenario.workloads``
    days : target times to train [days], > 0, scalar or array (the job's own gpus/target_days are ignored)
    memory : also plan the job at each point for ``memory_fits`` and ``memory_per_gpu_bytes`` (a layout
        search per point: milliseconds each; the sizing columns alone are vectorized)

    Returns
    -------
    DataFrame, one row per target: ``target_days``, ``gpus``, ``servers``, ``goodput``, ``training_days``
    (the planned time, after rounding up to whole servers and goodput), ``days_low`` / ``days_high`` (the
    plan's time range), ``plannable`` (False where ``plan()`` refuses that target: it needs
    :data:`~aisize.plan.job.MAX_GPUS` GPUs or more (the row shows the job at that cap, missing the
    target), a given layout breaks a layout rule there (:func:`aisize.plan.job.fixed_layout_holds`: TP x
    PP x CP does not divide the GPUs, micro-batch x DP the batch, ...), or a given global batch admits no
    layout; memory is not checked unless ``memory``).

    References
    ----------
    .. [1] :func:`aisize.compute.gpus_needed` and :func:`aisize.storage.checkpoint.goodput` (Daly 2006),
       iterated in :func:`aisize.plan.job.size`.
    """
    target_days = np.ravel(checks.positive("days", days, high=1e6)).astype(float)
    memory = checks.flag("memory", memory)
    own = training_workload(scenario, workload)
    w = own.model_copy(update={"gpus": None, "target_days": 1.0})
    ctx, pol = C.resolve(scenario.hardware), scenario.policies
    job = J.job_inputs(w, ctx, pol)
    mine = _plan_or_none(own, ctx, pol) if job.kind == "transformer" else None  # refused: the policy's curve
    stepped = mine is not None and mine.throughput_rule == "step-time"
    if stepped:  # sized at the MFU the step-time model gives the job's own plan
        job = dataclasses.replace(job, mfu=mine.mfu_assumed)
    cap = (J.MAX_GPUS // ctx.server.gpus) * ctx.server.gpus
    sz = J.size(job, w, ctx, pol, target_seconds=target_days * DAY, max_gpus=cap)
    gpus = sz.gpus.astype(np.int64)
    ok = gpus < cap
    if job.kind == "transformer" and w.layout != "auto":
        ok &= J.fixed_layout_holds(job, w.layout, gpus, J.global_batch(w, job.seq_len, gpus))
    elif job.kind == "transformer" and w.global_batch:  # a derived batch always splits over the GPUs
        ok[ok] = J.layouts_exist(job, ctx, gpus[ok], J.global_batch(w, job.seq_len, gpus[ok]))
    planned_days = sz.seconds / DAY
    basis = job.mfu if job.kind == "transformer" else pol.mfu  # the MFU the rows' times rest on
    ranges = [days_range(float(d), basis, int(g), job.throughput, step_time=stepped)[:2]
              for d, g in zip(planned_days, gpus)]
    low, high = (np.array(r, dtype=float).reshape(gpus.shape) for r in zip(*ranges))
    servers, goodput, plannable = sz.servers.astype(np.int64), np.array(sz.goodput, dtype=float), ok.copy()
    if stepped:  # the job's own plan, exactly (set in the arrays: pandas' .loc took 2 ms of a Tokens move's 10)
        own_target = own.target_days if own.gpus is None else mine.training_days
        rows = np.flatnonzero(target_days == own_target)
        gpus[rows], servers[rows], goodput[rows], planned_days[rows] = (mine.gpus, mine.servers, mine.goodput,
                                                                        mine.training_days)
        low[rows], high[rows], plannable[rows] = mine.days_low, mine.days_high, True
    out = pd.DataFrame({"target_days": target_days, "gpus": gpus, "servers": servers, "goodput": goodput,
                        "training_days": planned_days, "days_low": low, "days_high": high, "plannable": plannable})
    plans = [_plan_or_none(w.model_copy(update={"target_days": float(d)}), ctx, pol) if k and memory else None
             for d, k in zip(target_days, ok)]
    if memory:
        out["memory_fits"] = [p.memory_fits if p else None for p in plans]
        out["memory_per_gpu_bytes"] = [p.memory_bytes["total_bytes"] if p else np.nan for p in plans]
    return out


def _plan_or_none(w, ctx, pol):
    """plan_training of ``w``, or None where it refuses the target (beyond the limits, no layout)."""
    try:
        return plan_training(w, ctx, pol)
    except ValueError:
        return None
