"""Latent MoE (Nemotron 3 Super) in the model description and in training (issue 50, item 2).

Nemotron 3 Super 120B-A12B (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 config.json, below): 88
single-block layers, 40 Mamba-2, 8 attention (32 heads, 2 KV heads of 128), 40 LatentMoE; hidden
h = 4096; each MoE layer routes every token to k = 22 of E = 512 squared-ReLU experts of f_e = 2688
that work in a latent of l = 1024 (fc1_latent_proj h x l before them, fc2_latent_proj l x h after),
beside a router E x h (with a bias per expert) and one shared expert of 5376 on the hidden width.
Published: 120.6 B total, 12.7 B active (NVIDIA 2026, arXiv:2604.12374). Nano (31.6 B, 3.6 B with
embeddings, model card) has no latent and must keep its count. Figures below are worked by hand.
"""

import math

import pytest

from aisize import models, training
from aisize.training.dims import model_dims
from aisize.training.memory_inputs import moe_copy_sbh
from test_models_hybrid import H8B, NANO

SUPER = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": False,
         "chunk_size": 128, "conv_kernel": 4, "head_dim": 128, "hidden_size": 4096,
         "hybrid_override_pattern": "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*"
                                    "EMEMEMEME",
         "intermediate_size": 2688, "mamba_head_dim": 64, "mamba_num_heads": 128,
         "max_position_embeddings": 262144, "mlp_hidden_act": "relu2", "moe_intermediate_size": 2688,
         "moe_latent_size": 1024, "moe_shared_expert_intermediate_size": 5376, "n_groups": 8,
         "n_routed_experts": 512, "n_shared_experts": 1, "num_attention_heads": 32, "num_experts_per_tok": 22,
         "num_hidden_layers": 88, "num_key_value_heads": 2, "num_nextn_predict_layers": 1, "ssm_state_size": 128,
         "tie_word_embeddings": False, "vocab_size": 131072}

h, l, E, k, f, fs, V = 4096, 1024, 512, 22, 2688, 5376, 131072
EXPERT = 2 * l * f  # up l x f, down f x l (squared ReLU: no gate)
# router + its bias, fc1/fc2_latent_proj, 512 experts, the shared expert on h, the block's RMSNorm
MOE = E * h + E + 2 * h * l + E * EXPERT + 2 * h * fs + h
MOE_ACTIVE = MOE - (E - k) * EXPERT
ATTN = 2 * h * 32 * 128 + 2 * h * 2 * 128 + h  # q, o; k, v; RMSNorm
d_in, G, N, H = 8192, 8, 128, 128
MAMBA = h * (2 * d_in + 2 * G * N + H) + (d_in + 2 * G * N) * 5 + 3 * H + d_in + d_in * h + h


@pytest.fixture(scope="module")
def sup():
    return models.from_hf_config(SUPER)


def test_config_reads_the_latent_and_the_blocks(sup):
    assert sup.moe_latent_size == 1024 and models.expert_width(sup) == 1024
    assert (sup.attention_layers, sup.mamba_layers, sup.ffn_layers, sup.mtp_layers) == (8, 40, 40, 1)
    assert models.from_hf_config(NANO).moe_latent_size is None and models.expert_width(models.from_hf_config(NANO)) == 2688
    # the catalog row is the same record
    row = models.resolve("nemotron-3-super-120b-a12b")
    assert models.params(row) == models.params(sup) and row.moe_latent_size == 1024


def test_parameters_by_layer_kind_match_the_published_120b_and_12b(sup):
    assert EXPERT == 5_505_024 and MOE == 2_873_102_848 and MOE_ACTIVE == 175_641_088
    kinds = {b.kind: b for b in models.block_params(sup)}
    assert (kinds["moe"].layers, kinds["moe"].params, kinds["moe"].active) == (40, MOE, MOE_ACTIVE)
    assert ATTN == 35_655_680 and (kinds["attention"].layers, kinds["attention"].params) == (8, ATTN)
    assert (kinds["mamba"].layers, kinds["mamba"].params) == (40, MAMBA)
    total = 8 * ATTN + 40 * MAMBA + 40 * MOE + 2 * V * h + h  # + embedding, output head, final norm
    p = models.params(sup)
    assert p.total == total == 120_668_707_840
    assert p.routed_expert == EXPERT and models.latent_projection_params(sup) == 2 * h * l
    assert p.total == pytest.approx(120.6e9, rel=0.001)  # tech report: 120.6 B
    assert p.active == 8 * ATTN + 40 * MAMBA + 40 * MOE_ACTIVE + 2 * V * h + h == 12_770_237_440
    assert p.active == pytest.approx(12.7e9, rel=0.01)  # tech report: 12.7 B active (embeddings included)
    # without the latent the same experts would hold 4x the weights: 458.6 B
    plain = models.from_hf_config({**SUPER, "moe_latent_size": None})
    assert models.params(plain).total - p.total == 40 * (E * 2 * (h - l) * f - 2 * h * l)


def test_nano_without_latent_keeps_its_published_count():
    p = models.params(models.from_hf_config(NANO))
    assert p.total == pytest.approx(31.6e9, rel=0.005) and p.active == pytest.approx(3.6e9, rel=0.02)


def test_latent_moe_flops_per_token_by_hand(sup):
    kinds = {x.kind: x for x in training.layer_kinds(sup, seq_len=8192)}
    moe = kinds["moe"]
    # forward: router 2hE, the two projections 2·2hl, 22 experts 2·2lf, the shared expert 2·2h·fs
    by_hand = 2 * h * E + 2 * 2 * h * l + k * 2 * 2 * l * f + 2 * 2 * h * fs + 2 * E + 2 * h
    assert moe.forward_flops_per_token == 2 * MOE_ACTIVE == by_hand == 351_282_176
    assert moe.training_flops_per_token == 3 * by_hand
    # the 22 experts at the hidden width would cost 4x: 22 x 2 x 2 x 4096 x 2688 = 1.94 GFLOP forward
    plain = {x.kind: x for x in training.layer_kinds(models.from_hf_config({**SUPER, "moe_latent_size": None}),
                                                      seq_len=8192)}["moe"]
    assert plain.forward_flops_per_token - moe.forward_flops_per_token == k * 4 * (h - l) * f - 4 * h * l
    # model FLOPs: the kinds' sum plus embeddings and head at 6 per weight; 80.6 GFLOP per token at s = 8192
    pc = models.params(sup)
    total = sum(x.layers * x.training_flops_per_token for x in kinds.values()) + 6 * (pc.embedding + pc.head + h)
    assert training.model_flops_per_token(model_dims(sup), 8192) == pytest.approx(total, rel=1e-12)
    assert total == pytest.approx(80.63e9, rel=1e-3)


def test_latent_moe_activations_by_hand(sup):
    kinds = {x.kind: x for x in training.layer_kinds(sup, seq_len=8192)}
    # norm input + first GEMM input (4h), the squared-ReLU outputs of 22 experts and the shared one
    # (2·(22·2688 + 5376)), 22 routed copies of the l-wide token (2·22·l), fc2_latent_proj's input (2l)
    assert kinds["moe"].activation_bytes_per_token == 4 * h + 2 * (k * f + fs) + 2 * k * l + 2 * l == 192_512
    tp2 = {x.kind: x for x in training.layer_kinds(sup, seq_len=8192, tensor_parallel=2)}
    assert tp2["moe"].activation_bytes_per_token == 192_512 / 2
    # the memory model's routed copies, per layer on average in units of h: (2·22·l + 2l) / h x 40/88
    assert moe_copy_sbh(sup) == pytest.approx((2 * k * l + 2 * l) / h * 40 / 88)
    assert moe_copy_sbh(models.from_hf_config(NANO)) == pytest.approx(2 * 6 * 23 / 52)  # no latent: 2k per layer


def test_dispatch_carries_latent_tokens(sup):
    d = model_dims(sup)
    assert (d.expert_width, d.moe_latent, d.expert_params) == (1024, 1024, EXPERT)
    assert model_dims(models.from_hf_config(NANO)).expert_width == 2688
    # same layout, latent vs hidden-width experts: the latent model's step is shorter and holds less memory
    kw = dict(gpus=64, micro_batch=1, global_batch=512, seq_len=8192, framework="megatron", expert_parallel=64)
    lat = training.estimate(sup, "b200", **kw)
    plain = training.estimate(models.from_hf_config({**SUPER, "moe_latent_size": None}), "b200", **kw)
    assert lat.step_seconds < plain.step_seconds and lat.peak_memory_bytes < plain.peak_memory_bytes


def test_end_to_end_estimate_on_b200(sup):
    r = training.estimate(sup, "b200", gpus=64, micro_batch=1, global_batch=512, seq_len=8192,
                          framework="megatron", expert_parallel=64)
    assert r.fits
    assert all(math.isfinite(x) and x > 0 for x in (r.tokens_per_s_per_gpu, r.mfu, r.peak_memory_bytes, r.step_seconds))
    assert r.step.model_flops / r.step.tokens == pytest.approx(training.model_flops_per_token(model_dims(sup), 8192))
    assert 0.02 < r.mfu < 0.8
    # 120.7 B weights over 64 GPUs at EP 64: the 8 local experts of each of the 40 layers are most of them
    assert r.memory.weights_bytes < 2 * models.params(sup).total / 8
    frame = training.search_layouts(sup, "b200", 64, global_batch=512, seq_len=8192, top=5)
    assert len(frame) and (frame["tokens_per_s_per_gpu"] > 0).all()


def test_bad_latent_sizes_are_named():
    with pytest.raises(ValueError, match="moe_latent_size=8192"):
        models.from_hf_config({**SUPER, "moe_latent_size": 8192})  # wider than hidden 4096
    with pytest.raises(ValueError, match="moe_latent_size"):
        models.from_hf_config({**H8B, "moe_latent_size": 1024})  # no MoE layer
    with pytest.raises(ValueError, match="moe_latent_size"):
        models.from_hf_config({**SUPER, "moe_latent_size": 0})
