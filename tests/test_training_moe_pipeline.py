"""MoE training at pipeline scale (issue 50.3), mechanism by mechanism, each against numbers worked by hand:
interleaved schedules with uneven stages, the expert all-to-all across nodes and its overlap, expert load
imbalance, and the memory each pipeline stage holds. Published NeMo / Megatron-Bridge runs are yardsticks
(their sources beside them), never fitted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aisize.memory.activations import activation_constants
from aisize.precision import training_precision
from aisize.memory.states import per_param_bytes
from aisize.training import comm, moe
from aisize.training.dims import model_dims
from aisize.training.estimate import accelerator_record, estimate
from aisize.training.memory import MemoryModel, MemoryRecipe, StageSplit, stage_breakdowns
from aisize.training.schedules import (bubble_share, in_flight, pipeline_slots, stage_in_flight, unpaired_share,
                                       warmup_chunks)
from aisize.training.setup import default_links
from aisize.training.values import Layouts
from aisize.validation.training_megatron import megatron_model

H100 = default_links(accelerator_record("h100-sxm"))  # 450 GB/s NVLink, 50 GB/s NIC per GPU, 8 per domain


# -- (1) interleaved schedules with uneven stages ------------------------------------------------------------

def test_uneven_stages_with_embedding_and_loss_in_the_split():
    # Qwen3-235B: 94 layers over PP 8 x VP 4 = 32 chunks. With embedding and loss as one slot each,
    # 96 slots -> 3 per chunk: the busiest stage runs 4 x 3 = 12 layers, first and last 11 (+ embedding / loss).
    assert tuple(int(x) for x in pipeline_slots(94, 8, 4, 1, 1)) == (12, 11, 11)
    # Without them ceil(94/32) = 3 per chunk: 12 on the busiest (and first) stage, 94 // 8 = 11 on the last
    assert tuple(int(x) for x in pipeline_slots(94, 8, 4)) == (12, 11, 12)
    # DeepSeek-V3 (61 layers) at PP 8 x VP 2: ceil(61/16) = 4 per chunk, 8 on the busiest stage, 7 on the last
    assert tuple(int(x) for x in pipeline_slots(61, 8, 2)) == (8, 7, 8)


def test_interleaved_bubble_is_p_minus_1_over_v_m():
    code = 1  # interleaved-1f1b
    assert float(bubble_share(8, 512, 4, code)) == pytest.approx(7 / (4 * 512))
    assert float(bubble_share(8, 128, 2, code)) == pytest.approx(7 / 256)


def test_warmup_chunks_follow_megatron():
    # interleaved: (p - r - 1)·2 + (v - 1)·p; rank 0 of PP 8, VP 4: 14 + 24 = 38; the last rank: 24
    assert int(warmup_chunks(8, 512, 4, 0)) == 38 and int(warmup_chunks(8, 512, 4, 7)) == 24
    assert int(warmup_chunks(8, 512, 1, 0)) == 7  # 1F1B: p - 1
    assert int(warmup_chunks(8, 2, 4, 0)) == 8  # never more than the m·v chunks there are


def test_stage_in_flight_first_and_last():
    # rank 0 holds (38 + 1)/4 = 9.75 micro-batches of its layers: Korthikanti's p (1 + (p-1)/(p v)) = 8 x 1.21875
    assert float(stage_in_flight(8, 512, 4, 0)) == pytest.approx(9.75)
    held, factor = in_flight(8, 512, 4)
    assert float(held * factor) == pytest.approx(9.75)
    # the last rank (which also runs the loss) holds (24 + 1)/4 = 6.25 under interleaving, one under 1F1B
    assert float(stage_in_flight(8, 512, 4, 7)) == pytest.approx(6.25)
    assert float(stage_in_flight(8, 512, 1, 7)) == 1.0
    assert float(stage_in_flight(8, 4, 1, 0)) == 4.0  # fewer micro-batches than stages: all of them


# -- (2) expert all-to-all across nodes, and its overlap ------------------------------------------------------

def test_nccl_alltoall_across_nodes_by_hand():
    # Qwen3-235B on H100, TP 2 (sequence parallel): a rank routes 4096/2 = 2048 tokens of h = 4096, 16-bit:
    # one copy 16,777,216 B, k = 8 copies 134,217,728 B. EP 32 at stride 1 spans 4 servers of 8: 24/32 of it
    # over the 50 GB/s NIC at 80 %: 2.5166 ms + 24 x 5 us = 2.6366 ms; the NVLink share (7/32 at 450 GB/s)
    # is faster, so the NIC sets the time.
    copy = 2.0 * 2048 * 4096
    t = comm.moe_alltoall_seconds(copy, 8, 128, 32, 1, H100)
    assert float(t) == pytest.approx(8 * copy * 24 / 32 / 40e9 + 24 * 5e-6, rel=1e-9)
    assert float(t) == pytest.approx(2.6366e-3, rel=1e-4)
    # inside one server the same bytes go over NVLink: 7/8 of 134 MB at 360 GB/s + 7 us
    assert float(comm.moe_alltoall_seconds(copy, 8, 128, 8, 1, H100)) == pytest.approx(
        8 * copy * 7 / 8 / 360e9 + 7e-6, rel=1e-9)


def test_deepep_sends_a_token_once_per_node():
    # DeepSeek-V3: 8 of 256 experts over 4 nodes of 64: a node is missed with prod_{i<8} (192 - i)/(256 - i)
    miss = math.prod((192 - i) / (256 - i) for i in range(8))
    assert float(comm.domains_reached(8, 256, 4)) == pytest.approx(4 * (1 - miss))
    assert float(comm.domains_reached(8, 256, 4)) == pytest.approx(3.614, abs=1e-3)
    assert float(comm.domains_reached(1, 256, 4)) == pytest.approx(1.0)
    assert float(comm.domains_reached(8, 256, 1)) == pytest.approx(1.0)
    # over the NIC: one copy x 3/4 of the 3.614 nodes reached, not 8 copies x 24/32
    copy = 2.0 * 4096 * 7168
    dedup = comm.moe_alltoall_seconds(copy, 8, 256, 32, 1, H100, dedup=True)
    assert float(dedup) == pytest.approx(copy * 3.6142 * 0.75 / 40e9 + 3 * 5e-6, rel=1e-4)
    assert float(dedup) < 0.5 * float(comm.moe_alltoall_seconds(copy, 8, 256, 32, 1, H100))
    # inside one domain deduplication changes nothing
    assert float(comm.moe_alltoall_seconds(copy, 8, 256, 8, 1, H100, dedup=True)) == pytest.approx(
        float(comm.moe_alltoall_seconds(copy, 8, 256, 8, 1, H100)))


def test_ep_layer_is_dispatch_and_combine_forward_and_backward():
    d = model_dims(megatron_model("Qwen3_235B_a22B"))
    one = comm.moe_alltoall_seconds(2.0 * 2048 * 4096, 8, 128, 32, 1, H100)
    assert float(moe.ep_layer_seconds(d, tokens=2048, ep=32, etp=1, links=H100, dispatcher_code=0)) == \
        pytest.approx(4 * float(one))  # 10.55 ms
    # a recomputed MoE forward dispatches and combines again
    assert float(moe.ep_layer_seconds(d, tokens=2048, ep=32, etp=1, links=H100, dispatcher_code=0, redo_share=1.0)) \
        == pytest.approx(6 * float(one))


def test_unpaired_share_and_exposed_alltoall():
    # combined 1F1B pairs steady-state chunks; rank 0's 38 warmup chunks of 4 x 512 run alone
    assert float(unpaired_share(8, 512, 4)) == pytest.approx(38 / 2048)
    assert float(unpaired_share(1, 16, 1)) == pytest.approx(1 / 16)  # no pipeline: the first forward alone
    assert float(unpaired_share(8, 2, 4)) == 1.0  # all warmup: nothing to pair
    # a2a 10 ms against 6 ms of partner compute, 10 % unpaired: 10 - 0.9 x 6 = 4.6 ms exposed
    assert float(moe.exposed_alltoall_seconds(10e-3, 6e-3, True, 0.1)) == pytest.approx(4.6e-3)
    assert float(moe.exposed_alltoall_seconds(3e-3, 6e-3, True, 0.1)) == pytest.approx(0.3e-3)
    assert float(moe.exposed_alltoall_seconds(10e-3, 6e-3, False, 0.1)) == pytest.approx(10e-3)


def test_overlap_assumed_where_the_ep_group_crosses_servers():
    # EP 32 over 8-GPU H100 servers crosses 4 of them: on with interleaving, off without it (Megatron needs
    # VP > 1 under PP) and under full recompute; EP 8 stays in one server; EP 64 fits an NVL72 domain
    assert bool(moe.overlap_assumed(32, 1, H100, 8, 4, 0))
    assert not bool(moe.overlap_assumed(32, 1, H100, 8, 1, 0))
    assert not bool(moe.overlap_assumed(32, 1, H100, 8, 4, 2))
    assert bool(moe.overlap_assumed(32, 1, H100, 1, 1, 1))
    assert not bool(moe.overlap_assumed(8, 1, H100, 8, 4, 0))
    assert not bool(moe.overlap_assumed(64, 1, default_links(accelerator_record("gb200")), 4, 4, 0))


# -- (3) expert load imbalance --------------------------------------------------------------------------------

def test_busiest_rank_imbalance_by_hand():
    # 16,384 copies per rank over EP 32: 1 + sqrt(2 ln 32 x 31/32 / 16384) = 1.02024
    assert float(moe.busiest_rank_imbalance(16384, 32)) == pytest.approx(
        1 + math.sqrt(2 * math.log(32) * 31 / 32 / 16384))
    assert float(moe.busiest_rank_imbalance(16384, 32)) == pytest.approx(1.0202, abs=1e-4)
    assert float(moe.busiest_rank_imbalance(16384, 1)) == 1.0
    # auxiliary-loss-free routing: the router's 4 % on top (Wang et al. 2024, MaxVio_global 0.04)
    assert moe.AUX_FREE_MAX_VIOLATION == 0.04
    assert float(moe.busiest_rank_imbalance(16384, 32, moe.AUX_FREE_MAX_VIOLATION)) == pytest.approx(1.04 * 1.02024,
                                                                                                    rel=1e-4)
    # fewer tokens spread more: 1,024 copies over EP 64
    assert float(moe.busiest_rank_imbalance(1024, 64)) == pytest.approx(1 + math.sqrt(2 * math.log(64) * 63 / 64 / 1024))


# -- (4) the memory each stage holds ----------------------------------------------------------------------------

def _stages(layers_first, layers_last, in_flight_last, expert_params=1e9):
    consts = activation_constants()
    bf16 = training_precision("bf16")
    m = MemoryModel(2e8, expert_params, 6e8, 6e8, hidden=4096, heads=64, vocab=151936, consts=consts)
    lay = Layouts(seq_len=4096, micro_batch=1, microbatches=8, accumulation=1, tp=1, pp=8, cp=1, dp=32, ep=32,
                  virtual_stages=4, recompute=0, sp=False, stage=1)
    rec = MemoryRecipe(per_param_bytes("bf16", "adamw", "megatron"), bf16.weight_bytes, bf16.activation_scale,
                       "megatron", te=True)
    return stage_breakdowns(m, lay, StageSplit(layers_first, layers_last, 8, 1.21875, in_flight_last), rec)


def test_last_stage_holds_interleaved_micro_batches():
    # the last stage's layer activations scale with the micro-batches it holds: 6.25 under PP 8 x VP 4
    edge = _stages(12, 0, 1.0)[1].activations_bytes
    one = _stages(12, 11, 1.0)[1].activations_bytes - edge
    held = _stages(12, 11, 6.25)[1].activations_bytes - edge
    assert float(one) > 0 and float(held) == pytest.approx(6.25 * float(one))
    # the logits stay one micro-batch's: the loss buffers do not grow
    assert float(_stages(12, 11, 6.25)[1].loss_buffers_bytes) == pytest.approx(
        float(_stages(12, 11, 1.0)[1].loss_buffers_bytes))


def test_each_stage_keeps_its_own_experts():
    # 12 MoE layers on the first stage, 11 on the last: expert weights 12 x 1e9 / 32 and 11 x 1e9 / 32, 16-bit
    first, last = _stages(12, 11, 1.0)
    dense_first, dense_last = _stages(12, 11, 1.0, expert_params=0.0)
    assert float(first.weights_bytes - dense_first.weights_bytes) == pytest.approx(2 * 12e9 / 32)
    assert float(last.weights_bytes - dense_last.weights_bytes) == pytest.approx(2 * 11e9 / 32)


# -- yardsticks: published runs at pipeline scale (not fitted) ------------------------------------------------------

def _with_overlap(e, *, d, tokens, ep, links, dispatcher_code, n_mb, layers, pp, m, v, tokens_per_step, gpus):
    """Tokens/s per GPU of an estimate whose EP part is replaced by the exposed all-to-all of the combined
    1F1B schedule: the partner's compute and host waits per layer and micro-batch hide the rest."""
    b = e.breakdown
    partner = (b["compute"] + b["host"]) / (n_mb * layers)
    a2a = moe.ep_layer_seconds(d, tokens=tokens, ep=ep, etp=1, links=links, dispatcher_code=dispatcher_code)
    exposed = n_mb * layers * d.moe_layers / d.layers * float(
        moe.exposed_alltoall_seconds(a2a, partner, True, unpaired_share(pp, m, v)))
    others = sum(val for k, val in b.items() if k not in ("ep", "stragglers"))
    factor = e.step_seconds / (e.step_seconds - b["stragglers"])
    return tokens_per_step / ((others + exposed) * factor * gpus)


def test_yardstick_qwen3_235b_h100_ep32_across_servers():
    # Megatron-Bridge docs/performance-summary.md @ df0289c180dd20ff26933455c7a0a11084f6a36f, "26.02 NeMo
    # Container", DGX-H100: Qwen3_235B_a22B, 256 GPUs, FP8-CS, GBS 8192, MBS 1, TP 2, PP 8, VP 4, EP 32,
    # 1633 tokens/s/GPU. The recipe turns moe_a2a_overlap on (tests/../training_megatron.csv row M44 notes).
    m = megatron_model("Qwen3_235B_a22B")
    e = estimate(m, "h100-sxm", gpus=256, tensor_parallel=2, pipeline_parallel=8, expert_parallel=32,
                 expert_tensor_parallel=1, global_batch=8192, seq_len=4096, recompute="none", precision="fp8",
                 framework="megatron", zero_stage=1, cp_method="ring", micro_batch=512, pipeline_microbatches=512,
                 schedule="interleaved-1f1b", virtual_stages=4, grad_reduce_precision="bf16",
                 moe_dispatcher="alltoall", embedding_in_pipeline_split=True, loss_in_pipeline_split=True)
    got = _with_overlap(e, d=model_dims(m), tokens=2048, ep=32, links=H100, dispatcher_code=0, n_mb=512, layers=12,
                        pp=8, m=512, v=4, tokens_per_step=8192 * 4096, gpus=256)
    assert abs(got / 1633 - 1) < 0.15, got


def test_yardstick_deepseek_v3_b200_ep32_across_servers():
    # Megatron-Bridge docs/performance-summary.md, "26.04.01 NeMo Container", DeepSeekV3 table, DGX-B200: 256 GPUs,
    # MXFP8, GBS 4096, MBS 1, TP 1, PP 8, VP 2, EP 32, 3328 tokens/s/GPU. Its recipe (DSv3 B200 FP8_MX V2:
    # "deepep dispatcher, PP 16->8, VP, EP->32, moe_a2a_overlap=True", Megatron-Bridge performance configs)
    # dispatches with DeepEP (flex) and overlaps the all-to-all.
    m = megatron_model("DeepSeekV3")
    e = estimate(m, "b200", gpus=256, pipeline_parallel=8, expert_parallel=32, global_batch=4096, seq_len=4096,
                 recompute="none", precision="mxfp8", framework="megatron", zero_stage=1, cp_method="ring",
                 micro_batch=128, pipeline_microbatches=128, schedule="interleaved-1f1b", virtual_stages=2,
                 moe_dispatcher="flex")
    got = _with_overlap(e, d=model_dims(m), tokens=4096, ep=32, links=default_links(accelerator_record("b200")),
                        dispatcher_code=1, n_mb=128, layers=8, pp=8, m=128, v=2, tokens_per_step=4096 * 4096,
                        gpus=256)
    assert abs(got / 3328 - 1) < 0.15, got
