"""Training's cores take values, not argument lists (issue 47, item 2).

The layout as :class:`aisize.training.values.Layouts` (scalar from a TrainingLayout, arrays from the search's
grid), the model, the Engine and the Options: a searched row and the same layout built on its own reach the
cores as the same value, and no internal function grows back a long argument list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from aisize.training import TrainingLayout
from aisize.training.layout import SearchSpace, layout_grid, search_layouts, chosen_layout
from aisize.training.parallel import RECOMPUTE
from aisize.training.schedules import SCHEDULE_CODES
from aisize.training.values import Layouts, Options

PACKAGE = Path(__file__).resolve().parents[1] / "aisize" / "training"
# Public keyword entry points, checked where they enter (their callers and ../shared/tools pass keywords);
# every other function of the package takes values.
PUBLIC = {"estimate", "training_memory", "search_layouts", "layout_grid"}
MAX_PARAMETERS = 16


def _parameters(fn: ast.FunctionDef) -> int:
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)


def test_no_internal_training_function_takes_a_long_argument_list():
    long = [(path.name, fn.name, _parameters(fn)) for path in sorted(PACKAGE.glob("*.py"))
            for fn in ast.walk(ast.parse(path.read_text())) if isinstance(fn, ast.FunctionDef)
            and fn.name not in PUBLIC and _parameters(fn) > MAX_PARAMETERS]
    assert not long, f"functions over {MAX_PARAMETERS} parameters (take a value instead): {long}"


def test_the_cores_take_a_few_values():
    from aisize.training.evaluate import evaluate
    from aisize.training.memory import stage_breakdowns
    from aisize.training.step_time import step_breakdown
    # (43, 47 and 20 keywords before): model, layouts, engine / split, options / recipe
    for fn, most in ((step_breakdown, 8), (stage_breakdowns, 5), (evaluate, 5)):
        code = fn.__code__
        assert code.co_argcount + code.co_kwonlyargcount <= most, fn.__name__


def test_a_layout_as_layouts_by_hand():
    # Llama 3 70B on 64 GPUs: TP 8 x PP 4 -> DP 2; local batch 4 in 4 pipeline micro-batches of 1;
    # 64 sequences / (4 x 2) = 8 accumulation steps; interleaved with 2 chunks; full recompute on 5 of the
    # 10 layers of a chunk (80 layers / (4 x 2)) -> share 0.5
    lay = TrainingLayout(model="llama-3-70b", gpus=64, micro_batch=4, global_batch=64, seq_len=4096,
                         tensor_parallel=8, pipeline_parallel=4, schedule="interleaved-1f1b", virtual_stages=2,
                         pipeline_microbatches=4, recompute="full", recompute_layers=5, framework="megatron")
    v = Layouts.of(lay)
    assert (v.tp, v.pp, v.cp, v.dp, v.ep, v.etp) == (8, 4, 1, 2, 1, 8)
    assert (v.micro_batch, v.microbatches, v.accumulation) == (1, 4, 8)
    assert v.schedule_code == SCHEDULE_CODES["interleaved-1f1b"] and v.virtual_stages == 2
    assert v.recompute == RECOMPUTE.index("full") == 2 and v.full_share == pytest.approx(0.5)
    assert v.sp is True and v.stage == 1 and v.seq_len == 4096


def test_a_searched_row_reaches_the_cores_as_its_layout_does():
    frame = search_layouts("llama-3-8b", "h100-sxm", 16, global_batch=64, seq_len=4096, top=3)
    assert len(frame)
    grid_row = Layouts(seq_len=frame.seq_len.iloc[0], micro_batch=frame.micro_batch.iloc[0],
                       microbatches=frame.microbatches.iloc[0], accumulation=1, tp=frame.tp.iloc[0],
                       pp=frame.pp.iloc[0], cp=frame.cp.iloc[0], dp=frame.dp.iloc[0], ep=frame.ep.iloc[0],
                       etp=frame.expert_tensor_parallel.iloc[0])
    alone = Layouts.of(chosen_layout(frame, 0))
    for name in ("seq_len", "micro_batch", "microbatches", "accumulation", "tp", "pp", "cp", "dp", "ep", "etp"):
        assert int(getattr(alone, name)) == int(getattr(grid_row, name)), name


def test_the_grid_as_layouts_clips_invalid_points_only():
    g = layout_grid(64, heads=64, layers=80, global_batch=128, seq_len=8192, scaleup_domain=8)
    v = g.layouts()
    assert v.accumulation == 1 and np.all(np.asarray(v.dp) >= 1) and np.all(np.asarray(v.microbatches) >= 1)
    ok = g.valid
    dp = np.broadcast_to(v.dp, g.shape)
    assert np.array_equal(dp[ok], np.broadcast_to(g.dp, g.shape)[ok])  # valid points keep their DP
    assert np.array_equal(np.broadcast_to(v.sp, g.shape), np.broadcast_to(g.tp > 1, g.shape))


@pytest.mark.parametrize("kwargs, name", [
    (dict(recomputes=("most",)), "recomputes"), (dict(schedules=("gpipe",)), "schedules"),
    (dict(micro_batches=(0,)), "micro_batches"), (dict(virtual_stages=(1,)), "virtual_stages"),
    (dict(context_parallel=(0,)), "context_parallel"), (dict(recompute_shares=(1.5,)), "recompute_shares"),
])
def test_a_search_space_is_checked_where_built(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SearchSpace(**kwargs)


def test_options_fuse_under_megatron_or_compile():
    assert Options(framework="megatron").fused and Options(compiled=True).fused and not Options().fused
