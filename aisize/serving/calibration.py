"""Calibration of the serving model: the few achieved fractions and fixed costs it needs.

The iteration model (:mod:`aisize.serving.iteration`) is a roofline over datasheet peaks
and bandwidths from the catalog, times the shares of them real kernels reach, plus the
fixed costs that do no useful work. Those shares and costs are the only calibrated
numbers in serving; the same values serve every model and every engine.

Sourced (not fitted):

- ``attention_efficiency`` 0.6: FlashAttention-3 reaches about 1.2 PFLOP/s in FP8
  (61 % of H100's 1,979) and up to 75 % in BF16 (Shah et al. 2024, arXiv:2407.08608); with
  ``attention_source="kernels"`` it serves only where no measured attention table covers a case;
- ``link_efficiency`` 0.8: :data:`aisize.network.collectives.DEFAULT_EFFICIENCY`;
- ``gemm_tile_tokens`` 128: grouped GEMMs pad each expert's rows to the kernel's M block
  (DeepGEMM's contiguous layout aligns every expert segment to ``BLOCK_M`` = 128;
  CUTLASS Hopper/Blackwell MoE GEMM tiles are 128 rows), so an expert that gets a few
  tokens costs a whole tile of FLOPs;
- ``eager_layer_seconds`` 120 µs: a layer launched kernel by kernel from the host (no CUDA
  graph) issues ~20 kernels at ~6 µs of launch each (PyTorch eager dispatch, CUDA
  Graphs blog: "launch overheads of several microseconds per kernel");
- ``draft_step_seconds`` 150 µs: the fixed time of one MTP draft pass beyond its layers, the
  value with which this model reproduces TensorRT-LLM's published min-latency DeepSeek-R1
  speed-ups on 8 x B200 (tech blog 1: 1.78x, 2.25x and 2.28x tokens/s per user with 1, 2 and 3
  MTP layers at the blog's measured 1.92, 2.58 and 2.82 tokens a step; the model gives 1.78x, 2.22x
  and 2.27x, tests/test_serving_load.py). The public
  speculative runs cannot set it: they do not state their acceptance, which depends on their
  random-token prompts, so a fit would load an acceptance shortfall onto the draft's cost.

Assumed (no public set identifies them; stated in every table of constants):

- ``collective_seconds`` 10 µs: the order of a small all-reduce among one server's GPUs
  (the custom one-shot all-reduce kernels of TensorRT-LLM, SGLang and vLLM); the public runs
  cannot tell it from the fixed per-layer times, which absorb any difference;
- ``gemm_efficiency[cdna4]``: the public MI355X runs are all decode-bound, so they do not
  identify a GEMM efficiency; Blackwell's fitted share stands in.

Fitted jointly by robust least squares (soft-L1 on log errors, a weak prior holding each
constant near its start) on every public set that informs them, through the public entry
points, and nothing else (``benchmarks/fit_serving.py``; ``aisize calibrate`` runs the same
fit, :func:`aisize.calibrate.fit`, on a user's own runs): TensorRT-LLM max-throughput runs,
closed-loop runs at a fixed concurrency (1 to 256 requests in flight; TensorRT-LLM, SGLang
and vLLM on Hopper, Blackwell and CDNA4) and disaggregated deployments
(``data/validation/serving_*.csv``). The runs with MTP speculative decoding are scored, not
fitted on: they state no acceptance, so they would move the other constants to make up for
an unknown acceptance (``draft_step_seconds`` above). Each regime identifies different
constants: low concurrency the fixed per-layer times and the achieved HBM rates; max
throughput the GEMM efficiencies, elementwise and routing traffic and host time. A GPU
generation gets its own GEMM and HBM efficiency and MoE-layer time (FP8 GEMMs on Hopper,
NVFP4 on Blackwell and MXFP4 on CDNA4 are different kernels on different silicon); a
generation without public runs borrows another's and its results are flagged uncalibrated.

A recipe (model, GPU, engine, weight format) that a benchmark reran with a newer engine build is
often faster in the later run on the same layout and load (TensorRT-LLM FP8 on 8 x B200 at 922/922
tokens: TPOT 18.5 ms at 16 in flight on 2025-11-02, 11.1 ms at 8 and 21.5 ms at 64 on 2026-01-29).
aisize's inputs carry no engine build, so it estimates the latest: Blackwell's HBM share and MoE-layer
time, which low-concurrency decode identifies, are fitted on the latest build of each recipe (113
Blackwell runs: 134 less the 21 disaggregated ones with MTP, which state no acceptance;
``benchmarks/fit_serving.py --fit --generation blackwell --latest-builds --constants
memory_efficiency moe_layer_seconds``); the earlier builds are scored and read as such
(:func:`aisize.validation.serving.superseded_readings`). Blackwell's GEMM share stays as the joint fit
set it (compute-bound work, which the builds change little; refitted too it runs to 0.92 of the
datasheet peak and puts two more max-throughput runs outside 15 %). Hopper keeps the constants fitted on
all its runs: its latest builds hold one MoE run at a fixed concurrency, which does not identify its
MoE-layer time (a fit on them runs it from 63 to 209 µs and puts that run further off).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType

from aisize import checks
from aisize.network.collectives import DEFAULT_EFFICIENCY

SHARES = ("gemm_efficiency", "attention_efficiency", "memory_efficiency", "expert_memory_efficiency", "link_efficiency",
          "expert_gemm_efficiency")
# name -> (unit, what it is); the order is the table's
CONSTANTS = {
    "gemm_efficiency": ("share", "share of the dense tensor peak the linear layers reach, per GPU generation"),
    "attention_efficiency": ("share", "share of the attention peak prefill and decode attention reach"),
    "memory_efficiency": ("share", "share of the HBM bandwidth streaming kernels reach"),
    "expert_memory_efficiency": ("share", "share of the HBM bandwidth the routed experts' weight reads reach"),
    "link_efficiency": ("share", "share of the scale-up / scale-out link rate collectives reach"),
    "expert_gemm_efficiency": ("share", "share of the dense GEMMs' rate the routed experts' grouped GEMMs reach"),
    "gemm_tile_tokens": ("tokens", "rows a GEMM tile pads each expert's tokens to"),
    "elementwise_bytes_per_token": ("B per token per layer per unit of hidden size",
                                    "HBM traffic of norms, rotary, activation, quantization, residuals"),
    "expert_bytes_per_token": ("B per token per expert per unit of hidden size",
                               "HBM traffic of routing a token to an expert and back (permute, un-permute)"),
    "layer_seconds": ("s", "fixed GPU time per layer per iteration under CUDA graphs (kernel ramps and tails)"),
    "moe_layer_seconds": ("s", "additional fixed time per MoE layer (router, top-k, permutation, GEMM setup)"),
    "collective_seconds": ("s", "latency of one collective among a replica's GPUs (all-reduce, dispatch)"),
    "eager_layer_seconds": ("s", "host launch time per layer of an iteration that is not graph-captured"),
    "draft_step_seconds": ("s", "fixed time of one speculative draft pass beyond its layers (its own sampling, "
                                "input preparation and launch)"),
    "host_seconds_per_sequence": ("s", "host scheduling time per scheduled sequence per iteration"),
    "grace_host_factor": ("x", "host time multiplier on Grace-hosted superchips (Arm cores)"),
    "request_seconds": ("s", "fixed time of a request outside the GPU (HTTP, tokenizing, first-token "
                              "streaming): part of TTFT"),
}


GEMM_SOURCES = ("roofline", "kernels")
#: moe_source also takes "kernel_fixed": the roofline's routed experts plus, per MoE layer, the measured operator's
#: time at one token beyond the roofline's (aisize.serving.kernel_moe.fixed_seconds); and "engine_kernels": the
#: measured operator only under the engines of MOE_KERNEL_ENGINES, the roofline under the others (issue 48: each
#: engine gains its own kernels once cross-validation says so; docs/calibration.md, 2026-12-05)
#: "kernel_cap": the roofline's routed experts, on a one-GPU replica with FP8 or BF16 experts never longer than the
#: engine's measured operator for the same GPU and shape (aisize.serving.moe_cap; docs/calibration-mixtral-mlperf.md)
#: "kernel_cap_split": "kernel_cap", and TensorRT-LLM's NVFP4 experts on every split never longer than the operator
#: measured at that split (moe_cap.SPLIT_CAPPED; docs/calibration-nvfp4-prefill.md)
MOE_SOURCES = GEMM_SOURCES + ("kernel_fixed", "engine_kernels", "kernel_cap", "kernel_cap_split")
#: engines whose measured MoE operator is the one their published recipes ran (SGLang's ``--moe-runner-backend
#: flashinfer_trtllm`` on Blackwell, its default Triton fused MoE on Hopper; docs/calibration.md)
MOE_KERNEL_ENGINES = frozenset({"sglang"})
#: the calibration's switches between the roofline and the measured kernel tables (each one of GEMM_SOURCES)
SOURCE_SWITCHES = ("gemm_source", "moe_source", "attention_source", "allreduce_source", "gather_source",
                   "moe_layer_source", "elementwise_source")
#: moe_layer_source: "fitted" (moe_layer_seconds as fitted, whatever the experts' format) or "format_kernels" (that
#: time scaled by the measured MoE operators' small-batch time in the replica's expert format over FP8's,
#: aisize.serving.moe_format; not shipped: docs/calibration.md, "The MoE layer's fixed time by weight format")
#: "low_latency_kernels": that scaling only where the engine's low-latency NVFP4 MoE kernels run (TensorRT-LLM, at most
#: 128 tokens through a MoE layer; aisize.serving.moe_format.LOW_LATENCY_ENGINES); not shipped: every public check
#: line holds, but leaving one model out loses 8 runs (docs/calibration-nvfp4.md)
MOE_LAYER_SOURCES = ("fitted", "format_kernels", "low_latency_kernels")
#: elementwise_source: "replicated" (elementwise_bytes_per_token on every GPU of a tensor-parallel group, as fitted)
#: or "split" (REPLICATED_ELEMENTWISE_BYTES on every GPU, elementwise_bytes_per_token divided over the group;
#: not shipped: docs/calibration.md, "The elementwise traffic split by tensor parallelism")
ELEMENTWISE_SOURCES = ("replicated", "split")
#: Elementwise HBM traffic a layer does over the whole hidden vector, which tensor parallelism does not divide (the
#: all-reduce leaves every rank the full hidden state) [B per token per layer per unit of hidden size], counted for a
#: pre-norm block (Llama, DeepSeek-V3: an RMSNorm before attention and before the MLP/MoE, Zhang & Sennrich 2019,
#: arXiv:1910.07467; a residual add after each) with 16-bit activations and unfused kernels:
#: two RMSNorms, each reading the hidden vector and writing its normalized copy: 2 x (2 + 2) = 8;
#: two residual adds, each reading the residual and the sublayer's output and writing the sum: 2 x (2 + 2 + 2) = 12;
#: two quantizations of the normed vector to 8-bit GEMM inputs (before QKV / MLA's down-projection and before the
#: MLP/MoE), each reading 16 bits and writing 8: 2 x (2 + 1) = 6. Engines that fuse the add into the norm and the
#: quantization into both move less; this is the upper count.
REPLICATED_ELEMENTWISE_BYTES = 26.0


@dataclass(frozen=True)
class Calibration:
    """Achieved shares of peak and fixed costs of serving engines [dimensionless, s, B].

    See :data:`CONSTANTS` for each attribute's unit and meaning. ``gemm_efficiency`` maps
    a GPU generation to its share, and other constants may too where the public rows tell
    generations apart (:meth:`value`); ``fallback_generation`` stands in for a GPU of an
    uncalibrated generation (results are then flagged).
    """

    name: str
    source: str
    gemm_efficiency: MappingProxyType
    fallback_generation: str
    attention_efficiency: float
    memory_efficiency: float | MappingProxyType
    expert_memory_efficiency: float | MappingProxyType
    link_efficiency: float
    expert_gemm_efficiency: float
    gemm_tile_tokens: float
    elementwise_bytes_per_token: float
    expert_bytes_per_token: float
    layer_seconds: float | MappingProxyType
    moe_layer_seconds: float | MappingProxyType
    collective_seconds: float
    eager_layer_seconds: float
    draft_step_seconds: float
    host_seconds_per_sequence: float
    grace_host_factor: float
    request_seconds: float
    # where linear layers' time comes from: "roofline" (peaks x gemm_efficiency) or "kernels" (the engine's
    # GEMMs measured on the GPU, aisize.serving.kernel_gemms, with the roofline where no table covers a case)
    gemm_source: str = "roofline"
    # where routed experts' time comes from: "roofline" (tile-padded grouped GEMMs x expert efficiencies) or
    # "kernels" (the engine's MoE operator measured on the GPU, aisize.serving.kernel_moe, else the roofline), or
    # "kernel_fixed" (the roofline plus the operator's measured fixed time per MoE layer, kernel_moe.fixed_seconds),
    # or "engine_kernels" ("kernels" under the engines of MOE_KERNEL_ENGINES, the roofline under the others), or
    # "kernel_cap" (the roofline, on a one-GPU replica never above the measured operator, aisize.serving.moe_cap), or
    # "kernel_cap_split" ("kernel_cap", and TensorRT-LLM's NVFP4 experts on every split above 128 tokens too)
    moe_source: str = "roofline"
    # where attention's time comes from: "roofline" (attention peak x attention_efficiency, KV reads at the HBM
    # share) or "kernels" (the engine's attention and MLA kernels measured on the GPU, aisize.serving.
    # kernel_attention, with the roofline where no table covers a case)
    attention_source: str = "roofline"
    # where tensor-parallel all-reduces within a server come from: "roofline" (ring bandwidth + collective_seconds)
    # or "kernels" (the engine's and NCCL's all-reduce measured on the GPU, aisize.serving.kernel_allreduce)
    allreduce_source: str = "roofline"
    # where attention-DP groups' gather and scatter of tokens around each MoE layer within a server come from:
    # "roofline" ((dp - 1) shares over the link + collective_seconds, each) or "kernels" (NCCL's all-gather and
    # reduce-scatter measured on the GPU, aisize.serving.kernel_allreduce.gather_scatter_seconds)
    gather_source: str = "roofline"
    # the MoE layer's fixed time: "fitted" (moe_layer_seconds as is), "format_kernels" (scaled to the replica's
    # expert format by the measured MoE operators, aisize.serving.moe_format) or "low_latency_kernels" (so scaled only
    # where the engine's low-latency NVFP4 MoE kernels run)
    moe_layer_source: str = "fitted"
    # the elementwise traffic: "replicated" (elementwise_bytes_per_token on every GPU of a TP group) or "split"
    # (REPLICATED_ELEMENTWISE_BYTES on every GPU plus elementwise_bytes_per_token divided by the TP group's size)
    elementwise_source: str = "replicated"
    fitted: tuple = field(default=())  # names of the fitted attributes (gemm_efficiency[gen] for one generation)
    fitted_on: tuple = field(default=())  # the sets the fit used
    assumed: tuple = field(default=())  # values no public set identifies, stated as assumptions

    def __hash__(self):  # its mappings are read-only views: hash their items (plans are cached by input)
        return hash(tuple(tuple(sorted(v.items())) if isinstance(v, MappingProxyType) else v
                          for v in (getattr(self, f.name) for f in fields(self))))

    def with_(self, **changes) -> "Calibration":
        """A copy with some values changed (for sensitivity studies and the fit)."""
        for name, value in changes.items():
            if isinstance(value, dict):
                changes[name] = MappingProxyType(dict(value))
        return replace(self, **changes)

    def value(self, name: str, generation: str | None):
        """A constant for a GPU generation: its own value where the constant is kept per generation,
        else the fallback generation's; a single value serves every generation."""
        v = getattr(self, name)
        if isinstance(v, MappingProxyType):
            return v.get(generation, v[self.fallback_generation])
        return v

    def origin(self, name: str) -> str:
        return "fitted" if name in self.fitted else ("assumed" if name in self.assumed else "sourced")

    def as_table(self) -> list[dict]:
        """Every constant with its value, unit and whether it was fitted or sourced (for the user)."""
        rows = []
        for name, (unit, meaning) in CONSTANTS.items():
            value = getattr(self, name)
            if isinstance(value, MappingProxyType):
                for gen, v in value.items():
                    key = f"{name}[{gen}]"
                    rows.append({"constant": key, "value": v, "unit": unit, "origin": self.origin(key),
                                 "meaning": meaning})
            else:
                rows.append({"constant": name, "value": value, "unit": unit, "origin": self.origin(name),
                             "meaning": meaning})
        return rows

    def slowdowns(self, base: "Calibration | None" = None, factor: float = 4.0, most: int = 3) -> str:
        """The constants that make serving ``factor`` x slower than ``base`` (the default) or more, furthest
        first, in words ("layer_seconds=0.01 (206x aisize's 4.845e-05)"; "" when none): what to name when a
        plan on this calibration needs far more replicas than one on aisize's (a share lower, a time, a
        traffic, a tile or the Grace factor higher)."""
        base = CALIBRATION if base is None else base
        far = []
        for name in CONSTANTS:
            mine = getattr(self, name)
            for gen, v in (mine.items() if isinstance(mine, MappingProxyType) else [(None, mine)]):
                b = base.value(name, gen or base.fallback_generation)
                slower = b / v if name in SHARES else v / b if b > 0 else (math.inf if v > 0 else 1.0)
                if slower >= factor:
                    label = f"{name}[{gen}]" if gen else name
                    far.append((slower, f"{label}={v:.4g} ({v / b:.3g}x aisize's {b:.4g})" if b > 0
                                else f"{label}={v:.4g} (aisize's is 0)"))
        far.sort(key=lambda x: -x[0])
        return "; ".join(text for _, text in far[:most])

    def to_json(self) -> str:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update({k: dict(v) for k, v in d.items() if isinstance(v, MappingProxyType)})
        d["fitted"], d["fitted_on"], d["assumed"] = list(self.fitted), list(self.fitted_on), list(self.assumed)
        return json.dumps(d, indent=2)

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path


# Physical range of each constant, (low, high, why): a value outside is no engine's, and the serving figures
# built on it (replicas, GPUs, servers, the tenants' queue) would run past the plan's limits. At these ends every
# preset still plans (tests/test_plan_limits.py); aisize calibrate's fit (aisize.calibrate.fitting.BOUNDS) keeps
# well inside them.
_SECOND = ("10 ms of fixed time per layer is 80x the launches of an eager layer (120 µs) and 200x the fitted "
           "graph-captured 48 µs: a 100-layer model would take a second an iteration, which no engine does")
RANGES = {
    **{name: (0.1, 1.0, "below 10 % of a datasheet peak no tuned engine runs (the fitted shares are 28 % to 83 %, "
                        "and aisize calibrate fits them from 10 % up); a share near 0 would ask for billions of "
                        "replicas") for name in SHARES},
    "gemm_tile_tokens": (1.0, 1024.0, "GEMM kernels pad to M tiles of 64 to 256 rows (CUTLASS; BLOCK_M 128 in "
                                      "DeepGEMM); 0 rows has no meaning"),
    "elementwise_bytes_per_token": (0.0, 1000.0, "1,000 B per unit of hidden size is 500 reads or writes of a 16-bit "
                                                 "activation per layer; norms, rotary, activation and residuals make "
                                                 "a few dozen (fitted 121 B)"),
    "expert_bytes_per_token": (0.0, 1000.0, "1,000 B per unit of hidden size is 500 16-bit copies of a token per "
                                            "expert; permuting and un-permuting make a few (fitted 20 B)"),
    "layer_seconds": (0.0, 0.01, _SECOND),
    "moe_layer_seconds": (0.0, 0.01, _SECOND),
    "eager_layer_seconds": (0.0, 0.01, _SECOND),
    "collective_seconds": (0.0, 0.01, "10 ms is 1,000x a one-server all-reduce of a decode step (10 µs) and 100x "
                                      "one across servers"),
    "draft_step_seconds": (0.0, 0.01, "10 ms is 65x the fixed time of a draft pass on B200 (150 µs): a draft that "
                                      "slow would cost more than the tokens it saves"),
    "host_seconds_per_sequence": (0.0, 0.001, "1 ms of host time per sequence per iteration is 40x the fitted "
                                              "26 µs: at 256 sequences it alone would make a 256 ms iteration"),
    "grace_host_factor": (0.1, 10.0, "the Arm cores of Grace schedule within 10x an x86 host either way (fitted 1.8x)"),
    "request_seconds": (0.0, 60.0, "a minute outside the GPU before the first token outlasts the default read "
                                   "timeout of an HTTP proxy (nginx proxy_read_timeout 60 s); fitted 0.15 s"),
}
MAX_FILE_BYTES = 1_000_000  # a calibration is a page of numbers; anything larger is not one
MAX_TEXT_CHARS = {"name": 200, "source": 2000, "fallback_generation": 40}
MAX_LIST_ITEMS = 200  # fitted, fitted_on, assumed: constants' and files' names
MAX_GENERATIONS = 20


_text = checks.printable  # text of a calibration file: 1 to a limit of printable characters


def _names(where: str, name: str, value) -> tuple:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or len(value) > MAX_LIST_ITEMS:
        raise ValueError(f"{where}: {name} must be a list of at most {MAX_LIST_ITEMS} names")
    return tuple(_text(where, name, v, MAX_TEXT_CHARS["name"]) for v in value)


def from_json(text: str, *, where: str = "calibration") -> Calibration:
    """A :class:`Calibration` from :meth:`Calibration.to_json` text, every value checked.

    Keys left out keep the default calibration's values; an unknown key, a value that is not a
    finite number in its range, a share outside (0, 1] and over-long or non-printable text are
    refused with a message that starts with ``where``.
    """
    return from_dict(checks.json_value(text, where), where=where)


def from_dict(d, *, where: str = "calibration") -> Calibration:
    """A :class:`Calibration` from a parsed calibration file (a dict), checked as :func:`from_json` says."""
    if not isinstance(d, dict):
        raise ValueError(f"{where} must hold a JSON object of calibration constants")
    if {"serving", "training"} & set(d):  # a file of sections (aisize.calibration): the serving one is read here
        if set(d) - {"serving", "training"}:
            raise ValueError(f"{where} mixes sections with top-level keys "
                             f"{sorted(map(str, set(d) - {'serving', 'training'}))[:5]!r}; allowed sections: "
                             "serving, training")
        d = d.get("serving") or {}
        where = f"{where} section 'serving'"
        if not isinstance(d, dict):
            raise ValueError(f"{where} must hold a JSON object of calibration constants")
    base = {f.name: getattr(CALIBRATION, f.name) for f in fields(CALIBRATION)}
    merged = checks.merged(d, base, where)
    for name, limit in MAX_TEXT_CHARS.items():
        merged[name] = _text(where, name, merged[name], limit)
    for name in CONSTANTS:
        v = merged[name]
        per_generation = isinstance(v, (dict, MappingProxyType))
        if per_generation and (not v or merged["fallback_generation"] not in v or len(v) > MAX_GENERATIONS):
            raise ValueError(f"{where}: {name} must map 1 to {MAX_GENERATIONS} GPU generations to values, the "
                             f"fallback generation {merged['fallback_generation']!r} included")
        items = v.items() if per_generation else [(None, v)]
        for gen, x in items:
            label = f"{name}[{str(gen)[:40]}]" if per_generation else name
            if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or x < 0 or x > 1e6:
                shown = repr(x) if isinstance(x, (int, float)) else repr(str(x)[:60])
                raise ValueError(f"{where}: {label}={shown} is not allowed: a finite number from 0 to 1e6")
            if name in SHARES and not 0 < x <= 1:
                raise ValueError(f"{where}: {label}={x!r} is not allowed: a share in (0, 1]")
            low, high, why = RANGES[name]
            if not low <= x <= high:
                raise ValueError(f"{where}: {label}={x:g} is not allowed: must be from {low:g} to {high:g} "
                                 f"({CONSTANTS[name][0]}): {why}")
        if per_generation:
            limit = MAX_TEXT_CHARS["fallback_generation"]
            merged[name] = MappingProxyType({_text(where, f"{name} generation", k, limit): float(x)
                                             for k, x in v.items()})
        elif name == "gemm_efficiency":  # always read per generation: one value serves them all
            merged[name] = MappingProxyType({merged["fallback_generation"]: float(v)})
    for name in ("fitted", "fitted_on", "assumed"):
        merged[name] = _names(where, name, merged.get(name))
    for switch in SOURCE_SWITCHES:
        allowed = {"moe_source": MOE_SOURCES, "moe_layer_source": MOE_LAYER_SOURCES,
                   "elementwise_source": ELEMENTWISE_SOURCES}.get(switch, GEMM_SOURCES)
        if merged[switch] not in allowed:
            raise ValueError(f"{where}: {switch}={str(merged[switch])[:40]!r} is not allowed: one of "
                             f"{', '.join(allowed)}")
    return Calibration(**merged)


def read_text(path) -> str:
    """A calibration file's text: a regular file (never a device or FIFO) of at most :data:`MAX_FILE_BYTES`."""
    p = Path(path).expanduser()
    try:
        return checks.read_file("calibration file", p, MAX_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"calibration file {str(path)[:200]!r} cannot be read "
                         f"({getattr(e, 'strerror', None) or 'not UTF-8 text'})") from None


def load(path) -> Calibration:
    """A calibration file written by ``aisize calibrate`` (or :meth:`Calibration.save`)."""
    return from_json(read_text(path), where=f"calibration file {Path(path).name[:100]!r}")


CALIBRATION = Calibration(
    name="aisize-2026-11",
    source="fitted jointly on the public sets data/validation/serving_throughput.csv (118 TensorRT-LLM "
           "max-throughput runs), serving_load.csv (82 closed-loop InferenceX and GPUStack runs) and "
           "serving_disagg.csv (77 disaggregated deployments) by benchmarks/fit_serving.py; the 34 MTP runs "
           "of serving_specdec.csv are scored, not fitted on (they state no acceptance); the three Hopper "
           "constants refitted on the Hopper runs alone after seven of them were corrected to the EP 8 their "
           "scripts ran (data/validation/README.md); Blackwell's HBM share and MoE-layer time refitted on the "
           "latest engine build of each recipe (the earlier builds are scored, not fitted on); sourced and "
           "assumed values as in the module docstring",
    gemm_efficiency=MappingProxyType({"hopper": 0.69345, "blackwell": 0.7752, "cdna4": 0.6386}),
    fallback_generation="hopper",
    attention_efficiency=0.6,
    memory_efficiency=MappingProxyType({"hopper": 0.8269, "blackwell": 0.5638, "cdna4": 0.5747}),
    expert_memory_efficiency=0.681,
    link_efficiency=DEFAULT_EFFICIENCY,
    expert_gemm_efficiency=0.2822,
    gemm_tile_tokens=128,
    elementwise_bytes_per_token=121.3,
    expert_bytes_per_token=19.82,
    layer_seconds=4.845e-05,
    moe_layer_seconds=MappingProxyType({"hopper": 6.279e-05, "blackwell": 3.102e-05, "cdna4": 6.518e-05}),
    collective_seconds=1e-05,
    eager_layer_seconds=0.00012,
    draft_step_seconds=1.5e-4,
    host_seconds_per_sequence=2.552e-05,
    grace_host_factor=1.794,
    request_seconds=0.1486,
    # a one-GPU replica's FP8/BF16 routed experts never above the engine's measured MoE operator (aisize.serving.
    # moe_cap): no public row moves, cross-validation as before; NVIDIA's MLPerf Mixtral 8x7B results read 0.36-0.65x
    # without it (docs/calibration-mixtral-mlperf.md)
    # and TensorRT-LLM's NVFP4 experts on any split above 128 tokens never above its measured operator: every public
    # line holds or improves, held out +13/+12 tokens/s runs and +7/-3 TPOT (docs/calibration-nvfp4-prefill.md)
    moe_source="kernel_cap_split",
    fitted=("gemm_efficiency[blackwell]", "gemm_efficiency[hopper]", "memory_efficiency[blackwell]",
            "memory_efficiency[cdna4]", "memory_efficiency[hopper]", "expert_memory_efficiency",
            "expert_gemm_efficiency", "elementwise_bytes_per_token", "expert_bytes_per_token", "layer_seconds",
            "moe_layer_seconds[blackwell]", "moe_layer_seconds[cdna4]", "moe_layer_seconds[hopper]",
            "host_seconds_per_sequence", "grace_host_factor", "request_seconds"),
    fitted_on=("serving_throughput.csv", "serving_load.csv", "serving_disagg.csv"),
    assumed=("gemm_efficiency[cdna4]", "collective_seconds"),
    # SGLang's attention-DP exchange from NCCL's measured tables: cross-validated in sample 194/113 -> 196/114,
    # leaving one model out 145/85 -> 146/87, one GPU out 173/103 -> 173/104 (docs/calibration.md, "SGLang's
    # attention-DP decode")
    gather_source="kernels",
)
