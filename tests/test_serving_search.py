"""The configuration search: what it counts, and that its shortcuts give what the plain evaluation gives.

The search evaluates a disaggregated pair's decode iteration once per decode shape and batch and its prefill
iterations once per prefill shape and budget, and finds the feasible set and the frontier on numpy columns;
these tests hold each shortcut to the plain computation it replaces, exactly."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from aisize import models, serving
from aisize.serving.calibration import CALIBRATION
from aisize.serving.costs import model_costs
from aisize.serving.engine import resolve_engine
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time
from aisize.serving.shapes import ShapeGrid

S = sys.modules["aisize.serving.search"]  # the module (aisize.serving.search is the function)
KW = dict(input_tokens=2048, output_tokens=512, ttft_target_s=2.0, tpot_target_s=0.05)


def test_the_count_is_shapes_by_batches_by_budgets_aggregated_and_pairs_disaggregated():
    # Llama 3.1 70B (64 heads) on H100 (8 per NVLink domain), 1, 2 or 4 stages: TP 1, 2, 4, 8 in one stage and
    # stages only of TP 8 (docs/engine-shapes.md) = 6 shapes; aggregated 6 x 13 batches x 7 budgets = 546,
    # disaggregated 6 x 6 pairs x 13 x 4 prefill budgets = 1,872; x 2 weight x 2 KV formats = 9,672
    r = serving.search("llama-3.1-70b", "h100-sxm", weight_precisions=("fp8", "bf16"), kv_precisions=("fp8", "bf16"),
                       pipeline_parallels=(1, 2, 4), **KW)
    assert r.configurations == 9_672
    assert r.configurations_per_s > 0 and r.seconds > 0


def _plain_disaggregated(m, costs, dev, rates, calib, engine, i, o, shapes, link):
    """Decode and lone-prompt prefill iterations of the pairs' model (PoolPair) on the whole pairs x batches x
    budgets grid, every element evaluated."""
    n = shapes.shape[1]
    pi, di = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    p = [shapes[k][pi][:, None, None] for k in range(3)]
    d = [shapes[k][di][:, None, None] for k in range(3)]
    b = np.asarray(S.BATCHES, dtype=float)[None, :, None]
    budget = np.maximum(np.asarray(S.PREFILL_BUDGETS, dtype=float)[None, None, :], float(i))
    grid = np.broadcast_arrays(*p, *d, b, budget)
    p, d, b, budget = grid[:3], grid[3:6], grid[6], grid[7]
    mbs = np.full(b.shape, float(engine.max_batch_size))  # trtllm: per rank
    launch = engine.launch(mbs, d[1] * d[2])
    dec = iteration_time(costs, rates, calib, decode_sequences=b, decode_context=i + 0.5 * o, prefill_tokens=0.0 * b,
                         prefill_prompts=0.0 * b, prompt_tokens=i, graphed=launch.graphed(b, b, False),
                         overlap=launch.overlap, **ShapeGrid(*d, link).kwargs()).seconds
    one = np.ones_like(b)
    lone = iteration_time(costs, rates, calib, decode_sequences=0.0 * one, decode_context=i, prefill_tokens=i * one,
                          prefill_prompts=one, prompt_tokens=i, graphed=False, **ShapeGrid(*p, link).kwargs()).seconds
    return dec, lone


@pytest.mark.parametrize("model, gpu, wp, pps", [("qwen3-30b-a3b", "b200", "nvfp4", (1, 2)),
                                                 ("llama-3.1-70b", "h100-sxm", "fp8", (1, 2, 4))])
def test_the_pairs_take_each_shapes_iterations_as_the_whole_grid_evaluates_them(model, gpu, wp, pps):
    m, engine = models.resolve(model), resolve_engine("trtllm", flat_out=False)
    dev, costs = device(gpu, wp, "fp8"), model_costs(m, wp, "fp8")
    rates = achieved_rates(dev, CALIBRATION, engine)
    shapes = S._shapes(m, dev, dev.scaleup_domain * max(pps), pps)
    link = 50e9 if max(pps) > 1 else None
    part = S._disaggregated(m, costs, dev, rates, CALIBRATION, engine, 2048.0, 512.0, shapes, link, 40e9)
    dec, lone = _plain_disaggregated(m, costs, dev, rates, CALIBRATION, engine, 2048.0, 512.0, shapes, link)
    grid = part["batch"].shape
    np.testing.assert_array_equal(np.broadcast_to(part["tpot_s"], grid), dec)
    ttft_from_plain = CALIBRATION.request_seconds + lone + np.broadcast_to(part["kv_transfer_s"], grid)
    np.testing.assert_array_equal(np.broadcast_to(part["ttft_s"], grid), ttft_from_plain)


@pytest.mark.parametrize("kw", [dict(model="deepseek-r1", accelerator="h200-sxm", pipeline_parallels=(1, 2)),
                                dict(model="llama-3.1-8b", accelerator="gb200", weight_precisions=("nvfp4", "fp8"),
                                     statistic="p99", gpu_hour_usd=3.0),
                                dict(model="qwen3-30b-a3b", accelerator="h100-sxm", modes=("disaggregated",),
                                     statistic="mean")])
def test_feasible_and_frontier_are_what_pandas_finds_on_the_frame_of_every_fitting_configuration(kw, monkeypatch):
    fit, r = _against_pandas(kw, monkeypatch)
    assert fit.fits.all() and len(fit) > 100
    assert 0 < len(r.frontier) < len(fit)


def test_one_shape_and_nothing_that_fits():
    # one GPU per replica: one shape, 7 x 13 aggregated + 1 pair x 13 x 4 disaggregated = 143 configurations
    kw = dict(input_tokens=1000, output_tokens=100, max_gpus_per_replica=1)
    r = serving.search("llama-3.1-8b", "h100-sxm", **kw)
    assert r.configurations == 143 and len(r.frontier) > 1 and r.best is not None
    assert set(r.frontier.tensor_parallel) == {1.0}
    r = serving.search("deepseek-r1", "h100-sxm", **kw)  # 671B parameters do not fit one GPU
    assert r.configurations == 143 and r.best is None and r.feasible.empty and r.frontier.empty
    assert list(r.frontier.columns[:4]) == ["mode", "weight_precision", "kv_precision", "tensor_parallel"]


def test_a_single_shape_search_is_what_pandas_finds(monkeypatch):
    fit, r = _against_pandas(dict(model="llama-3.1-8b", accelerator="h100-sxm", max_gpus_per_replica=1),
                             monkeypatch)
    assert len(fit) > 10


def _against_pandas(kw, monkeypatch):
    """The search's frame of every fitting configuration, after checking feasible, frontier and best against
    pandas' filter, sort and :func:`aisize.serving.pareto` on it."""
    seen = {}
    real = S._Fitting

    class Keep(real):
        def __init__(self, *a):
            super().__init__(*a)
            seen["fit"] = self

    monkeypatch.setattr(S, "_Fitting", Keep)
    r = serving.search(input_tokens=3000, output_tokens=400, ttft_target_s=1.5, tpot_target_s=0.04,
                       **{"statistic": "p95", **kw})
    fit = seen["fit"].frame(np.arange(len(seen["fit"].codes)))
    feasible = fit[fit.meets_targets].sort_values("tokens_per_s_per_gpu", ascending=False).reset_index(drop=True)
    pd.testing.assert_frame_equal(r.feasible, feasible, check_exact=True)
    pd.testing.assert_frame_equal(r.frontier, serving.pareto(fit), check_exact=True)
    first = feasible.iloc[0].to_dict()
    assert r.best.keys() == first.keys()
    assert all(r.best[k] == v or (v != v and r.best[k] != r.best[k]) for k, v in first.items())  # NaN: no share
    assert all(type(r.best[k]) is type(v) for k, v in first.items())
    return fit, r


def test_a_search_of_nothing_is_refused_by_name():
    for name in ("modes", "weight_precisions", "kv_precisions"):
        with pytest.raises(ValueError, match=f"{name}=\\(\\) is not allowed"):
            serving.search("llama-3.1-8b", "h100-sxm", input_tokens=100, output_tokens=10, **{name: ()})
