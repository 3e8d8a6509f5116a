"""aisize.training.estimate: identities of the step-time model, what the efficiencies depend on, bad input."""

import dataclasses

import pytest

from aisize import catalog
from aisize.training import estimate, recipe
from aisize.training import efficiency as E
from aisize.training.dims import model_dims
from aisize.training.schedules import bubble_share, check_virtual_stages, stage_layers

H100, A100 = "h100-sxm", "a100-sxm-80gb"
BASE = dict(gpus=8, micro_batch=1, global_batch=8, seq_len=4096)


def test_result_carries_the_contract_fields():
    r = estimate("llama-3-8b", H100, **BASE)
    assert r.tokens_per_s_per_gpu > 0 and 0 < r.mfu < 1 and r.step_seconds > 0 and r.peak_memory_bytes > 0
    assert sum(r.breakdown.values()) == pytest.approx(r.step_seconds)
    assert set(r.breakdown) == {"compute", "tp", "cp", "pp", "dp", "ep", "host", "offload", "bubble", "stragglers"}
    # tokens/s per GPU = tokens per step / (step x GPUs); MFU = (6N + 12·L·H·Q·s) x tokens/s / peak
    d = model_dims("llama-3-8b")
    assert r.tokens_per_s_per_gpu == pytest.approx(8 * 4096 / (r.step_seconds * 8))
    per_token = 6 * d.active_params + 12 * d.layers * d.attention_dim * 4096
    assert r.mfu == pytest.approx(per_token * r.tokens_per_s_per_gpu / 989.4e12)
    assert r.layout.data_parallel == 8 and r.layout.zero_stage == 3 and r.generation == "hopper"
    assert any(c["name"] == "HBM_EFFICIENCY" for c in r.constants)


def test_record_from_a_config_and_catalog_id_agree():
    rec = catalog.transformers["llama-3-8b"]
    assert estimate(rec, H100, **BASE).step_seconds == estimate("llama-3-8b", H100, **BASE).step_seconds


def test_405b_pp8_uneven_stages_and_interleaving_are_expressible():
    # 126 layers over 8 stages (15 or 16 layers, torchtitan's split); interleaved 1F1B with 2 chunks
    kw = dict(gpus=512, tensor_parallel=8, pipeline_parallel=8, micro_batch=32, global_batch=256, seq_len=8192,
              recompute="full", precision="fp8", compiled=True)
    one = estimate("llama-3.1-405b", H100, **kw)
    inter = estimate("llama-3.1-405b", H100, schedule="interleaved-1f1b", virtual_stages=2, **kw)
    assert stage_layers(126, 8) == (16, 15)
    assert one.layout.pipeline_microbatches == 8  # torchtitan's default: one micro-batch per stage
    assert inter.step.pp_bubble_seconds < one.step.pp_bubble_seconds
    assert inter.tokens_per_s_per_gpu > one.tokens_per_s_per_gpu


@pytest.mark.parametrize("p, m, v, sched, share", [
    (4, 16, 1, "1f1b", 3 / 16), (8, 64, 2, "interleaved-1f1b", 7 / 128), (8, 64, 1, "zero-bubble", 7 / 192)])
def test_bubble_shares(p, m, v, sched, share):
    # Narayanan et al. 2021 sec. 2.2: (p - 1)/m, interleaved (p - 1)/(v m); ZB-H1 a third of 1F1B (Qi et al. 2024)
    from aisize.training.schedules import SCHEDULE_CODES

    assert float(bubble_share(p, m, v, SCHEDULE_CODES[sched])) == pytest.approx(share)


def test_zero_bubble_beats_1f1b_at_the_same_memory():
    kw = dict(gpus=64, tensor_parallel=8, pipeline_parallel=4, micro_batch=8, global_batch=16, seq_len=4096,
              recompute="full")
    a = estimate("llama-3-70b", H100, **kw)
    b = estimate("llama-3-70b", H100, schedule="zero-bubble", **kw)
    assert b.step.pp_bubble_seconds == pytest.approx(a.step.pp_bubble_seconds / 3)
    assert b.peak_memory_bytes == a.peak_memory_bytes


def test_gemm_efficiency_depends_on_matrix_sizes_and_generation():
    # thin matrices are memory-bound on the roofline; the same large GEMM is faster on Hopper than Ampere
    big = E.gemm_seconds(8192, 8192, 8192, 989.4e12, 0.5, 3.35e12)
    thin = E.gemm_seconds(8192, 8192, 64, 989.4e12, 0.5, 3.35e12)
    assert thin / (2 * 8192 * 8192 * 64) > big / (2 * 8192 ** 3)  # seconds per FLOP rises when thin
    assert E.gemm_efficiency("hopper", "8") > 0 and E.generation(catalog.accelerators[A100]) == "ampere"
    assert E.generation(catalog.accelerators["b200"]) == "blackwell"
    assert E.generation(catalog.accelerators["v100-sxm2-32gb"]) == "volta"


def test_attention_efficiency_rises_with_sequence_length():
    # s / (s + 1,760) on Hopper, the half-length measured on its context-attention tables (tests/test_training_cv.py)
    e = [E.attention_efficiency("hopper", s, "fa2") for s in (256, 1024, 8192)]
    assert e[0] < e[1] < e[2] < E.ATTENTION_EFFICIENCY[("hopper", "fa2")]
    assert e[0] / E.ATTENTION_EFFICIENCY[("hopper", "fa2")] == pytest.approx(256 / 2016)


def test_small_models_get_lower_mfu_than_large_ones():
    # memory-bound work grows as h, GEMM FLOPs as h^2: the work sets the efficiency
    small = dataclasses.replace(catalog.transformers["llama-3-8b"], hidden=1024, heads=8, kv_heads=8,
                                ffn_hidden=3584, layers=16)
    kw = dict(gpus=8, micro_batch=4, global_batch=32, seq_len=4096)
    assert estimate(small, A100, **kw).mfu < estimate("llama-3-8b", A100, **kw).mfu


def test_long_sequences_lower_mfu_through_attention():
    kw = dict(gpus=8, micro_batch=1, recompute="full", precision="fp8", compiled=True)
    short = estimate("llama-3-8b", H100, global_batch=8, seq_len=8192, **kw)
    long = estimate("llama-3-8b", H100, global_batch=8, seq_len=131072, **kw)
    assert long.tokens_per_s_per_gpu < short.tokens_per_s_per_gpu / 3


def test_context_parallel_traffic_and_memory():
    kw = dict(micro_batch=1, seq_len=131072, recompute="full", precision="fp8", compiled=True)
    cp = estimate("llama-3-8b", H100, gpus=8, context_parallel=4, global_batch=2, **kw)
    assert cp.step.cp_comm_seconds > 0 and cp.layout.data_parallel == 2
    ring = estimate("llama-3-8b", H100, gpus=8, context_parallel=4, global_batch=2, cp_method="ring", **kw)
    assert ring.step.cp_comm_seconds <= cp.step.cp_comm_seconds  # ring overlaps each step with attention
    # CP splits activations and the loss buffers of the sequence
    one = estimate("llama-3-8b", H100, gpus=8, context_parallel=1, global_batch=8,
                   **(kw | {"seq_len": 32768}))
    four = estimate("llama-3-8b", H100, gpus=8, context_parallel=4, global_batch=2, **kw)
    assert four.memory.loss_buffers_bytes == pytest.approx(one.memory.loss_buffers_bytes)


def test_fp8_runs_block_linears_in_low_precision():
    r = recipe("fp8", catalog.accelerators[H100])
    assert r.low_share == 1.0 and r.low_dtype == "fp8" and r.high_dtype == "bf16"
    n = recipe("nvfp4", catalog.accelerators["b200"])
    assert n.low_share == 1.0 and n.element_bytes == pytest.approx(0.5625)  # Megatron-Bridge: no bf16 layers
    kw = dict(gpus=8, micro_batch=2, global_batch=16, seq_len=8192, compiled=True)
    assert estimate("llama-3-8b", H100, precision="fp8", **kw).tokens_per_s_per_gpu > \
        estimate("llama-3-8b", H100, **kw).tokens_per_s_per_gpu
    b200 = estimate("llama-3-8b", "b200", precision="nvfp4", **kw)
    assert b200.tokens_per_s_per_gpu > estimate("llama-3-8b", "b200", precision="mxfp8", **kw).tokens_per_s_per_gpu


def test_scale_lowers_efficiency_stragglers_and_fabric():
    kw = dict(micro_batch=1, seq_len=4096, tensor_parallel=8, recompute="selective")
    small = estimate("llama-3-70b", H100, gpus=64, global_batch=8, **kw)
    big = estimate("llama-3-70b", H100, gpus=8192, global_batch=1024, **kw)
    assert big.step.straggler_seconds / big.step_seconds > small.step.straggler_seconds / small.step_seconds
    assert big.mfu < small.mfu
    # an oversubscribed fabric slows the data-parallel traffic of a group spanning many leaves
    flat = estimate("llama-3-70b", H100, gpus=8192, global_batch=1024, dp_overlap=0.0, **kw)
    over = estimate("llama-3-70b", H100, gpus=8192, global_batch=1024, dp_overlap=0.0, oversubscription=4, **kw)
    assert over.step.dp_comm_exposed_seconds > flat.step.dp_comm_exposed_seconds


def test_pipeline_sends_split_over_tp_ranks():
    # Megatron's scatter/gather (Narayanan et al. 2021 sec. 4.1): each TP rank sends 1/t over the network
    from aisize.training.comm import Links, pipeline_send_seconds

    links = Links(450e9, 50e9, 8)
    act = 2 * 4096 * 8192
    whole = pipeline_send_seconds(act, 1, 64, 2, True, links)
    split = pipeline_send_seconds(act, 8, 64, 2, True, links)
    assert split < whole / 4


def test_async_tp_hides_tp_traffic():
    kw = dict(gpus=64, tensor_parallel=8, micro_batch=2, global_batch=16, seq_len=8192, recompute="full",
              compiled=True)
    plain = estimate("llama-3-70b", H100, **kw)
    overlapped = estimate("llama-3-70b", H100, async_tp=True, **kw)
    assert 0 < overlapped.step.tp_comm_seconds < plain.step.tp_comm_seconds


def test_memory_components_of_fsdp():
    # torchtitan Table 1 (8B, FSDP 8 vs 128): the sharded states shrink with the FSDP degree
    kw = dict(micro_batch=2, seq_len=8192, recompute="selective")
    a = estimate("llama-3-8b", H100, gpus=8, global_batch=16, **kw)
    b = estimate("llama-3-8b", H100, gpus=128, global_batch=256, **kw)
    states = a.memory.master_weights_bytes + a.memory.optimizer_moments_bytes + a.memory.gradients_bytes
    assert states == pytest.approx(16 * model_dims("llama-3-8b").total_params / 8, rel=0.01)
    assert a.peak_memory_bytes - b.peak_memory_bytes == pytest.approx(states * (1 - 8 / 128), rel=0.05)
    # the 128k vocabulary's logits: 12 B per logit at the start of backward (fp32 log-softmax)
    assert a.memory.loss_buffers_bytes == pytest.approx(12 * 2 * 8192 * 128256)


@pytest.mark.parametrize("kwargs, name", [
    (dict(context_parallel=3), "context_parallel"),
    (dict(pipeline_parallel=4, schedule="interleaved-1f1b", virtual_stages=3), "virtual_stages"),
    (dict(pipeline_parallel=2, virtual_stages=2), "virtual_stages"),
    (dict(precision="fp4"), "precision"),
    (dict(tensor_parallel=3), "gpus"),
    (dict(tensor_parallel=6, gpus=12), "tensor_parallel"),
    (dict(global_batch=12), "global_batch"),
    (dict(micro_batch=0), "micro_batch"),
    (dict(recompute="most"), "recompute"),
    (dict(schedule="gpipe"), "schedule"),
    (dict(pipeline_parallel=2, pipeline_microbatches=3, micro_batch=4, global_batch=16), "pipeline_microbatches"),
    (dict(framework="jax"), "framework"),
    (dict(zero_stage=1), "zero_stage"),
    (dict(cp_method="ulysses"), "cp_method"),
    (dict(oversubscription=0.5), "oversubscription"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = dict(gpus=8, micro_batch=1, global_batch=8, seq_len=8192) | kwargs
    with pytest.raises(ValueError, match=name):
        estimate("llama-3-8b", H100, **args)


def test_fp8_on_a_gpu_without_it_is_refused():
    with pytest.raises(ValueError, match="precision='fp8' is not allowed on a100-sxm-80gb"):
        estimate("llama-3-8b", A100, precision="fp8", **BASE)
    with pytest.raises(ValueError, match="precision='nvfp4' is not allowed on h100-sxm"):
        estimate("llama-3-8b", H100, precision="nvfp4", **BASE)


def test_bad_model_and_accelerator():
    with pytest.raises(ValueError, match="model"):
        estimate("llama-9", H100, **BASE)
    with pytest.raises(ValueError, match="accelerator"):
        estimate("llama-3-8b", "h900", **BASE)


def test_virtual_stage_rule():
    check_virtual_stages(126, 8, 2, "interleaved-1f1b")  # uneven stages: chunks of 7 or 8 layers
    with pytest.raises(ValueError, match="must divide the 20 layers per pipeline stage"):
        check_virtual_stages(80, 4, 3, "interleaved-1f1b")


def test_windowed_layers_attend_to_their_window_only():
    # gemma-3-27b: 52 of 62 layers slide over 1,024 tokens (config.json); at 32k tokens attention
    # costs the 10 global layers' 2·s plus the windowed ones' ~2·w per token (x H·Q)
    d = model_dims("gemma-3-27b")
    full = 2.0 * 32768
    assert d.window_layers and d.attention_keys(32768) < 0.3 * full
    assert model_dims("llama-3-8b").attention_keys(32768) == pytest.approx(full)
    w = d.window
    win = 4.0 * (w - w * w / (2.0 * 32768))
    share = d.window_layers / d.layers
    assert d.attention_keys(32768) == pytest.approx((1 - share) * full + share * win)
