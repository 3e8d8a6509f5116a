"""Held-out error classes of issue 50 fixed by mechanism (docs/training-cv.md, "Held-out classes by mechanism").

Each test is worked by hand from public figures and fails under the mechanism it replaced.
"""

from __future__ import annotations

import pytest
from test_training_mlperf import predicted_minutes, rows

from aisize import catalog
from aisize.training import efficiency as E
from aisize.training.calibration import CALIBRATION
from aisize.training.recipes import recipe

GB300 = catalog.accelerators["gb300"]


def test_nvfp4_runs_every_block_linear_in_fp4_by_hand():
    # Megatron-Bridge's bf16_with_nvfp4_mixed leaves Megatron-Core's first_last_layers_bf16 off: no bf16 share.
    r = recipe("nvfp4", GB300)
    assert (r.low_share, r.low_dtype) == (1.0, "fp4")
    # A 8,192 x 4,096 x 14,336 GEMM (Llama 3 8B's MLP input projection at 8k tokens) on a GB300:
    # 2 x 8192 x 4096 x 14336 = 9.6207e11 FLOP at 15 PFLOP/s dense fp4 x 0.805 (fp4 = fp8 efficiency) = 79.7 us.
    # The old 15 % bf16 share added 0.15 x (9.6207e11 / (2.5e15 x 0.725) - 79.7 us) = 67.7 us (1.85x).
    assert GB300.fp4_flops_per_s == 15e15 and GB300.bf16_flops_per_s == 2.5e15
    assert CALIBRATION.gemm_efficiency["blackwell:4"] == 0.805
    t = E.recipe_gemm_seconds(8192, 4096, 14336, r, high_peak=2.5e15, low_peak=15e15, e_high=0.725, e_low=0.805,
                              hbm_bytes_per_s=GB300.memory_bandwidth_bytes_per_s)
    assert float(t) == pytest.approx(79.68e-6, rel=2e-3)


def test_mlperf_nvfp4_single_node_runs_within_15_percent():
    # MLPerf Training v5.1 NVIDIA NeMo submissions in NVFP4 on one GB200/GB300 tray pair (8 GPUs): the published
    # time to train against aisize's; with 15 % of the layers in bf16 the GB300 runs read 17-25 % slow.
    got = {}
    for r in rows():
        if r["precision"] == "nvfp4" and r["gpus"] == "8":
            minutes, how = predicted_minutes(r)
            got[(r["accelerator"], r["benchmark"])] = minutes / float(r["time_to_train_minutes"]) - 1.0
    assert set(got) == {("gb200", "llama31_8b"), ("gb300", "llama31_8b"), ("gb200", "llama2_70b_lora"),
                        ("gb300", "llama2_70b_lora")}
    assert all(abs(e) <= 0.15 for e in got.values()), got


@pytest.mark.parametrize("model, layers, wait", [("mixtral-8x7b", 32, 1e-5), ("gpt-oss-120b", 36, 5.34e-3)])
def test_alltoall_host_wait_needs_more_than_one_expert_per_rank_by_hand(model, layers, wait):
    # 8 H100s, EP 8, 16 sequences of 4,096 in micro-batches of 1: 2 micro-batches per GPU, no recompute.
    # Host wait = MoE layers x micro-batches x wait. Mixtral's 8 experts over EP 8 leave one per rank: Megatron's
    # all-to-all dispatcher skips its sort by local expert and waits as the flex one (1e-5 s): 32 x 2 x 0.01 ms
    # = 0.64 ms instead of the 342 ms of 5.34 ms per layer (-25 % on NeMo 25.04's GB200 Mixtral 8x7B run,
    # 19,275 tokens/s per GPU, under the all-to-all dispatcher); gpt-oss-120b's 16 experts per rank keep the
    # fitted 36 x 2 x 5.34 ms = 384.5 ms.
    from aisize.training import estimate

    assert CALIBRATION.moe_sync_host_seconds == {"alltoall": 5.34e-3, "flex": 1e-5}
    e = estimate(model, "h100-sxm", gpus=8, expert_parallel=8, micro_batch=1, global_batch=16, seq_len=4096,
                 precision="bf16", moe_dispatcher="alltoall", recompute="none")
    assert e.step.host_sync_seconds == pytest.approx(layers * 2 * wait, rel=1e-9)
    # at EP 4 Mixtral holds two experts per rank: the sort runs and the fitted wait is back
    four = estimate(model, "h100-sxm", gpus=8, expert_parallel=4, micro_batch=1, global_batch=16, seq_len=4096,
                    precision="bf16", moe_dispatcher="alltoall", recompute="none")
    assert four.step.host_sync_seconds == pytest.approx(layers * 2 * 5.34e-3, rel=1e-9)
