"""From a transformer record to the plain numbers of :func:`aisize.training.memory.training_memory`."""

from __future__ import annotations

import numpy as np

from aisize import checks
from aisize.memory.activations import FFN_SAVED_TENSORS, NORM_IMPLS, ActivationConstants, activation_constants
from aisize.memory.states import lora_adapter_params
from aisize.training.dims import model_dims, param_count, resolve
from aisize.training.layer_kinds import mamba_saved_bytes_per_token
from aisize.training.memory import TrainingMemory, sac_saved_sbh, training_memory


def lora_layer_params(arch, rank) -> float:
    """LoRA adapters on every linear layer of one dense layer (QLoRA's 'all linear') [count].

    References
    ----------
    .. [1] Hu et al. 2021, arXiv:2106.09685; Dettmers et al. 2023, arXiv:2305.14314 (all linear layers).
    """
    h, q, kv, f = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim, arch.ffn_hidden
    mlp = [(h, f), (h, f), (f, h)] if arch.ffn_type == "swiglu" else [(h, f), (f, h)]
    return lora_adapter_params(rank, 1, [(h, q), (h, kv), (h, kv), (q, h)] + mlp)


def transformer_memory_inputs(model, *, pp=1, dropout=False, flash_attention=True, lora_rank=None,
                              norm_impl="fused", softmax_fp32=False, te=False, low_precision=False) -> dict:
    """The plain numbers :func:`training_memory` needs, from a catalog Transformer (or its id).

    Splits :func:`aisize.models.transformer_params` into per-layer,
    routed-expert (all experts of one layer, on average), embedding and output
    parts (a tied output layer is a copy on the last stage when pp > 1), and
    derives the activation constants (FFN type and size, GQA/MLA widths; MoE:
    (experts per token + shared) x expert size), the widths PyTorch's selective
    checkpointing saves and the K + V width context parallelism gathers. With
    ``lora_rank`` the layer parameters include the adapters and ``trainable_share``
    is their share. ``norm_impl`` (fused | eager) applies to RMSNorm models;
    LayerNorm models are always fused (torch.nn.LayerNorm is one native kernel).
    ``softmax_fp32``: eager attention upcasting the softmax (HF Llama family). ``te``: Transformer
    Engine / Megatron kernels (fused gated activation; with ``low_precision`` (an fp8 recipe) the
    GEMM inputs kept for the weight gradients are quantized).

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, sec. 4; Hu et al. 2021, arXiv:2106.09685.
    """
    m = resolve(model)
    d = model_dims(m)
    pc = param_count(m)
    h, L = m.hidden, m.layers
    layer = d.layer_resident_params
    output = pc.head if not m.tied_embeddings else np.where(np.asarray(pp) > 1, m.vocab * h, 0.0)
    ratio = d.ffn_width / h
    if m.attention == "mla":
        q_ratio, kv_ratio = d.q_width / h, (d.k_width + d.v_width) / (2 * h)
        heads_per_kv = 1.0
    else:
        q_ratio, kv_ratio = d.q_width / h, d.k_width / h
        heads_per_kv = m.heads / m.kv_heads
    checks.choice("norm_impl", norm_impl, NORM_IMPLS)
    # hybrids: Q, K, V on the attention layers only, each block keeps its normed input, and a
    # Mamba-2 layer what Megatron-LM's memory-efficient mixer saves (layer_kinds.mamba_saved_bytes_per_token)
    mamba = d.mamba_share * mamba_saved_bytes_per_token(d) / h
    blocks = d.attention_share + d.mamba_share + d.ffn_layers / L
    consts = activation_constants(m.ffn_type, ratio, dropout=dropout, q_ratio=q_ratio,
                                  kv_ratio=kv_ratio, flash_attention=flash_attention,
                                  norm_impl=norm_impl if m.norm == "rmsnorm" else "fused",
                                  softmax_fp32=softmax_fp32, heads_per_kv=heads_per_kv, fused_activation=te,
                                  low_precision_inputs=te and low_precision, attention_share=d.attention_share,
                                  norms=m.norms_per_layer, block_inputs=blocks, extra_parallel_sbh=mamba)
    share = 1.0
    if lora_rank is not None:
        adapters = lora_layer_params(m, lora_rank)
        share = adapters * L / (pc.total + adapters * L)
        layer = layer + adapters
    return dict(layer_params=layer, expert_params=d.layer_expert_params, embed_params=pc.embedding,
                output_params=output, layers=L, hidden=h, heads=m.heads, vocab=m.vocab, constants=consts,
                dropout=dropout, trainable_share=share, kv_width=float(d.k_width + d.v_width),
                sac_sbh=sac_saved_sbh(h, d.q_width, d.k_width, d.v_width, d.ffn_width, d.ffn_gated),
                moe_copy_sbh=moe_copy_sbh(m, te and low_precision))


def moe_copy_sbh(model, low_precision_inputs=False) -> float:
    """Bytes per token per layer (in units of h) MoE layers keep beyond the experts' inner tensors,
    averaged over layers: the k routed copies of each token the experts' first GEMM saves (2k; k
    when Transformer Engine keeps them quantized). The routing probabilities weight the experts'
    activation (Megatron-Core's ``TEGroupedMLP``: the weighted activation is the second GEMM's
    input, counted with the inner tensors), so the unpermutation keeps no expert output. A latent MoE
    (Nemotron 3 Super) routes copies of the latent width l (k·l/h each) and its fc2_latent_proj keeps its
    input, the combined latent (2·l/h); fc1_latent_proj reads the block's normed input, kept already.

    References
    ----------
    .. [1] NVIDIA Megatron-LM ``megatron/core/transformer/moe/experts.py`` (``TEGroupedMLP.forward``:
       ``bias_act_func`` applies ``permuted_probs`` after the activation), ``moe_utils.py`` (``permute``),
       ``moe_layer.py`` (``fc1_latent_proj`` / ``fc2_latent_proj`` around the dispatcher).
    """
    d = model_dims(model)
    if not d.moe_layers:
        return 0.0
    per_copy = 1.0 if low_precision_inputs else 2.0
    copies = per_copy * d.experts_per_token * d.expert_width / d.hidden
    latent_out = 2.0 * d.moe_latent / d.hidden  # fc2_latent_proj's input (0 without a latent)
    return (copies + latent_out) * d.moe_layers / d.layers


def recompute_saved_sbh(model, modules, consts: ActivationConstants) -> tuple[float, float]:
    """(replicated, TP-split) bytes per token per layer, in units of h, that Megatron's recompute modules
    do not keep (:mod:`aisize.training.recompute`), averaged over layers.

    ``layernorm``: the two norm outputs (the QKV and MLP inputs), 2 + 2; ``moe_act``: the experts'
    activation output, 2·k·f_e/h; ``mla_up_proj``: MLA's Q, K and V (2q + 4kv of
    :func:`aisize.memory.activations.activation_constants`) less the latents kept instead;
    ``mlp`` / ``shared_experts`` / ``moe``: the inputs and inner tensors of those blocks.
    """
    if not modules:
        return 0.0, 0.0
    m = resolve(model)
    d = model_dims(m)
    h, L = d.hidden, d.layers
    moe = d.moe_layers / L
    saved = 2.0 * FFN_SAVED_TENSORS[m.ffn_type]
    rep = par = 0.0
    if "layernorm" in modules:
        rep += 4.0
    if "moe_act" in modules:
        par += moe * 2.0 * d.experts_per_token * d.expert_ffn / h
    if "mla_up_proj" in modules and m.attention == "mla":
        par += 2.0 * d.q_width / h + 2.0 * (d.k_width + d.v_width) / h - 2.0 * d.mla_latent_width / h
    dense_width = d.dense_ffn_width * (1.0 - d.shared_ffn_share)
    if "mlp" in modules:
        rep += 2.0 * (1.0 - moe)
        par += saved * dense_width / h
    if "shared_experts" in modules:
        par += saved * d.dense_ffn_width * d.shared_ffn_share / h
    if "moe" in modules:
        rep += 2.0 * moe
        par += moe * saved * d.experts_per_token * d.expert_ffn / h + moe_copy_sbh(m)
    return rep, par


def transformer_training_memory(model, *, seq_len, micro_batch, pp=1, dropout=False, flash_attention=True,
                                lora_rank=None, qlora=False, norm_impl="fused", softmax_fp32=False,
                                **kwargs) -> TrainingMemory:
    """Per-GPU training memory of a catalog :class:`~aisize.catalog.Transformer` (or its id).

    Parameters
    ----------
    model : a Transformer record (catalog, Hugging Face config) or a catalog id
    seq_len, micro_batch, pp : as in :func:`training_memory`
    dropout : dropout on (GPT-3, OPT) or off (Llama, Mistral, DeepSeek configs: 0.0)
    flash_attention : attention kernel without s x s matrices
    norm_impl, softmax_fp32 : implementation the activations assume (fused | eager norm,
        fp32 eager softmax), see :func:`transformer_memory_inputs`
    lora_rank : LoRA rank on all linear layers; None trains every parameter
    qlora : frozen base stored as NF4 (QLoRA; embeddings are counted at NF4 too,
        though QLoRA keeps them 16-bit: under 1 % of a 7B model's bytes at NF4)
    kwargs : tp, dp, ep, cp, sequence_parallel, recompute, zero_stage, precision, optimizer,
        framework, num_microbatches, virtual_stages, offload_optimizer, offload_params,
        compiled, gather_bytes

    References
    ----------
    .. [1] see :func:`training_memory` and :func:`transformer_memory_inputs`;
       Dettmers et al. 2023, arXiv:2305.14314 (QLoRA).
    """
    if qlora and lora_rank is None:
        raise ValueError("qlora=True is not allowed without lora_rank: QLoRA trains LoRA adapters")
    inputs = transformer_memory_inputs(model, pp=pp, dropout=dropout, flash_attention=flash_attention,
                                       lora_rank=lora_rank, norm_impl=norm_impl, softmax_fp32=softmax_fp32)
    frozen = "nf4" if qlora else "bf16"
    return training_memory(seq_len=seq_len, micro_batch=micro_batch, pp=pp, frozen_dtype=frozen,
                           **inputs, **kwargs)
