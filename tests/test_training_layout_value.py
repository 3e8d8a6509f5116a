"""TrainingLayout: one value, checked once, by the same rules as the layout search's grid.

The agreement test draws many layouts (many inconsistent) and asks both statements of the rules:
``TrainingLayout(...)`` (scalar) and ``layout_grid(...).valid`` (vectorized). A rule changed in one
place only shows up as a disagreement; ``test_a_drifted_rule_is_caught`` shows it does.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from aisize import catalog
from aisize.training import TrainingLayout, chosen_layout, estimate, layout_grid, search_layouts
from aisize.training import layout as layout_module
from aisize.training.parallel import RULES, Degrees, LayoutError, ModelSizes
from aisize.training.schedules import SCHEDULE_CODES, SCHEDULES

DOMAIN = 8
MICRO_BATCHES = (1, 2, 3, 4)
CONTEXT = (1, 2, 3, 4, 8)
CHUNKS = (2, 3, 4)
CASES = [  # model, GPUs, global batch [sequences], sequence length [tokens]
    ("llama-3-8b", 96, 192, 8192),
    ("llama-3-70b", 512, 1024, 4096),
    ("deepseek-v3", 2048, 15360, 4096),
    ("mixtral-8x7b", 48, 96, 6144),
    ("gpt-oss-20b", 72, 144, 4096),
    ("nemotron-3-nano-30b-a3b", 64, 128, 12288),  # hybrid: Mamba-2 heads and groups split over TP, heads over CP
]


def _grid(m, gpus, gb, seq):
    k = ModelSizes.of(m)
    return layout_grid(gpus, heads=k.heads, layers=k.layers, global_batch=gb, seq_len=seq, scaleup_domain=DOMAIN,
                       experts=k.experts, expert_ffn=k.expert_ffn, mamba_heads=k.mamba_heads,
                       mamba_groups=k.mamba_groups, stages=(3,), recomputes=("none",), micro_batches=MICRO_BATCHES,
                       context_parallel=CONTEXT, schedules=SCHEDULES, virtual_stages=CHUNKS)


def _in_grid(grid, tp, pp, cp, code, v, mb, ep, etp_code) -> bool:
    """Whether the grid holds this layout as a valid point (False where an axis lacks a value)."""
    def at(axis, value):
        hits = np.flatnonzero(np.ravel(axis) == value)
        return int(hits[0]) if hits.size else None

    sched = np.flatnonzero((np.ravel(grid.schedule) == code) & (np.ravel(grid.virtual_stages) == v))
    etp_size = grid.valid.shape[10]
    idx = (0, 0, at(grid.tp, tp), at(grid.pp, pp), at(grid.cp, cp), int(sched[0]) if sched.size else None,
           at(grid.micro_batch, mb), 0, 0, at(grid.ep, ep), etp_code if etp_code < etp_size else None)
    return None not in idx and bool(grid.valid[idx])


def _draw(rng, gpus, layers, experts, moe):
    divs = [d for d in range(1, gpus + 1) if gpus % d == 0]
    pick = lambda xs: int(rng.choice(xs))  # noqa: E731
    tp = pick(divs[:8] + [3, 5, 6, 16])
    pp = pick(divs[:8] + [layers, layers + 1, 7])
    code = pick(range(len(SCHEDULES)))
    v = pick(CHUNKS + (1,)) if code == SCHEDULE_CODES["interleaved-1f1b"] else pick((1, 1, 1, 2))
    ep = pick([d for d in divs if experts % d == 0][-4:] + [3, 1]) if moe else pick((1, 1, 1, 2))
    return dict(tp=tp, pp=pp, cp=pick(CONTEXT), code=code, v=v, mb=pick(MICRO_BATCHES), ep=ep,
                etp_code=pick((0, 1)) if moe else 0)


def _from_grid(grid, rng, n):
    """``n`` of the grid's valid points, as drawn layouts (so the scalar side sees many consistent ones)."""
    flat = np.flatnonzero(grid.valid)
    out = []
    for i in rng.choice(flat, size=min(n, flat.size), replace=False):
        at = np.unravel_index(i, grid.shape)
        value = lambda a, k: int(np.ravel(a)[at[k]] if np.size(a) > 1 else np.ravel(a)[0])  # noqa: E731
        out.append(dict(tp=value(grid.tp, 2), pp=value(grid.pp, 3), cp=value(grid.cp, 4),
                        code=value(grid.schedule, 5), v=value(grid.virtual_stages, 5), mb=value(grid.micro_batch, 6),
                        ep=value(grid.ep, 9), etp_code=int(at[10])))
    return out


def _disagreements(model_id, gpus, gb, seq, draws=300, seed=0):
    """(layouts where the scalar and the grid disagree, first-broken rule topics seen, valid count)."""
    m = catalog.transformers[model_id]
    grid = _grid(m, gpus, gb, seq)
    moe = m.experts > 1
    rng = np.random.default_rng(seed)
    bad, topics, valid = [], set(), 0
    for x in [_draw(rng, gpus, m.layers, m.experts, moe) for _ in range(draws)] + _from_grid(grid, rng, draws // 3):
        try:
            TrainingLayout(model=m, gpus=gpus, tensor_parallel=x["tp"], pipeline_parallel=x["pp"],
                           context_parallel=x["cp"], expert_parallel=x["ep"],
                           expert_tensor_parallel=x["tp"] if x["etp_code"] else 1, schedule=SCHEDULES[x["code"]],
                           virtual_stages=x["v"], micro_batch=x["mb"], pipeline_microbatches=1, global_batch=gb,
                           seq_len=seq, recompute="none")
            scalar = True
        except LayoutError as exc:
            scalar = False
            topics.add(exc.rule.topic)
        # the search's own cuts: TP within a scale-up domain, no duplicate of a 1F1B / expert-TP-1 point
        searched = (x["tp"] <= DOMAIN and (x["code"] == SCHEDULE_CODES["1f1b"] or x["pp"] >= 2)
                    and (x["etp_code"] == 0 or x["tp"] > 1))
        want = scalar and searched
        valid += want
        if _in_grid(grid, **x) != want:
            bad.append((x, scalar))
    return bad, topics, valid


@pytest.mark.parametrize("model_id, gpus, gb, seq", CASES)
def test_scalar_validation_and_grid_mask_agree(model_id, gpus, gb, seq):
    bad, topics, valid = _disagreements(model_id, gpus, gb, seq)
    assert not bad, bad[:3]
    assert valid > 10  # both sides see consistent layouts, not only refusals
    assert {"gpus", "schedule", "batch"} <= topics


def test_every_rule_is_drawn_somewhere():
    topics = set()
    for case in CASES:
        topics |= _disagreements(*case)[1]
    assert topics == {r.topic for r in RULES}


def test_a_drifted_rule_is_caught(monkeypatch):
    # drop the rule "VP divides the layers per stage" from the grid only: the scalar still refuses
    drifted = tuple(r for r in RULES if "layers per pipeline stage" not in r.says(
        Degrees(8, 1, 2, 1, 4, 1, 1, 1, 3, 80, 0, 1, 1, 8, 8), ModelSizes("x", 80, 8, 0, 0, 1, 0)))
    assert len(drifted) == len(RULES) - 1

    def holds(d, k):
        out = True
        for r in drifted:
            out = out & r.holds(d, k)
        return out

    monkeypatch.setattr(layout_module, "holds", holds)
    bad = []
    for seed in range(4):
        bad += _disagreements("llama-3-70b", 512, 1024, 4096, seed=seed)[0]
    assert bad


def test_published_layouts_and_their_derived_sizes():
    # Llama 3 405B, Dubey et al. 2024 (arXiv:2407.21783) Table 4: 16,384 GPUs, TP 8, CP 1, PP 16, DP 128,
    # 16M tokens per batch of 8,192-token sequences = 2,048 sequences, 16 per data-parallel rank
    lay = TrainingLayout(model="llama-3.1-405b", gpus=16384, tensor_parallel=8, pipeline_parallel=16,
                         micro_batch=16, global_batch=2048, seq_len=8192, framework="megatron")
    assert (lay.dp, lay.non_data_parallel_size, lay.accumulation, lay.pipeline_micro_batch) == (128, 128, 1, 1)
    assert lay.chunk_layers == 8  # 126 layers over 16 stages: 7 or 8 each, the busiest sets the pace
    # the same table's long-context row: CP 16, DP 8, 128 sequences of 131,072 tokens
    long = dataclasses.replace(lay, gpus=16384, context_parallel=16, seq_len=131072, global_batch=128)
    assert (long.dp, long.non_data_parallel_size) == (8, 2048)
    # DeepSeek-V3 (arXiv:2412.19437, sec. 3.2): 2,048 GPUs, PP 16, EP 64 over ZeRO-1 DP, no TP;
    # 15,360 sequences of 4,096 tokens (sec. 4.2). The pipeline micro-batches are ours (DualPipe is not modelled).
    ds = TrainingLayout(model="deepseek-v3", gpus=2048, pipeline_parallel=16, expert_parallel=64, micro_batch=120,
                        pipeline_microbatches=20, global_batch=15360, seq_len=4096, framework="megatron",
                        zero_stage=1)
    assert (ds.dp, ds.ep, ds.etp, ds.expert_data_parallel, ds.accumulation) == (128, 64, 1, 2, 1)


BASE = dict(gpus=64, tensor_parallel=8, pipeline_parallel=2, micro_batch=2, global_batch=256, seq_len=8192)


def test_estimate_takes_a_layout_and_gives_the_same_numbers():
    lay = TrainingLayout(model="llama-3-70b", **BASE)
    loose = estimate("llama-3-70b", "h100-sxm", **BASE)
    given = estimate("llama-3-70b", "h100-sxm", layout=lay)
    assert given.step_seconds == loose.step_seconds and given.peak_memory_bytes == loose.peak_memory_bytes
    assert given.layout == loose.layout and isinstance(loose.layout, TrainingLayout)
    assert loose.layout.moe_dispatcher == "alltoall"  # resolved for H100's 8-GPU NVLink domain
    with pytest.raises(ValueError, match="tensor_parallel=4 is not allowed with layout="):
        estimate("llama-3-70b", "h100-sxm", layout=lay, tensor_parallel=4)
    with pytest.raises(ValueError, match="built for model 'llama-3-70b'"):
        estimate("llama-3-8b", "h100-sxm", layout=lay)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lay.tensor_parallel = 4


@pytest.mark.parametrize("kwargs, message", [
    (dict(gpus=0), "gpus"),
    (dict(tensor_parallel=3), "gpus=64 is not allowed: it must be a multiple"),
    (dict(schedule="interleaved-1f1b", virtual_stages=3), "virtual_stages=3 is not allowed: it must divide the 40"),
    (dict(global_batch=100), "global_batch=100 is not allowed"),
    (dict(expert_parallel=2), "expert_parallel=2 is not allowed: llama-3-70b has no routed experts"),
    (dict(zero_stage=1), "zero_stage=1 is not allowed"),
])
def test_a_refused_layout_names_parameter_value_and_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainingLayout(model="llama-3-70b", **(BASE | kwargs))


def test_a_searched_layout_estimates_to_its_row():
    frame = search_layouts("llama-3-70b", "h100-sxm", 64, global_batch=256, seq_len=8192, top=3)
    for i in range(len(frame)):
        lay = chosen_layout(frame, i)
        e = estimate("llama-3-70b", "h100-sxm", layout=lay, compiled=True, gemm_source="roofline")
        assert e.step_seconds == pytest.approx(frame.step_seconds.iloc[i], rel=1e-12)
        assert e.peak_memory_bytes == pytest.approx(frame.total_bytes.iloc[i], rel=1e-12)
    with pytest.raises(ValueError, match="i=3 is not allowed"):
        chosen_layout(frame, 3)
