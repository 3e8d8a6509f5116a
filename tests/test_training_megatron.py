"""Megatron-Core as it runs: placement on scale-up domains of any size, MoE parallel folding, gradient
reduce precision, pipeline split slots, partial and module recompute, activation offload, MoE kernels,
Blackwell Ultra, bad input; and the accuracy on NVIDIA's published runs (training_megatron.csv)."""

import dataclasses

import numpy as np
import pytest

from aisize import catalog
from aisize.network import domain_share
from aisize.training import estimate
from aisize.training import moe as X
from aisize.training.dims import model_dims
from aisize.validation.training_megatron import megatron_kwargs, megatron_rows

MOE = dict(gpus=256, pipeline_parallel=4, virtual_stages=4, schedule="interleaved-1f1b", micro_batch=64,
           pipeline_microbatches=64, global_batch=4096, seq_len=4096, expert_parallel=64, expert_tensor_parallel=1,
           framework="megatron", recompute="none", precision="bf16")


@pytest.mark.parametrize("n, stride, domain, inner", [
    (64, 1, 72, 64),   # an EP64 group fits one NVL72 rack (gcd(64, 72) would say 8)
    (256, 1, 72, 64),  # DP over 4 racks
    (32, 8, 72, 8),    # 9 ranks of the group per rack, rounded down to a divisor of 32
    (64, 1, 8, 8), (8, 8, 8, 1), (12, 1, 8, 6)])
def test_groups_tile_scale_up_domains_in_megatron_order(n, stride, domain, inner):
    assert domain_share(n, stride, domain) == (inner, n // inner)
    got = domain_share(np.array([n, n]), stride, domain)
    assert (got[0] == inner).all() and (got[1] == n // inner).all()


def test_ep64_on_nvl72_stays_on_nvlink():
    # DeepSeek-V3 on GB200 NVL72, EP 64 (Megatron-Bridge 25.11): the all-to-all stays in one rack;
    # on 8-GPU domains the same group crosses InfiniBand
    rack = estimate("deepseek-v3", "gb200", **MOE)
    hgx = estimate("deepseek-v3", "gb200", scaleup_domain=8, **MOE)
    assert hgx.step.ep_comm_seconds > 5 * rack.step.ep_comm_seconds


def test_bf16_gradient_reduce_halves_the_buffer_and_the_traffic():
    kw = dict(gpus=64, tensor_parallel=4, micro_batch=1, global_batch=64, seq_len=4096, framework="megatron",
              recompute="none", dp_overlap=0.0)
    fp32 = estimate("llama-3-70b", "h100-sxm", grad_reduce_precision="fp32", **kw)
    bf16 = estimate("llama-3-70b", "h100-sxm", grad_reduce_precision="bf16", **kw)
    assert bf16.memory.gradients_bytes == pytest.approx(fp32.memory.gradients_bytes / 2)
    assert bf16.step.dp_comm_exposed_seconds < fp32.step.dp_comm_exposed_seconds
    assert estimate("llama-3-70b", "h100-sxm", **kw).layout.grad_reduce_precision == "bf16"  # Megatron's default


def test_moe_parallel_folding_lets_ep_span_tp():
    # Qwen3-235B on 256 H100, TP 2 PP 8 EP 32 (DP 16): expert TP 1 folds EP over TP x DP
    kw = dict(gpus=256, tensor_parallel=2, pipeline_parallel=8, expert_parallel=32, micro_batch=128,
              pipeline_microbatches=128, global_batch=2048, seq_len=4096, framework="megatron", recompute="none",
              precision="fp8")
    r = estimate("qwen3-235b-a22b", "h100-sxm", expert_tensor_parallel=1, **kw)
    assert r.layout.expert_tensor_parallel == 1 and r.tokens_per_s_per_gpu > 0
    with pytest.raises(ValueError, match="expert_parallel=32 x expert_tensor_parallel=2"):
        estimate("qwen3-235b-a22b", "h100-sxm", **kw)  # expert TP defaults to TP: 64 does not divide 32
    with pytest.raises(ValueError, match="expert_parallel=3 is not allowed: it must divide the 128"):
        estimate("qwen3-235b-a22b", "h100-sxm", **{**kw, "expert_parallel": 3})


def test_embedding_and_loss_count_as_pipeline_layers():
    # 126 layers over PP 16 x VP 8 = 128 chunks: legal in Megatron with both counted, not without
    kw = dict(gpus=1024, tensor_parallel=8, pipeline_parallel=16, schedule="interleaved-1f1b", virtual_stages=8,
              micro_batch=64, pipeline_microbatches=64, global_batch=512, seq_len=8192, framework="megatron",
              recompute="none", precision="fp8")
    with pytest.raises(ValueError, match="virtual_stages=8"):
        estimate("llama-3.1-405b", "gb200", **kw)
    r = estimate("llama-3.1-405b", "gb200", embedding_in_pipeline_split=True, loss_in_pipeline_split=True, **kw)
    assert r.layout.embedding_in_pipeline_split and r.tokens_per_s_per_gpu > 0


def test_partial_recompute_sits_between_none_and_full():
    kw = dict(gpus=8, micro_batch=2, global_batch=64, seq_len=8192, framework="megatron", precision="fp8")
    none = estimate("llama-3-8b", "b200", recompute="none", **kw)
    part = estimate("llama-3-8b", "b200", recompute="full", recompute_layers=16, **kw)
    full = estimate("llama-3-8b", "b200", recompute="full", **kw)
    assert full.memory.activations_bytes < part.memory.activations_bytes < none.memory.activations_bytes
    assert none.step_seconds < part.step_seconds < full.step_seconds
    with pytest.raises(ValueError, match="recompute_layers=33 is not allowed: a model chunk has 32"):
        estimate("llama-3-8b", "b200", recompute="full", recompute_layers=33, **kw)
    with pytest.raises(ValueError, match="recompute_layers"):
        estimate("llama-3-8b", "b200", recompute="none", recompute_layers=4, **kw)


def test_module_recompute_saves_what_it_names():
    base = estimate("deepseek-v3", "gb200", **MOE)
    mla = estimate("deepseek-v3", "gb200", **{**MOE, "recompute": "selective"}, recompute_modules=("mla_up_proj",))
    act = estimate("deepseek-v3", "gb200", **{**MOE, "recompute": "selective"}, recompute_modules=("moe_act",))
    assert mla.memory.activations_bytes < base.memory.activations_bytes
    assert act.memory.activations_bytes < base.memory.activations_bytes
    assert mla.step_seconds > base.step_seconds
    with pytest.raises(ValueError, match="recompute_modules"):
        estimate("llama-3-8b", "b200", gpus=8, micro_batch=1, global_batch=8, seq_len=4096, framework="megatron",
                 recompute="selective", recompute_modules=("moe_act",))
    with pytest.raises(ValueError, match="recompute_modules"):
        estimate("llama-3-8b", "b200", gpus=8, micro_batch=1, global_batch=8, seq_len=4096, recompute="selective",
                 recompute_modules=("bogus",), framework="megatron")


def test_activation_offload_moves_activations_to_the_host():
    # Llama 3 70B, Megatron-FSDP on 64 GB200, 40 of 80 layers' activations in host memory (25.11 recipe)
    kw = dict(gpus=64, micro_batch=2, global_batch=256, seq_len=8192, framework="fsdp", zero_stage=3,
              compiled=True, cp_method="ring", recompute="none", precision="fp8", grad_reduce_precision="bf16")
    on = estimate("llama-3-70b", "gb200", activation_offload_layers=40, **kw)
    off = estimate("llama-3-70b", "gb200", **kw)
    assert on.memory.host_bytes > 0.9 * (off.memory.activations_bytes - on.memory.activations_bytes)
    assert on.peak_memory_bytes < off.peak_memory_bytes and on.fits and not off.fits
    # over PCIe (DGX B200) the copies outlast the layers' compute; over NVLink-C2C (GB200) they hide
    pcie = estimate("llama-3-70b", "b200", activation_offload_layers=40, **kw)
    assert pcie.step.offload_exposed_seconds > on.step.offload_exposed_seconds
    nolink = dataclasses.replace(catalog.accelerators["gb200"], host_link_bidirectional_bytes_per_s=None, pcie_gen=0)
    with pytest.raises(ValueError, match="activation_offload_layers=40 is not allowed on gb200"):
        estimate("llama-3-70b", nolink, activation_offload_layers=40, **kw)
    with pytest.raises(ValueError, match="activation_offload_layers=80"):
        estimate("llama-3-70b", "gb200", activation_offload_layers=80, **kw)


def test_grouped_gemm_efficiency_rises_with_tokens_per_expert():
    d = model_dims("qwen3-30b-a3b")
    r = catalog.accelerators["b200"]
    from aisize.training.recipes import recipe

    def per_token(tokens):
        t = X.expert_times(d, tokens=tokens, ep=8, etp=1, dispatcher_code=1, recipe=recipe("bf16", r),
                           gen="blackwell", high_peak=2.25e15, low_peak=2.25e15, hbm_bytes_per_s=8e12,
                           compiled=True)
        return float(t.gemm_forward) / tokens

    assert per_token(1024) > per_token(8192) > per_token(65536)
    assert X.tokens_per_expert(d, 4096, 8, 1) == pytest.approx(4096 * 8 * 8 / 128)


def test_dispatcher_synchronisation_costs_host_time():
    flex = estimate("deepseek-v3", "gb200", moe_dispatcher="flex", **MOE)
    a2a = estimate("deepseek-v3", "gb200", moe_dispatcher="alltoall", **MOE)
    assert a2a.step.host_sync_seconds > flex.step.host_sync_seconds > 0
    assert estimate("deepseek-v3", "gb200", **MOE).layout.moe_dispatcher == "flex"  # NVL72 default
    assert estimate("llama-3-8b", "b200", gpus=8, micro_batch=1, global_batch=8, seq_len=4096).step.host_sync_seconds == 0


def test_blackwell_ultra_attention_is_faster_at_equal_peaks():
    # GB300 and GB200 share their dense peaks; Blackwell Ultra doubles the softmax exponential rate
    gb200, gb300 = catalog.accelerators["gb200"], catalog.accelerators["gb300"]
    assert gb300.bf16_flops_per_s == gb200.bf16_flops_per_s and gb300.sfu_exp_per_s > 2 * gb200.sfu_exp_per_s
    kw = dict(gpus=8, micro_batch=2, global_batch=128, seq_len=8192, framework="megatron", recompute="none",
              precision="fp8")
    assert estimate("llama-3-8b", "gb300", **kw).tokens_per_s_per_gpu > 1.05 * estimate(
        "llama-3-8b", "gb200", **kw).tokens_per_s_per_gpu


def test_muon_and_precision_aware_adam_states():
    kw = dict(gpus=8, micro_batch=1, global_batch=8, seq_len=4096, framework="megatron", zero_stage=0,
              recompute="none")
    adam = estimate("llama-3-8b", "b200", **kw)
    muon = estimate("llama-3-8b", "b200", optimizer="muon", **kw)
    half = estimate("llama-3-8b", "b200", optimizer="adamw-bf16", **kw)
    assert muon.memory.optimizer_moments_bytes == pytest.approx(adam.memory.optimizer_moments_bytes / 2)
    assert half.memory.optimizer_moments_bytes == pytest.approx(adam.memory.optimizer_moments_bytes / 2)
    assert muon.step.compute_seconds > adam.step.compute_seconds  # Newton-Schulz iterations
    assert model_dims("llama-3-8b").muon_flops_per_param > 0


def test_published_megatron_runs_hold():
    # the acceptance bar of issue 24 on reference/training_megatron.csv (tools/check_training_megatron.py)
    err = []
    for row in megatron_rows():
        m, g, kw = megatron_kwargs(row)
        err.append(estimate(m, g, **kw).tokens_per_s_per_gpu / float(row["tokens_per_s_per_gpu"]) - 1.0)
    err = np.abs(err)
    assert len(err) == 44
    assert np.mean(err <= 0.15) >= 0.8 and np.median(err) <= 0.10
