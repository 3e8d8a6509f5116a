"""A plan made after a run of slider moves (every cache warm: the kept solves and scans, the seeds, probes and
bounds, the app's per-workload cache) is the plan a cold process makes of the same scenario, to the bit (issue 51
item 2): every figure of its JSON at 17 significant digits and its service's latency curve.

The sequence moves one service's prompt, output, both length CVs and request rate back and forth (a return to a
value the caches hold, as the app's sliders do), on the default preset and on one whose service has
speculation, a length spread and prompt reuse. Breaking a cache's key (the kept solves' decoding context left
out, which an output-CV move changes at the same rate) fails it; no timings are asserted (``benchmarks/bench_sliders.py`` times the moves).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from aisize.plan import bom, clear_caches, latency_curve, plan
from aisize.plan import replica_count as RC
from aisize.plan.incremental import PlanCache
from aisize.present.export import to_dict
from aisize.scenario import DEFAULT_PRESET, from_dict, preset
from aisize.scenario import to_dict as scenario_dict
from aisize.serving import latency as L

# (field, factor of the preset's value): up, further, back, as a slider goes
MOVES = (("prompt_tokens", 1.21), ("prompt_tokens", 1.46), ("output_tokens", 1.21), ("prompt_tokens", 1.0),
         ("output_cv", 0.3), ("prompt_cv", 0.2), ("requests_per_s", 1.5), ("prompt_tokens", 1.21),
         ("output_cv", 0.0), ("requests_per_s", 1.0), ("output_tokens", 1.0), ("prompt_tokens", 1.0),
         # latency targets: the demands stay, so the placement, the pools' fabrics and the network are reused
         ("ttft_target_ms", 1.1), ("tpot_target_ms", 1.1), ("ttft_target_ms", 1.0), ("tpot_target_ms", 1.0))


def _scenarios(name: str) -> list[dict]:
    """The scenarios after each move of :data:`MOVES` on ``name``'s first inference service."""
    base = scenario_dict(preset(name))
    j = next(i for i, w in enumerate(base["workloads"]) if w["kind"] == "inference")
    out, d = [], copy.deepcopy(base)
    for field, factor in MOVES:
        w, start = d["workloads"][j], base["workloads"][j][field]
        if field.endswith("_cv"):
            w[field] = factor
        elif isinstance(start, int):
            w[field] = max(int(round(start * factor)), 1)
        else:
            w[field] = start * factor
        out.append(copy.deepcopy(d))
    return out


def _figures(scenario: dict, cache=None):
    """(the plan's JSON figures, its first service's latency curve) of ``scenario``."""
    p = plan(from_dict(scenario), cache)
    curve = latency_curve(p.inference[0]).to_numpy() if p.inference and p.inference[0].estimate else None
    return to_dict(p), curve


def _same(a, b, path="") -> None:
    """``a`` and ``b`` equal to the bit (floats by their bits, NaN included), with where they differ."""
    assert type(a) is type(b), path
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), f"{path}: the latency curve differs"
    elif isinstance(a, float):
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), f"{path}: {a!r} (warm) != {b!r} (cold)"
    else:
        assert a == b, path


def _warm_against_cold(name: str) -> None:
    scenarios = _scenarios(name)
    clear_caches()
    cache = PlanCache()
    warm = [_figures(s, cache) for s in scenarios]  # one process, moving on from move to move
    for i, (s, got) in enumerate(zip(scenarios, warm)):
        clear_caches()
        _same(got, _figures(s), f"move {i} {MOVES[i]}")


@pytest.fixture
def seventeen_digits(monkeypatch):
    monkeypatch.setattr(bom, "SIGNIFICANT", 17)  # the JSON's floats as computed, not at 6 digits


@pytest.mark.parametrize("name", [DEFAULT_PRESET, "agentic-coding"])
def test_a_plan_after_a_run_of_moves_is_the_cold_plan_to_the_bit(name, seventeen_digits, monkeypatch):
    real, cuts = RC._likely_first, []
    monkeypatch.setattr(RC, "_likely_first", lambda *a: cuts.append(real(*a)) or cuts[-1])
    _warm_against_cold(name)
    if name == "agentic-coding":  # the last winner ranked below the first: the shapes before it stop at its GPUs
        assert sum(math.isfinite(c) for c in cuts) >= 5, cuts


def test_it_fails_where_a_kept_solve_is_found_for_another_decoding_context(seventeen_digits, monkeypatch):
    real = L._solve_key

    def blind(costs, rates, calib, tokens_per_s, slots, steps, near, kwargs):  # an output-CV move's context left out
        return real(costs, rates, calib, tokens_per_s, slots, steps, near, dict(kwargs, decode_context_tokens=None))
    monkeypatch.setattr(L, "_solve_key", blind)
    try:
        with pytest.raises(AssertionError, match="move 4"):  # the output-CV move
            _warm_against_cold(DEFAULT_PRESET)
    finally:
        clear_caches()  # the solves kept under the broken key must not serve later tests


# a service with prompt reuse keeps (KV tiers, estimate) by count (aisize.plan.replica_count._tiered): a move of the
# reuse, the tiers or the host RAM after a warm plan finds none kept for the old ones
TIER_EDITS = (("prefix", "turns", 20), ("prefix", "think_time_s", 300), ("prefix", "shared_tokens", 10000),
              ("kv_tiers", "target_hit_rate", 0.8), ("kv_tiers", "local_nvme", False), ("policies", "host_ram_ratio", 4))


@pytest.mark.parametrize("edit", TIER_EDITS, ids=lambda e: f"{e[0]}.{e[1]}")
def test_a_reuse_or_tier_move_after_a_warm_plan_is_the_cold_plan_to_the_bit(edit, seventeen_digits):
    base = scenario_dict(preset("agentic-coding"))
    j = next(i for i, w in enumerate(base["workloads"]) if w["kind"] == "inference")
    moved = copy.deepcopy(base)
    section, field, value = edit
    (moved["policies"] if section == "policies" else moved["workloads"][j][section])[field] = value
    clear_caches()
    cold = _figures(moved)
    clear_caches()
    _figures(base)  # every cache warm with the preset's reuse and tiers
    _same(_figures(moved), cold, f"{section}.{field}")
