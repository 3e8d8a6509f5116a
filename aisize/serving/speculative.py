"""Speculative decoding: a cheap drafter proposes k tokens, the model verifies k + 1 in one pass.

Each decode step of a sequence (Leviathan et al. 2023 [1]; Chen et al. 2023 [2]):

- the drafter runs k times, one token each (an MTP module reused k times, as TensorRT-LLM's
  "MTP Eagle" and SGLang's NextN do for DeepSeek [3]; an EAGLE-3 head [4]; a smaller draft
  model; or an n-gram lookup in the prompt, which costs no GPU time);
- the target model verifies the k drafts and samples one more token in a single pass: k + 1
  tokens per sequence through every linear layer and attention, but its weights and each
  sequence's KV cache are read once;
- on average τ(k) tokens come out of the step (the target's own included), the acceptance
  length. It is measured per method and model or model family (``data/speculative.csv``): acceptance
  falls with the draft position, so a constant per-token acceptance α over-predicts it (the
  TensorRT-LLM DeepSeek-R1 table: τ = 2.82 at k = 3 where α = 0.92 would give 3.45 [3]).
  Without a measured curve, α gives ``(1 - α^(k+1)) / (1 - α)`` [1].

So TPOT is (verify pass + k draft passes) / τ, and a request needs ``(O - 1) / τ`` decode
steps after its first token. The first draft pass of a step runs over the k + 1 tokens the target
just verified, so the drafter's cache and hidden states follow the accepted ones (SGLang's EAGLE
worker, ``forward_draft_extend_after_decode``, over ``num_draft_tokens`` a sequence [5];
TensorRT-LLM's one-model MTP Eagle, whose first draft forward takes
``accepted_tokens[:, :draft_len + 1]`` and gathers the last accepted one for the head [6]);
the k - 1 passes after it run one token a sequence, and every pass takes its logits at one token
a sequence. The drafter's weights (an MTP module or EAGLE head, a draft model) stay resident
beside the target's.

Where decode attention is read from measured kernels (``attention_source="kernels"``), the verify
pass of an MLA model reads each sequence's latent KV cache once for its k + 1 query tokens: MLA
decode kernels pack a sequence's query tokens with its query heads against the one shared latent
head (FlashMLA's ``get_mla_metadata(cache_seqlens, s_q * h_q // h_kv, h_kv)`` [7]), so the verify
is the generation-MLA table at the sequences' batch with ``(k + 1) x`` the query heads per GPU
(:func:`verify_attention_lookup`), as the roofline already reads the cache once. AIConfigurator
queries the tables at a batch of ``batch x (k + 1)`` instead [8], which reads every cache k + 1
times; the published DeepSeek-R1 runs on H200 under TensorRT-LLM with and without MTP (same MoE
backend and EP) say the cache is read once (docs/calibration-mtp.md, "The verify step by GPU and
engine"). GQA and MHA layers keep AIConfigurator's form (their tables' KV heads follow the query
heads' split).

References
----------
.. [1] Leviathan, Kalman, Matias 2023, "Fast Inference from Transformers via Speculative
       Decoding", ICML, sec. 3 (expected tokens per step).
.. [2] Chen et al. 2023, "Accelerating Large Language Model Decoding with Speculative
       Sampling", arXiv:2302.01318.
.. [3] NVIDIA/TensorRT-LLM tech blogs 1 and 2 (DeepSeek-R1 on B200; "DeepSeek R1 MTP
       Implementation and Optimization": the one MTP module called K times, K + 1 tokens
       verified); DeepSeek-AI 2024, arXiv:2412.19437, sec. 2.2 and 5.4.3 (one MTP module:
       a transformer block and a projection, sharing the embedding and output head).
.. [4] Li et al. 2025, "EAGLE-3", arXiv:2503.01840 (a one-layer draft head fed by the
       target's hidden states).
.. [5] sgl-project/sglang ``python/sglang/srt/speculative/eagle_worker.py``: ``draft`` runs
       ``speculative_num_steps - 1`` draft forwards of one token a sequence, ``verify`` the target over
       ``num_draft_tokens``, then ``forward_draft_extend_after_decode`` the draft over the verified tokens.
.. [6] NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/speculative/eagle3.py`` ``Eagle3OneModelWorker``
       (MTP Eagle mode): ``prepare_drafter_inputs`` feeds ``accepted_tokens[num_contexts:, :runtime_draft_len
       + 1]`` to the first draft forward and ``gather_ids`` picks the last accepted token's hidden state for
       the shared head; later forwards run one token a sequence. (Earlier builds' ``MTPEagleWorker`` in
       ``mtp.py`` fed one token a sequence to every pass.)
.. [7] deepseek-ai/FlashMLA ``README.md`` (Usage: ``get_mla_metadata(cache_seqlens, s_q * h_q // h_kv, h_kv)``;
       ``flash_mla/flash_mla_interface.py``: ``num_heads_per_head_k`` "Equals to seq_len_q * num_heads_q //
       num_heads_k").
.. [8] ``aiconfigurator-core`` 0.12.0, ``sdk/models/kimi_k3.py`` ("Backend queries generation ops at batch *
       (nextn + 1)"); ``aic-core/rust/aiconfigurator-core/src/engine/runtime.rs`` (``bs = batch_size * (nextn + 1)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from aisize import catalog, checks, models
from aisize.serving.costs import model_costs

METHODS = ("mtp", "eagle3", "draft", "ngram")
MAX_DRAFT_TOKENS = 16  # engines draft at most a handful; more is a typo
EAGLE3_DRAFT_VOCAB = 32000  # EAGLE-3 heads predict over a reduced vocabulary (its draft_vocab_size) [4]


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding as one replica runs it [count, tokens]."""

    method: str
    draft_tokens: int  # k: tokens drafted per step
    acceptance_length: float  # τ: tokens a step emits on average, the target's own included
    acceptance_source: str  # where τ comes from (given, or the table row)
    draft_costs: object  # ModelCosts of one draft pass (None: an n-gram lookup, no GPU work)
    draft_weights_bytes: float  # resident draft weights beyond the target's (whole replica) [B]
    # the same speculation without a drafter: the shape (k + 1 tokens a sequence) of the first draft pass [6];
    # kept on the record so the iteration's layout cache (keyed by id) sees one object per speculation
    first_pass: object = field(default=None, repr=False, compare=False)

    @property
    def verify_tokens(self) -> int:
        return self.draft_tokens + 1


def measured_acceptance_length(method: str, model: str, draft_tokens: int,
                               family: str | None = None) -> tuple[float, str]:
    """τ(k) from ``data/speculative.csv``: the curve of ``model`` (a catalog id or a family), else that of its
    ``family``, else the method's generic one.

    A model gets its own curve where it is measured apart from its family: acceptance follows the text the
    model writes, and a reasoning model (DeepSeek-R1) writes differently from its base (DeepSeek-V3).
    Beyond the longest k measured, τ stays at its last value (acceptance has saturated there).
    """
    rows = {r.id: r for r in catalog.speculative}
    row = rows.get(f"{method}:{model}") or (family and rows.get(f"{method}:{family}")) or rows.get(f"{method}:*")
    if row is None:
        raise ValueError(f"speculative_method={method!r} has no acceptance curve in data/speculative.csv: give "
                         f"acceptance_length")
    curve = [float(x) for x in row.acceptance_lengths.split(";")]
    tau = curve[min(draft_tokens, len(curve)) - 1]
    return tau, f"{row.id}: {row.source[:160]}"


def _draft_record(model, method: str, draft_model):
    """The model one draft pass runs: one layer of the target (MTP), a one-layer dense head over a
    reduced vocabulary (EAGLE-3), a separate model (draft), or nothing (n-gram)."""
    if method == "ngram":
        return None, 0.0
    if method == "draft":
        if draft_model is None:
            raise ValueError("speculative_method='draft' needs draft_model: a smaller model of the same family "
                             "(catalog id or record)")
        d = models.resolve(draft_model)
        return d, None  # its own weights, counted by the caller at the target's formats
    if method == "mtp":
        # one transformer block of the target's own kind (MoE where the target's last layers are),
        # sharing the embedding and output head [3]
        rec = replace(model, id=f"{model.id}-mtp", layers=1, sliding_layers=0,
                      dense_layers=0 if model.experts > 1 else model.dense_layers)
        return rec, "block"
    # eagle3: one dense decoder layer of the target's width over a reduced vocabulary [4]
    ffn = model.ffn_hidden if model.experts <= 1 else (model.moe_ffn_hidden or model.ffn_hidden) * 4
    rec = replace(model, id=f"{model.id}-eagle3", layers=1, experts=1, experts_per_token=1, shared_experts=0,
                  moe_ffn_hidden=None, shared_ffn_hidden=None, dense_layers=0, ffn_hidden=ffn,
                  vocab=min(EAGLE3_DRAFT_VOCAB, model.vocab), sliding_layers=0, tied_embeddings=False)
    return rec, "head"


def speculation(model, formats, kv_precision: str, *, method, draft_tokens, acceptance_length=None,
                draft_model=None) -> Speculation | None:
    """A :class:`Speculation` for the inputs of :func:`aisize.serving.estimate` (None when ``method`` is None).

    Parameters
    ----------
    model : the target's Transformer record; formats : its WeightFormats; kv_precision : KV format
    method : mtp | eagle3 | draft | ngram, or None
    draft_tokens : k, tokens drafted per step (1 to 16)
    acceptance_length : τ, tokens per step (1 to k + 1); None: the measured curve for the method
        and the model, else its family (``data/speculative.csv``)
    draft_model : the draft model of ``method="draft"`` (catalog id or record)
    """
    if method is None:
        if draft_tokens is not None or acceptance_length is not None:
            raise ValueError("speculative_tokens and acceptance_length need speculative_method "
                             f"(one of {', '.join(METHODS)})")
        return None
    m = checks.choice("speculative_method", str(method).lower(), METHODS)
    if draft_tokens is None:
        raise ValueError(f"speculative_method={method!r} needs speculative_tokens: the tokens drafted per step "
                         f"(1 to {MAX_DRAFT_TOKENS})")
    k = int(checks.scalar("speculative_tokens", checks.integer("speculative_tokens", draft_tokens,
                                                               high=MAX_DRAFT_TOKENS)))
    if acceptance_length is None:
        tau, source = measured_acceptance_length(m, model.id, k, family=model.family)
    else:
        tau = float(checks.scalar("acceptance_length", checks.number("acceptance_length", acceptance_length,
                                                                        low=1.0, high=float(k + 1))))
        source = "given"
    record, kind = _draft_record(model, m, draft_model)
    if record is None:
        return Speculation(m, k, tau, source, None, 0.0)
    costs = model_costs(record, formats, kv_precision)
    if kind == "block":  # shares the target's embedding and head
        extra = costs.weights_bytes - costs.head_bytes
    elif kind == "head":  # its own reduced head; the target's embedding is shared
        extra = costs.weights_bytes - costs.head_bytes + costs.head_weight_bytes
    else:
        extra = costs.weights_bytes
    return Speculation(m, k, tau, source, costs, float(extra), first_pass=Speculation(m, k, tau, source, None, 0.0))


def draft_seconds(spec: Speculation | None, rates, calib, *, decode_sequences, decode_context, shape_kwargs):
    """Time of the k draft passes over ``decode_sequences`` sequences [s]: each the drafter's layers
    (graph-replayed) plus the calibration's fixed ``draft_step_seconds`` (its sampling and input preparation).
    The first pass runs the k + 1 verified tokens of each sequence through the drafter's layers and its head
    over one of them [5, 6]; the k - 1 others one token a sequence."""
    return prepare_draft_seconds(spec, rates, calib, decode_context=decode_context,
                                 shape_kwargs=shape_kwargs)(decode_sequences)


def prepare_draft_seconds(spec: Speculation | None, rates, calib, *, decode_context, shape_kwargs):
    """:func:`draft_seconds` with all but the sequences fixed: ``seconds(decode_sequences)``, the same bits (the
    drafter's two iteration times prepared once, :func:`aisize.serving.iteration.prepare_iteration_time`), for an
    iteration asked at many batches."""
    if spec is None or spec.draft_costs is None:
        return lambda decode_sequences: 0.0
    from aisize.serving.iteration import prepare_iteration_time

    kw = {k: v for k, v in shape_kwargs.items() if k != "pipeline_parallel"}
    one = prepare_iteration_time(spec.draft_costs, rates, calib, decode_context=decode_context, prompt_tokens=1.0,
                                 **kw)
    first = prepare_iteration_time(spec.draft_costs, rates, calib, decode_context=decode_context, prompt_tokens=1.0,
                                   speculation=spec.first_pass, **kw)

    def seconds(decode_sequences):
        seqs = np.asarray(decode_sequences, dtype=float)
        a, b = one(seqs, 0.0 * seqs, 0.0 * seqs, True), first(seqs, 0.0 * seqs, 0.0 * seqs, True)
        first_seconds = b.gpu_seconds - b.head_seconds + a.head_seconds  # logits of one token a sequence
        passes = first_seconds + (spec.draft_tokens - 1) * a.gpu_seconds + spec.draft_tokens * calib.draft_step_seconds
        return np.where(seqs > 0, passes, 0.0)
    return seconds


def verify_attention_lookup(model, sequences, verify_tokens, tp):
    """(batch, tensor-parallel size) at which a decode step's attention is read from the measured generation
    kernels (:func:`aisize.serving.kernel_attention.decode_seconds`) for ``sequences`` decoding sequences of one
    attention group, each verifying ``verify_tokens`` (k + 1; 1 without speculation) on ``tp`` GPUs.

    MLA: the sequences' batch at ``tp / verify_tokens``, i.e. ``verify_tokens`` times the query heads per GPU over
    each sequence's latent cache read once [7]. Other attention forms: AIConfigurator's batch of
    ``sequences x verify_tokens`` at ``tp`` [8]."""
    if verify_tokens > 1 and model.attention == "mla":
        return sequences, tp / verify_tokens
    return sequences * verify_tokens, tp
