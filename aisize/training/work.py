"""The work of one transformer layer for one micro-batch on one GPU, timed kernel by kernel.

Per layer and micro-batch, on a GPU holding 1/t of the layer (tensor parallel) and
1/c of the sequence (context parallel), with ``tokens = b·s/c``:

* **GEMMs**: Q, K, V, output projection, the MLP's input projection(s) and output
  projection, each (tokens x n_in) @ (n_in x n_out/t) on its roofline
  (:func:`aisize.training.efficiency.gemm_seconds`); backward runs two GEMMs of the
  same size per linear (input gradient, weight gradient) [1].
* **attention** (causal FlashAttention): 2·s·H·Q·tokens/t FLOPs forward (half of
  PaLM's 4·s·H·Q non-causal count; windowed layers count their window,
  :meth:`~aisize.training.dims.ModelDims.attention_keys`), 2.5x that backward [2], plus one
  softmax exponential per score each way on the special-function units
  (:func:`aisize.training.efficiency.attention_seconds`).
* **memory-bound work**, bytes per element (16-bit activations), counted op by op:

  ===================== ================================ ==========================
  op                    eager PyTorch                    fused (compiled, Megatron)
  ===================== ================================ ==========================
  RMSNorm               36 (fp32 upcast: to fp32, pow,   4 (read, write)
                        mean, mul, to bf16, x weight)
  LayerNorm             4 (one native kernel)            4
  residual add          6 (read 2, write 1)              4 (fused into the norm)
  rotary embedding      20 on Q and K (to fp32, complex  4
                        multiply, to bf16)
  SwiGLU                10 on the inner width (silu,     6
                        multiply)
  GeLU / ReLU           4 on the inner width             4
  ===================== ================================ ==========================

  Norms and residuals run on tokens/t with sequence parallelism (else on every
  token); rotary, activation and casts on the rank's 1/t share. Backward moves
  ``backward_bytes_ratio`` (:mod:`aisize.training.calibration`) times the forward bytes.
  Context parallelism adds the merge of each chunk's partial attention output
  (:data:`CP_MERGE_BYTES` per output element and chunk).
* **low-precision casts** (:mod:`aisize.training.recipes`): the inputs of the
  linear layers forward, their output gradients backward.
* **recomputation** (applied in :mod:`aisize.training.step_time`): ``full`` re-runs the
  whole forward; ``selective`` as PyTorch's op-level selective checkpointing runs it
  (torchtitan, framework ``fsdp``: every other matmul output and the attention output
  are saved, the other matmuls and all elementwise ops are recomputed: ``sac_redo``) or
  as Megatron-LM runs it (framework ``megatron``: the named modules, by default the core
  attention, Korthikanti et al.) [3].
* the routed experts of MoE layers are timed in :mod:`aisize.training.moe`.

References
----------
.. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 3.1 (GEMM FLOPs of a layer).
.. [2] Dao 2023, arXiv:2307.08691 (FlashAttention-2 FLOP counts).
.. [3] Korthikanti et al. 2022, arXiv:2205.05198, sec. 5; pytorch/torchtitan
   ``parallelize_llama.py`` (``_save_list``, every second ``aten.mm`` recomputed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.training import efficiency as E
from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.calibration import TrainingCalibration
from aisize.training.dims import ModelDims
from aisize.training.recipes import cast_bytes_per_element
from aisize.training.setup import Engine

RMSNORM_BYTES = {"eager": 36.0, "fused": 4.0}
LAYERNORM_BYTES = 4.0
RESIDUAL_BYTES = {"eager": 6.0, "fused": 4.0}
ROPE_BYTES = {"eager": 20.0, "fused": 4.0}
GATED_ACTIVATION_BYTES = {"eager": 10.0, "fused": 6.0}
ACTIVATION_FN_BYTES = 4.0  # GeLU / ReLU: read, write (per inner element)
# Context parallelism runs attention chunk by chunk and merges each chunk's partial output
# with the running one by their log-sum-exp (fp32: read both, write one: 12 B per output
# element per chunk; the backward accumulates dQ the same way). Ring attention, Liu et al.
# 2023 (arXiv:2310.01889) sec. 3; PyTorch's context_parallel ``_SDPAMerger``.
CP_MERGE_BYTES = 12.0
# Bytes per logit of the loss, forward and backward: torchtitan's cross_entropy on
# logits.float() (to fp32, log-softmax's two passes, its backward, back to bf16): 40;
# a fused (vocab-parallel) cross entropy, as Megatron-LM's, one fp32 pass each way: 16.
LOSS_BYTES_PER_LOGIT = 40.0
FUSED_LOSS_BYTES_PER_LOGIT = 16.0


@dataclass(frozen=True)
class LayerTimes:
    """Seconds one layer takes for one micro-batch on one GPU, outside the routed experts (arrays broadcast).

    The parts are kept apart because recomputation re-runs some of them: ``norm_forward`` (the
    norms, what Megatron's ``layernorm`` recompute re-runs), ``mla_up_forward`` (MLA's
    up-projection GEMMs, ``mla_up_proj``), ``mlp_forward`` (dense MLP and shared-expert GEMMs
    and their activation, ``mlp`` / ``shared_experts``) and ``attention_forward`` (the core
    attention, ``core_attn``).
    """

    gemm_forward: object
    attention_forward: object
    attention_backward: object
    memory_forward: object
    memory_backward: object
    norm_forward: object
    mla_up_forward: object
    mlp_forward: object
    sac_redo: object  # PyTorch op-level selective checkpointing (torchtitan): every second matmul + elementwise

    @property
    def forward(self):
        return self.gemm_forward + self.attention_forward + self.memory_forward

    @property
    def backward(self):
        return 2.0 * self.gemm_forward + self.attention_backward + self.memory_backward


def _linears(d: ModelDims, tp):
    """(n_in, n_out) of each linear layer outside the routed experts on one TP rank, in matmul order."""
    h, f = d.hidden, d.dense_ffn_width
    mlp = [(h, f / tp), (h, f / tp)] if d.ffn_gated else [(h, f / tp)]
    return [(h, d.q_width / tp), (h, d.k_width / tp), (h, d.v_width / tp), (d.q_width / tp, h)] + mlp + [(f / tp, h)]


def layer_times(d: ModelDims, eng: Engine, *, tokens, micro_batch, seq_len, tp, sp, compiled: bool,
                attention_kernel: str = "fa2") -> LayerTimes:
    """Forward and backward seconds of one layer for one micro-batch, outside the routed experts (vectorized).

    ``tokens`` = b·s/c on this GPU, ``micro_batch`` = b, ``seq_len`` = s (the attention context), ``tp`` the
    tensor-parallel degree, ``sp`` sequence parallel, ``compiled`` fused elementwise kernels,
    ``attention_kernel`` "fa2" | "fa3" (:func:`aisize.training.efficiency.attention_kernel`); from ``eng``
    (:class:`aisize.training.setup.Engine`) the precision recipe, the generation, the peaks, the HBM rate,
    the GPU's exponential rate (None: not limiting) and the calibration.
    """
    recipe, gen, high_peak, low_peak = eng.recipe, eng.generation, eng.high_peak, eng.low_peak
    hbm_bytes_per_s, exp_per_s, cal = eng.hbm_bytes_per_s, eng.exp_per_s, eng.calibration
    impl = "fused" if compiled else "eager"
    e_high = E.gemm_efficiency(gen, "16", cal)
    e_low = E.gemm_efficiency(gen, recipe.low_bits, cal) if recipe.low_dtype else e_high

    def gemm(n_in, n_out):
        return E.recipe_gemm_seconds(tokens, n_in, n_out, recipe, high_peak=high_peak, low_peak=low_peak,
                                     e_high=e_high, e_low=e_low, hbm_bytes_per_s=hbm_bytes_per_s, cal=cal)

    def mem(moved):
        return E.memory_seconds(moved, hbm_bytes_per_s, cal)

    shapes = _linears(d, tp)
    times = [gemm(i, o) for i, o in shapes]
    listed = sum(i * o for i, o in shapes) * tp
    scale = d.dense_gemm_params / listed  # MLA, biases, routers: keep the parameter count's FLOPs
    gemm_fwd = sum(times) * scale
    redo_gemm = sum(times[1::2]) * scale  # op-level SAC recomputes every second matmul
    mlp_gemm = sum(times[4:]) * scale
    attn_gemm = sum(times[:4]) * scale
    mla_up = attn_gemm * (d.mla_up_params / sum(i * o * tp for i, o in shapes[:4]))

    # attention's length curve is read at the keys a query attends over the whole sequence, not at one
    # context-parallel chunk: TE's ring attention keeps its key loop running across the chunks, and
    # reading the chunk read MLPerf's Llama 2 70B LoRA runs at CP 4-8 up to 90 % slow (docs/training-cv.md)
    chunk = seq_len
    keys4 = d.attention_keys(seq_len) * d.attention_share  # 4 x mean keys per query, averaged over layers
    attn_flops = keys4 * d.attention_dim * tokens / tp
    exps = keys4 / 4.0 * d.heads * tokens / tp
    attn_fwd = E.attention_seconds(attn_flops, exps, gen, attention_kernel, chunk, high_peak, exp_per_s, cal)
    attn_bwd = E.attention_seconds(cal.attention_backward_ratio * attn_flops, exps, gen, attention_kernel, chunk,
                                   high_peak, exp_per_s, cal)

    h, f = d.hidden, d.dense_ffn_width
    norm = RMSNORM_BYTES[impl] if d.norm == "rmsnorm" else LAYERNORM_BYTES
    row_tokens = np.where(sp, tokens / tp, tokens)
    norms = d.norms_per_layer
    norm_fwd = mem(row_tokens * norms * norm * h)
    per_row = norms * (norm + RESIDUAL_BYTES[impl]) * h
    act_bytes = (GATED_ACTIVATION_BYTES[impl] if d.ffn_gated else ACTIVATION_FN_BYTES) * f
    per_head = (ROPE_BYTES[impl] * (d.q_width + d.k_width) * d.attention_share if d.rope else 0.0) + act_bytes
    cp = seq_len * micro_batch / tokens
    merge = np.where(cp > 1, cp * tokens * d.q_width / tp * CP_MERGE_BYTES, 0.0)
    elem_fwd = row_tokens * per_row + tokens * per_head / tp + merge
    cast = cast_bytes_per_element(recipe, compiled) * recipe.low_share
    cast_fwd = cast * tokens * (2.0 * h + (d.q_width + f) / tp)
    cast_bwd = cast * tokens * (2.0 * h + (d.q_width + d.k_width + d.v_width + f * (2 if d.ffn_gated else 1)) / tp)
    mem_fwd = mem(elem_fwd + cast_fwd)
    mem_bwd = mem(cal.backward_bytes_ratio * elem_fwd + cast_bwd)
    if d.mamba_layers:  # Mamba-2 scans (SSD) ride on the attention-like part of the layer
        ssd = ssd_seconds(d, tokens=tokens, tp=tp, gen=gen, high_peak=high_peak, hbm_bytes_per_s=hbm_bytes_per_s,
                          cal=cal)
        attn_fwd = attn_fwd + d.mamba_share * ssd
        attn_bwd = attn_bwd + d.mamba_share * SSD_BACKWARD_RATIO * ssd
    mlp_fwd = mlp_gemm + mem(tokens * act_bytes / tp)
    sac = redo_gemm + mem(elem_fwd + 0.5 * cast_fwd)
    return LayerTimes(gemm_fwd, attn_fwd, attn_bwd, mem_fwd, mem_bwd, norm_fwd, mla_up, mlp_fwd, sac)


# Mamba-2's SSD algorithm splits the sequence into chunks of Q tokens (dims.SSD_CHUNK_TOKENS):
# within a chunk it runs like attention over Q keys, across chunks it passes an H x P x N state.
# Its backward re-runs the chunk states and computes the gradients: about twice the forward, as a
# GEMM's (assumption).
SSD_BACKWARD_RATIO = 2.0


def ssd_seconds(d: ModelDims, *, tokens, tp, gen: str, high_peak, hbm_bytes_per_s, cal: TrainingCalibration = SHIPPED):
    """Forward time of one Mamba-2 layer's scan, causal convolution and gated norm [s].

    Per token (H heads of width P, G groups, state N, chunk Q): C·Bᵀ within the chunk 2·Q·N·G,
    its product with x 2·Q·P·H, the chunk states Bᵀx and their read-out C·state 4·N·P·H FLOPs,
    batched matmuls at the 16-bit GEMM efficiency; the convolution (read and write x, B, C),
    the scan's reads and writes and the gated RMSNorm move 2·(3·conv + H + 4·H·P) bytes. Heads
    split over TP.

    References
    ----------
    .. [1] Dao & Gu 2024, "Transformers are SSMs" (Mamba-2), arXiv:2405.21060, sec. 6 (SSD
       algorithm: intra-chunk, chunk states, state passing, output), sec. 7 (architecture).
    """
    flops, heads = d.mamba_scan_flops, d.mamba_heads  # aisize.models.mamba_scan_flops_per_token
    moved = 2.0 * (3.0 * d.mamba_conv_dim + heads + 4.0 * d.mamba_inner)
    return (tokens / tp) * (flops / (high_peak * E.gemm_efficiency(gen, "16", cal))
                            + moved / (hbm_bytes_per_s * cal.hbm_efficiency))


def head_seconds(d: ModelDims, eng: Engine, *, tokens, tp, fused_loss: bool):
    """Output projection (16-bit in every recipe) and loss of one micro-batch on the last stage [s] on the
    16-bit peak, HBM rate and calibration of ``eng``."""
    high_peak, gen, hbm_bytes_per_s, cal = eng.high_peak, eng.generation, eng.hbm_bytes_per_s, eng.calibration
    e = E.gemm_efficiency(gen, "16", cal)
    gemm = 3.0 * E.gemm_seconds(tokens, d.hidden, d.vocab / tp, high_peak, e, hbm_bytes_per_s, cal=cal)
    per_logit = FUSED_LOSS_BYTES_PER_LOGIT if fused_loss else LOSS_BYTES_PER_LOGIT
    loss = E.memory_seconds(per_logit * tokens * d.vocab / tp, hbm_bytes_per_s, cal)
    return gemm + loss


def optimizer_seconds(params_on_gpu, state_bytes_per_param, hbm_bytes_per_s, gemm_flops_per_s=1.0,
                      flops_per_param=0.0, cal: TrainingCalibration = SHIPPED):
    """Optimizer step over this GPU's share of the states [s].

    ``state_bytes_per_param``: bytes of fp32 master, moments and gradient per parameter
    (16 for AdamW); the step reads and writes them once, gradient clipping reads the
    gradients twice more (memory-bound). ``flops_per_param``: matrix work of the update per
    parameter (Muon's Newton-Schulz iterations, :data:`aisize.precision.OPTIMIZERS`), at the
    rate ``gemm_flops_per_s`` (16-bit peak x GEMM efficiency).
    """
    mem = E.memory_seconds(params_on_gpu * (2.0 * state_bytes_per_param + 8.0), hbm_bytes_per_s, cal)
    if not flops_per_param:
        return mem
    return mem + params_on_gpu * flops_per_param / gemm_flops_per_s
