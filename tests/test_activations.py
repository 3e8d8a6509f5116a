"""Activation memory against Korthikanti et al. 2022 (arXiv:2205.05198) and the training breakdown."""

import numpy as np
import pytest

from aisize.memory import activation_constants, layer_activation_bytes
from aisize.training import fits, max_micro_batch, pipeline_in_flight, training_memory
from aisize.memory.activations import FLASH_STATS_BYTES_PER_HEAD_TOKEN

CASES = [(2048, 1, 12288, 96, 8), (2048, 4, 20480, 128, 8), (1024, 2, 4096, 32, 4), (4096, 1, 8192, 64, 2)]


@pytest.mark.parametrize("s, b, h, a, t", CASES)
def test_korthikanti_formulas(s, b, h, a, t):
    # Korthikanti et al. 2022, sec. 4 / Table 2, exact (16-bit activations, 1-byte masks).
    sbh = s * b * h
    assert layer_activation_bytes(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert layer_activation_bytes(s, b, h, a, tp=t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert layer_activation_bytes(s, b, h, a, tp=t, sequence_parallel=True) == pytest.approx(
        sbh / t * (34 + 5 * a * s / h))
    assert layer_activation_bytes(s, b, h, a, tp=t, sequence_parallel=True, recompute="selective") == \
        pytest.approx(34 * sbh / t)
    assert layer_activation_bytes(s, b, h, a, tp=t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
    assert layer_activation_bytes(s, b, h, a, tp=t, recompute="full") == pytest.approx(2 * sbh)
    assert layer_activation_bytes(s, b, h, a, tp=t, sequence_parallel=True, recompute="full") == \
        pytest.approx(2 * sbh / t)


def test_gpt3_and_mtnlg_selective_savings():
    # Korthikanti sec. 4.2: "for GPT-3, 5as/h = 80"; selective recomputation cuts activation memory by
    # 70 % for GPT-3 and 65 % for MT-NLG (a=128, h=20480) -- printed to the percent.
    s = 2048
    full = layer_activation_bytes(s, 1, 12288, 96, tp=8, sequence_parallel=True)
    sel = layer_activation_bytes(s, 1, 12288, 96, tp=8, sequence_parallel=True, recompute="selective")
    assert full / (s * 12288 / 8) - 34 == pytest.approx(80)
    assert round(100 * (1 - sel / full)) == 70
    full = layer_activation_bytes(s, 1, 20480, 128, tp=8, sequence_parallel=True)
    sel = layer_activation_bytes(s, 1, 20480, 128, tp=8, sequence_parallel=True, recompute="selective")
    assert round(100 * (1 - sel / full)) == 65


def test_flash_attention_removes_score_term():
    # Dao et al. 2022 (arXiv:2205.14135): no s x s matrices kept, only a fp32 log-sum-exp per head and token.
    s, b, h, a = 4096, 1, 4096, 32
    flash = layer_activation_bytes(s, b, h, a, constants=activation_constants(flash_attention=True))
    assert flash == pytest.approx(34 * s * b * h + FLASH_STATS_BYTES_PER_HEAD_TOKEN * a * s * b)


def test_swiglu_no_dropout_constants():
    # Derived in activations.py: Llama-2-7B layer (SwiGLU, f=11008, no dropout, MHA) stores
    # sbh(8 + 8 + 8 x 11008/4096) = 37.5 sbh and 2as^2b; GQA 8/64 shrinks K and V to 0.5 sbh.
    c = activation_constants("swiglu", 11008 / 4096, dropout=False)
    assert (c.replicated_sbh + c.parallel_sbh, c.score_as2b) == (37.5, 2.0)
    g = activation_constants("swiglu", 28672 / 8192, dropout=False, kv_ratio=8 / 64)
    assert g.parallel_sbh == pytest.approx(2 + 0.5 + 2 + 8 * 3.5)


# Eager (Hugging Face) implementations, derived tensor by tensor from transformers'
# models/llama/modeling_llama.py (LlamaRMSNorm.forward, eager_attention_forward, repeat_kv)
# and matched to the byte by tests/test_torch_crosscheck.py.

def test_eager_llama_layer_hf_rmsnorm_and_fp32_softmax():
    # Llama-2-7B (h 4096, a 32, f 11008, MHA, no dropout): each LlamaRMSNorm saves its fp32 input 4 +
    # bf16 normalised 2 sbh + fp32 rstd 4 B/token; the fp32 softmax 4 + its bf16 copy 2 per as^2b.
    c = activation_constants("swiglu", 11008 / 4096, dropout=False, norm_impl="eager", softmax_fp32=True)
    assert (c.replicated_sbh, c.replicated_sb, c.score_as2b) == (16.0, 8.0, 6.0)
    assert (c.final_norm_sbh, c.final_norm_sb) == (6.0, 4.0)
    s, b, h, a = 4096, 1, 4096, 32
    assert layer_activation_bytes(s, b, h, a, constants=c) == pytest.approx(
        s * b * h * (45.5 + 8 / h) + 6 * a * s * s * b)
    # sequence parallelism shards the per-token statistics with the rest of the replicated part
    assert layer_activation_bytes(s, b, h, a, tp=4, sequence_parallel=True, constants=c) == pytest.approx(
        s * b * h * (45.5 + 8 / h) / 4 + 6 * a * s * s * b / 4)


def test_fp32_softmax_with_dropout_and_fused_defaults():
    # fp32 softmax output 4 + 1-byte dropout mask + 16-bit dropout output 2 = 7; bf16: Korthikanti's 5.
    assert activation_constants(softmax_fp32=True).score_as2b == 7.0
    assert activation_constants().score_as2b == 5.0
    assert activation_constants(softmax_fp32=True, flash_attention=True).score_as2b == 0.0
    c = activation_constants()
    assert (c.replicated_sb, c.final_norm_sbh, c.final_norm_sb) == (0.0, 2.0, 0.0)


def test_eager_gqa_saves_k_and_v_at_all_heads():
    # Llama-3-70B (k_v/a = 8/64): repeat_kv expands K, V to 64 heads before the score matmul,
    # 4 sbh instead of 4 x 1/8 = 0.5 sbh; FlashAttention (or SDPA enable_gqa) reads them grouped.
    kw = dict(ffn_type="swiglu", ffn_ratio=28672 / 8192, dropout=False, kv_ratio=8 / 64, heads_per_kv=8)
    eager, flash = activation_constants(**kw), activation_constants(flash_attention=True, **kw)
    assert eager.parallel_sbh - flash.parallel_sbh == pytest.approx(4 * (1 - 1 / 8))


def test_eager_final_norm_on_the_last_stage():
    # The final LlamaRMSNorm adds 4 sbh + 4 B/token to Korthikanti's 4sbh output-layer edge, and
    # every layer 8 sbh + 8 B/token for its two norms: totals with pp = 1, no recompute.
    kw = dict(layer_params=2e8, embed_params=1.3e8, output_params=1.3e8, layers=32, hidden=4096, heads=32,
              vocab=32000, seq_len=4096, micro_batch=1, dropout=False)
    fused = activation_constants("swiglu", 11008 / 4096, dropout=False)
    eager = activation_constants("swiglu", 11008 / 4096, dropout=False, norm_impl="eager")
    diff = (training_memory(constants=eager, **kw).activations_bytes
            - training_memory(constants=fused, **kw).activations_bytes)
    sb = 4096 * 1
    assert diff == pytest.approx(32 * (8 * sb * 4096 + 8 * sb) + 4 * sb * 4096 + 4 * sb)


def test_planner_norm_default_is_fused():
    # transformer_memory_inputs: RMSNorm models default to fused kernels (Korthikanti's 2 sbh a norm);
    # eager applies HF's upcasting RMSNorm; LayerNorm models stay fused (nn.LayerNorm is one kernel).
    from aisize.training import transformer_memory_inputs

    llama, gpt = _hf(), _hf(model_type="gpt2", n_embd=1024, n_layer=24, n_head=16, n_positions=1024,
                             vocab_size=50257)
    assert transformer_memory_inputs(llama)["constants"].replicated_sbh == 8.0
    assert transformer_memory_inputs(llama, norm_impl="eager")["constants"].replicated_sbh == 16.0
    assert transformer_memory_inputs(gpt, norm_impl="eager")["constants"].replicated_sbh == 8.0
    gqa = _hf(num_key_value_heads=8)  # 32 query heads share 8 K/V heads
    eager = transformer_memory_inputs(gqa, flash_attention=False)["constants"].parallel_sbh
    flash = transformer_memory_inputs(gqa)["constants"].parallel_sbh
    assert eager - flash == pytest.approx(4 * (1 - 8 / 32))
    with pytest.raises(ValueError, match="norm_impl"):
        transformer_memory_inputs(gpt, norm_impl="apex")


def test_pipeline_first_stage_holds_p_microbatches():
    # Narayanan et al. 2021 sec. 2.2.1 (1F1B); Korthikanti sec. 4.2.3 (interleaved factor 1 + (p-1)/(p v)).
    assert pipeline_in_flight(8, 32)[0] == 8 and pipeline_in_flight(8, 4)[0] == 4
    assert float(pipeline_in_flight(4, 16, 2)[1]) == pytest.approx(1 + 3 / 8)


def test_first_stage_total_independent_of_pp():
    # Korthikanti sec. 4.2.3: first stage stores L/p layers x p micro-batches = L layers, whatever p.
    kw = dict(layer_params=1.8e9, embed_params=0.6e9, output_params=0.0, layers=96, hidden=12288, heads=96,
              vocab=51200, seq_len=2048, micro_batch=1, tp=8, sequence_parallel=True, dropout=True)
    acts = [training_memory(pp=p, **kw).activations_bytes for p in (4, 8, 16)]
    layer = 34 * 2048 * 12288 / 8 + 5 * 96 * 2048**2 / 8
    for p, act in zip((4, 8, 16), acts):
        edge = 2048 * 12288 * p / 8  # embedding dropout mask of p in-flight micro-batches
        assert act == pytest.approx(96 * layer + edge)


def test_max_micro_batch_is_largest_that_fits():
    kw = dict(layer_params=0.2e9, embed_params=0.13e9, output_params=0.13e9, layers=32, hidden=4096, heads=32,
              vocab=32000, seq_len=4096, recompute="selective", zero_stage=3, dp=8)
    cap = 80e9
    b = max_micro_batch(cap, **kw)
    assert b >= 1
    assert fits(training_memory(micro_batch=b, **kw), cap).fits
    assert not fits(training_memory(micro_batch=b + 1, **kw), cap).fits


def test_breakdown_has_named_overheads():
    m = training_memory(layer_params=1e8, embed_params=1e7, output_params=1e7, layers=12, hidden=1024, heads=16,
                        vocab=32000, seq_len=1024, micro_batch=1)
    d = m.as_dict()
    for item in ("cuda_context_bytes", "fragmentation_bytes", "temporary_buffers_bytes",
                 "communication_buffers_bytes", "activations_bytes", "optimizer_moments_bytes"):
        assert item in d
    assert d["total_bytes"] == pytest.approx(sum(v for k, v in d.items() if k not in ("total_bytes", "host_bytes")))


def test_vectorized_over_arrays():
    out = layer_activation_bytes(np.array([1024, 2048]), 1, 4096, 32)
    assert out.shape == (2,) and out[1] > out[0]


@pytest.mark.parametrize("kwargs, name", [
    (dict(tp=5), "tp"), (dict(recompute="some"), "recompute"), (dict(seq_len=-1), "seq_len"),
    (dict(micro_batch=0), "micro_batch"), (dict(hidden=0), "hidden"),
])
def test_bad_input(kwargs, name):
    args = dict(seq_len=2048, micro_batch=1, hidden=4096, heads=32) | kwargs
    with pytest.raises(ValueError, match=name):
        layer_activation_bytes(**args)


def test_bad_training_input():
    kw = dict(layer_params=1e8, embed_params=1e7, output_params=1e7, layers=12, hidden=1024, heads=16,
              vocab=32000, seq_len=1024, micro_batch=1)
    with pytest.raises(ValueError, match="pp"):
        training_memory(pp=13, **kw)
    with pytest.raises(ValueError, match="ep"):
        training_memory(dp=6, ep=4, **kw)
    with pytest.raises(ValueError, match="ffn_type"):
        activation_constants("tanh")
    with pytest.raises(ValueError, match="norm_impl"):
        activation_constants(norm_impl="apex")
    with pytest.raises(ValueError, match="heads_per_kv"):
        activation_constants(heads_per_kv=0.5)


def _hf(**extra):
    from aisize.models import from_hf_config

    base = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
            "max_position_embeddings": 4096, "tie_word_embeddings": False, "rms_norm_eps": 1e-5}
    return from_hf_config(base | extra)


def test_qlora_llama2_7b_weights_at_nf4():
    # Dettmers et al. 2023: frozen base in NF4 (4.127 bits), LoRA adapters trained with full states.
    from aisize.training import transformer_training_memory

    model = _hf()
    q = transformer_training_memory(model, seq_len=512, micro_batch=1, lora_rank=64, qlora=True,
                                    recompute="full")
    full = transformer_training_memory(model, seq_len=512, micro_batch=1, recompute="full")
    adapters = 64 * 32 * (4 * (4096 + 4096) + 3 * (4096 + 11008))
    assert q.weights_bytes == pytest.approx(6_738_415_616 * 4.127 / 8 + adapters * 2, rel=1e-6)
    assert q.optimizer_moments_bytes == pytest.approx(adapters * 8, rel=1e-6)
    assert q.total_bytes < 0.2 * full.total_bytes


def test_mixtral_expert_parallel_divides_experts():
    # Mixtral 8x7B (Jiang et al. 2024): 8 experts, 2 per token; EP splits routed experts over ep GPUs.
    from aisize.training import transformer_training_memory

    model = _hf(model_type="mixtral", hidden_size=4096, intermediate_size=14336, num_key_value_heads=8,
                num_local_experts=8, num_experts_per_tok=2, vocab_size=32000)
    one = transformer_training_memory(model, seq_len=4096, micro_batch=1, dp=8, ep=1)
    eight = transformer_training_memory(model, seq_len=4096, micro_batch=1, dp=8, ep=8)
    expert_weights = 32 * 8 * 3 * 4096 * 14336 * 2  # bf16 bytes of all routed experts
    assert one.weights_bytes - eight.weights_bytes == pytest.approx(expert_weights * 7 / 8, rel=1e-6)


def test_other_model_states_and_activations():
    from aisize.catalog.records import OtherModel
    from aisize.training import other_model_training_memory

    # ResNet-50: 25.6 M parameters, 4.1 G multiply-adds (He et al. 2016, Table 1).
    r50 = OtherModel(id="r50", name="ResNet-50", family="cnn", params=25.6e6, forward_per_sample_flops=8.2e9,
                     input_sample_bytes=150528, default_batch=256, dataset="imagenet-1k", source="He 2016", note=None)
    m1 = other_model_training_memory(r50, micro_batch=1)
    m2 = other_model_training_memory(r50, micro_batch=2)
    # fp16 mixed SGD: weights 2 + grads 2 + master 4 + momentum 4 = 12 B/param
    assert m1.weights_bytes + m1.gradients_bytes + m1.master_weights_bytes + m1.optimizer_moments_bytes == \
        pytest.approx(12 * 25.6e6)
    assert m2.activations_bytes == pytest.approx(2 * m1.activations_bytes)
