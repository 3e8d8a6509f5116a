"""aisize's memory estimates against real PyTorch execution on the CPU.

Small random-initialised Hugging Face ``transformers`` models (Llama with GQA
and MHA, GPT-2; no weights are downloaded, HF_HUB_OFFLINE=1) run one training
forward pass, one optimizer step or one generation; tests/torch_measure.py
measures what PyTorch allocates and the tests compare it with aisize:

* parameters and model states (weights, gradients, fp32 master, optimizer
  state after one step): exact, for every precision/optimizer/framework
  PyTorch can run here (fp8, Lion and 8-bit Adam need other libraries);
* activations saved for backward (``saved_tensors_hooks``), per layer and for
  the whole model, no recompute and full recompute: within 10 %;
* KV cache of a real generation cache: exact.

Dropout is 0 (Llama-style training; CPU dropout masks are stored at the input
dtype, not as CUDA's 1-byte masks). GPT-2 uses ``gelu_pytorch_tanh``, the
fused kernel of GPT-2's tanh GeLU: HF's default ``gelu_new`` is written in
Python ops that save 5 tensors of the MLP inner size, not the 2 of a GeLU.

Needs the ``torch`` extra (pip install -e '.[torch]'); skipped without it.
"""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # random init only: never reach the Hub
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch_measure as tm  # noqa: E402  (pytest puts tests/ on sys.path: prepend import mode)
from torch_measure import one_thread  # noqa: E402, F401  (autouse: torch on one thread in this module)

from aisize.models import from_hf_config, transformer_params  # noqa: E402
from aisize.memory.activations import layer_activation_bytes  # noqa: E402
from aisize.memory.inference import kv_bytes_per_token, transformer_kv_bytes_per_token  # noqa: E402
from aisize.memory.states import model_states  # noqa: E402
from aisize.training import transformer_memory_inputs, transformer_training_memory  # noqa: E402
from aisize.precision import training_precision  # noqa: E402

pytestmark = pytest.mark.torch
transformers.utils.logging.set_verbosity_error()

ACTIVATION_TOLERANCE = 0.10  # the bound on activation estimates
_LLAMA = dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
              vocab_size=1000, max_position_embeddings=512, attention_dropout=0.0)
CONFIGS = {
    "llama-gqa": ("llama", dict(_LLAMA, num_key_value_heads=2)),
    "llama-mha": ("llama", dict(_LLAMA, num_key_value_heads=8)),
    "llama-gqa-tied": ("llama", dict(_LLAMA, num_key_value_heads=2, tie_word_embeddings=True)),
    "gpt2": ("gpt2", dict(n_embd=256, n_layer=4, n_head=4, vocab_size=1000, n_positions=512,
                          bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                          attn_pdrop=0.0, activation_function="gelu_pytorch_tanh")),
}
ACTIVATION_MODELS = ("llama-gqa", "llama-mha", "gpt2")
SHAPES = ((64, 4), (128, 2), (256, 1))  # (seq_len, micro_batch)
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def _config(name: str, attn: str = "sdpa"):
    kind, kw = CONFIGS[name]
    cls = transformers.LlamaConfig if kind == "llama" else transformers.GPT2Config
    return cls(**kw, attn_implementation=attn)


def _model(name: str, attn: str = "sdpa", dtype: str = "bf16"):
    torch.manual_seed(0)
    config = _config(name, attn)
    cls = transformers.LlamaForCausalLM if config.model_type == "llama" else transformers.GPT2LMHeadModel
    return cls(config).to(DTYPES[dtype]), from_hf_config(config.to_dict(), id=name)


def _ids(seq_len: int, batch: int):
    return torch.randint(0, 1000, (batch, seq_len), generator=torch.Generator().manual_seed(1))


# --- parameters and model states -------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameter_count_equals_the_allocated_parameters(name):
    model, arch = _model(name)
    assert tm.count_params(model) == transformer_params(arch).total


# (model dtype, optimizer, aisize precision, framework emulated; None = pure, no master copy)
STATE_CASES = [("fp32", "adamw", "fp32", None), ("fp32", "sgd", "fp32", None)]
STATE_CASES += [(d, opt, d, fw) for d in ("bf16", "fp16") for opt in ("adamw", "sgd")
                for fw in ("zero", "megatron", "deepspeed", "fsdp")]


@pytest.mark.parametrize("dtype, optimizer, precision, framework", STATE_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3] or 'pure'}" for c in STATE_CASES])
def test_model_states_equal_the_tensors_allocated_after_one_step(dtype, optimizer, precision, framework):
    """Weights, gradients, fp32 master copy and optimizer moments after one real step,
    mixed precision emulated as aisize's framework profile defines it."""
    model, arch = _model("llama-gqa")
    n = transformer_params(arch).total
    got = tm.state_bytes_after_step(model, _ids(32, 2), dtype=dtype, optimizer=optimizer,
                                    mixed_framework=framework)
    est = model_states(n, precision=precision, optimizer=optimizer, framework=framework or "zero")
    assert (got.weights, got.gradients, got.master_weights, got.optimizer_moments) == (
        est.weights_bytes, est.gradients_bytes, est.master_weights_bytes, est.optimizer_moments_bytes)
    # AdamW keeps one 0-d fp32 step counter per parameter tensor; aisize leaves it out.
    assert got.step_counters <= 4 * len(list(model.parameters()))


@pytest.mark.parametrize("dtype, framework", [("fp32", None), ("bf16", "zero")])
def test_adafactor_state_is_negligible_as_aisize_assumes(dtype, framework):
    """aisize books Adafactor's factored second moment as 0 B/param; torch.optim.Adafactor
    keeps rows + columns per matrix and a full vector per 1-D parameter: 0.03 B/param
    here (hidden 256), so the total states stay within 1 %."""
    model, arch = _model("llama-gqa")
    n = transformer_params(arch).total
    got = tm.state_bytes_after_step(model, _ids(32, 2), dtype=dtype, optimizer="adafactor",
                                    mixed_framework=framework)
    est = model_states(n, precision=dtype, optimizer="adafactor", framework="zero")
    measured = got.weights + got.gradients + got.master_weights + got.optimizer_moments
    assert est.optimizer_moments_bytes == 0.0
    assert 0 < measured - est.total_bytes <= 0.01 * est.total_bytes


# --- activations -----------------------------------------------------------------------------

def _impl(arch, attn: str) -> dict:
    """How the HF models run here: no dropout; SDPA = FlashAttention (no s x s); eager norms
    (LlamaRMSNorm upcasts to fp32; GPT-2's nn.LayerNorm is one kernel either way); Llama's
    eager attention upcasts the softmax to fp32, GPT-2's keeps it in bf16."""
    return dict(dropout=False, flash_attention=attn == "sdpa", norm_impl="eager",
                softmax_fp32=CONFIGS[arch.id][0] == "llama")


def _estimate_constants(arch, attn: str):
    return transformer_memory_inputs(arch, **_impl(arch, attn))["constants"]


def _breakdown(saved, layer: int, sbh: int) -> str:
    parts = ", ".join(f"{k} {v / sbh:.3f}" for k, v in saved.by_part(layer).items())
    return f"measured layer {layer} in units of s*b*h bytes: {parts}"


@pytest.mark.parametrize("recompute", ["none", "full"])
@pytest.mark.parametrize("seq_len, batch", SHAPES)
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("name", ACTIVATION_MODELS)
def test_layer_activations_within_10_percent(name, attn, seq_len, batch, recompute):
    """Bytes one decoder layer saves for backward vs layer_activation_bytes (Korthikanti)."""
    model, arch = _model(name, attn)
    saved = tm.saved_activation_bytes(model, _ids(seq_len, batch), recompute=recompute == "full")
    consts = _estimate_constants(arch, attn)
    est = float(layer_activation_bytes(seq_len, batch, arch.hidden, arch.heads, recompute=recompute,
                                       constants=consts))
    assert len(set(saved.per_layer)) == 1, saved.per_layer  # every layer saves the same
    got = saved.per_layer[0]
    err = got / est - 1.0
    assert abs(err) <= ACTIVATION_TOLERANCE, (
        f"{name}/{attn} s={seq_len} b={batch} recompute={recompute}: measured {got} B, estimate "
        f"{est:.0f} B ({err:+.1%}); {consts}; {_breakdown(saved, 1, seq_len * batch * arch.hidden)}")


@pytest.mark.parametrize("recompute", ["none", "full"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("name", ACTIVATION_MODELS)
def test_model_activations_within_10_percent(name, attn, recompute):
    """All saved bytes of a forward pass with the loss (layers, shared RoPE tables/masks,
    embeddings, final norm, fp32 logits) vs transformer_training_memory's activations."""
    seq_len, batch = 128, 2
    model, arch = _model(name, attn)
    saved = tm.saved_activation_bytes(model, _ids(seq_len, batch), recompute=recompute == "full")
    mem = transformer_training_memory(arch, seq_len=seq_len, micro_batch=batch, recompute=recompute,
                                      **_impl(arch, attn))
    est = mem.activations_bytes + mem.loss_buffers_bytes  # the fp32 logits are booked as the loss's
    err = saved.total / est - 1.0
    assert abs(err) <= ACTIVATION_TOLERANCE, (
        f"{name}/{attn} recompute={recompute}: measured {saved.total} B (layers {saved.layers}, shared "
        f"{saved.shared}, edges {saved.edges}: {saved.by_module}), estimate {est:.0f} B ({err:+.1%})")


def test_fp32_activations_scale_by_the_precision_factor():
    """fp32 training saves every activation at 4 B: aisize's activation_scale 2 for fp32."""
    seq_len, batch = 128, 2
    model, arch = _model("gpt2", "sdpa", dtype="fp32")
    got = tm.saved_activation_bytes(model, _ids(seq_len, batch)).per_layer[0]
    est = layer_activation_bytes(seq_len, batch, arch.hidden, arch.heads,
                                 constants=_estimate_constants(arch, "sdpa"))
    est *= training_precision("fp32").activation_scale
    assert abs(got / est - 1.0) <= ACTIVATION_TOLERANCE


def test_saved_bytes_grow_with_the_attention_scores_only_in_eager_attention():
    """Eager attention keeps s x s scores per head, SDPA (flash) does not: doubling s at
    fixed tokens s*b raises eager's per-layer bytes by the score term and leaves SDPA's."""
    per_layer = {}
    for attn in ("eager", "sdpa"):
        model, _ = _model("gpt2", attn)
        per_layer[attn] = [tm.saved_activation_bytes(model, _ids(s, b)).per_layer[0]
                           for s, b in ((64, 4), (128, 2))]
    a, b_s2 = 4, 128 * 128 * 2 - 64 * 64 * 4  # heads; growth of b*s^2 between the shapes
    assert per_layer["eager"][1] - per_layer["eager"][0] == 2 * a * b_s2  # bf16 softmax output
    assert per_layer["sdpa"][1] == per_layer["sdpa"][0]


# --- KV cache --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("name", ACTIVATION_MODELS)
def test_kv_cache_of_a_real_generation_equals_the_estimate(name, dtype):
    """K and V tensors of the DynamicCache after ``generate`` (prompt 40, 8 new tokens, batch 3)."""
    model, arch = _model(name, "sdpa", dtype)
    model.eval()
    prompt, new, batch = 40, 8, 3
    with torch.no_grad():
        out = model.generate(_ids(prompt, batch), max_new_tokens=new, min_new_tokens=new, do_sample=False,
                             return_dict_in_generate=True, pad_token_id=0)
    cache = out.past_key_values
    tokens = cache.get_seq_length()
    assert tokens == prompt + new - 1  # the last sampled token is not fed back
    got = sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)
    per_token = kv_bytes_per_token(arch.layers, arch.kv_heads, arch.head_dim, dtype)
    assert got == per_token * tokens * batch
    assert got == transformer_kv_bytes_per_token(arch, dtype) * tokens * batch


@pytest.mark.parametrize("name", ACTIVATION_MODELS)
def test_kv_cache_of_one_forward_pass_equals_the_estimate(name):
    model, arch = _model(name)
    got = tm.kv_cache_bytes(model, _ids(64, 2))
    assert got == kv_bytes_per_token(arch.layers, arch.kv_heads, arch.head_dim, "bf16") * 64 * 2
