"""Calibration of the training step model: the fitted and assumed shares, times and ratios it needs.

The step model (:mod:`aisize.training.step_time`) times GEMMs, attention and memory-bound work on the
catalog's peaks and bandwidths, times the shares of them real kernels reach, plus the few costs no
kernel table measures (the MoE dispatcher's host wait, overlap, jitter). Those numbers are the only
calibrated ones in training; one :class:`TrainingCalibration` holds them all, each with its unit,
meaning, origin (fitted, sourced or assumed) and source. :data:`CALIBRATION` is the shipped one;
:func:`aisize.training.setup.engine` carries the one an estimate uses (``calibration=``), and every
path of the step (scalar and vectorized) reads it from there. Byte counts of an op
(:mod:`aisize.training.work`) and framework settings (bucket sizes) are definitions, not calibration.

Fitted jointly on ``reference/training_torchtitan.csv`` and ``reference/training_megatron.csv``
(:func:`aisize.calibrate.training.refit`, ``benchmarks/fit_training.py``). A file holds this as the
``training`` section of an :class:`aisize.calibration.Calibration` (docs/training-calibration.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType

from aisize import checks

GENERATIONS = ("volta", "ampere", "hopper", "blackwell")
DISPATCHERS = ("alltoall", "flex")

_FIT = "fitted jointly on reference/training_torchtitan.csv and training_megatron.csv (benchmarks/fit_training.py)"
# name -> (unit, meaning, source); the order is the table's. Mapped constants are keyed "<a>:<b>".
CONSTANTS = {
    "gemm_efficiency": ("share", "share of the dense peak large GEMMs reach, by '<generation>:<bits>' (16, 8, 4)",
                        _FIT + "; Volta = Ampere, Blackwell 16-bit at Hopper's 16/8-bit ratio and fp4 = fp8 assumed"),
    "attention_efficiency": ("share", "share of the 16-bit peak FlashAttention's matmuls reach on long sequences, "
                                      "by '<generation>:<kernel>' (fa2, fa3)",
                             "fa2 fitted on training_torchtitan.csv, fa3 on training_megatron.csv; Volta = Ampere "
                             "assumed; scale: FlashAttention-2/3 (arXiv:2307.08691, arXiv:2407.08608)"),
    "attention_half_tokens": ("tokens", "causal sequence length at which attention runs at half its long-sequence "
                                        "efficiency: share s / (s + this), by '<generation>:<kernel>'",
                              "measured: a·s/(s + b) fitted to vLLM's context-attention tables (data/kernels, "
                              "32 heads of 128, 2k-16k tokens; docs/training-cv.md): A100 1,040, H100 1,760, "
                              "B200 3,808; Volta = Ampere and FA2 = FA3 on a generation assumed"),
    "hbm_efficiency": ("share", "share of HBM bandwidth memory-bound kernels sustain, launch gaps included",
                       _FIT + " within [0.55, 0.95]: the fit sits at the lower bound"),
    "step_time_cv": ("ratio", "coefficient of variation of one rank's step: slowest of n is 1 + cv sqrt(2 ln n)",
                     "fitted on the torchtitan Llama 3.1 8B rows on 8 vs 128 GPUs (Gumbel 1958 for the maximum)"),
    "backward_bytes_ratio": ("x", "bytes an elementwise backward moves over its forward's",
                             "assumption: backward reads input and gradient, writes gradient"),
    "attention_backward_ratio": ("x", "FlashAttention backward FLOPs over forward FLOPs",
                                 "5 matmuls vs 2, the convention of its benchmarks (arXiv:2307.08691)"),
    "grouped_gemm_half_tokens": ("tokens", "tokens per expert at which a grouped GEMM reaches half the dense "
                                           "GEMM efficiency", _FIT + "; only MoE rows depend on it"),
    "moe_sync_host_seconds": ("s", "host time the GPU waits after the MoE dispatcher's device-to-host sync, per "
                                   "MoE layer forward, by dispatcher (alltoall, flex; alltoall with one "
                                   "expert per rank waits as flex)",
                              _FIT + "; only MoE rows depend on it"),
    "cuda_graph_host_share": ("share", "share of that host wait left under CUDA graphs",
                              _FIT + ": 1.0 (graphed launches run before the sync, where the host is ahead)"),
    "dp_overlap": ("share", "share of the backward pass data-parallel traffic hides under (DDP buckets, FSDP "
                            "prefetch and reduce-scatter streams)", "assumption"),
    "async_tp_hidden_share": ("share", "share of the TP collectives async TP hides behind the GEMMs",
                              "implied by torchtitan's async-TP benchmark (Llama 3 70B, 256 H100, TP 8: 1.09x "
                              "bf16, 1.16x float8)"),
    "allocator_fragmentation_share": ("share", "PyTorch caching allocator's reserved minus allocated bytes over "
                                               "the short-lived bytes, by code (eager, compiled)",
                                      "fitted on the torchtitan reserved-memory peaks (training_torchtitan.csv)"),
}
# Allowed keys of the mapped constants (what aisize.training.efficiency.generation and the step can ask for).
KEYS = {
    "gemm_efficiency": ("volta:16", "ampere:16", "hopper:16", "hopper:8", "blackwell:16", "blackwell:8",
                        "blackwell:4"),
    "attention_efficiency": ("volta:fa2", "ampere:fa2", "hopper:fa2", "hopper:fa3", "blackwell:fa3"),
    "attention_half_tokens": ("volta:fa2", "ampere:fa2", "hopper:fa2", "hopper:fa3", "blackwell:fa3"),
    "moe_sync_host_seconds": DISPATCHERS,
    "allocator_fragmentation_share": ("eager", "compiled"),
}
# Physical range of each constant, (low, high, why): a value outside is no GPU's or framework's.
_SHARE = "a share of a peak or of a time: above 0 (0 would make the step infinite), at most 1"
RANGES = {
    "gemm_efficiency": (0.05, 1.0, _SHARE + "; the fit searches 0.2 to 1"),
    "attention_efficiency": (0.05, 1.0, _SHARE + "; the fit searches 0.05 to 1"),
    "attention_half_tokens": (0.0, 32768.0, "the measured kernels reach half speed at 1,000 to 5,000 tokens; a "
                                            "kernel at half speed beyond 32k would not be a long-sequence kernel"),
    "hbm_efficiency": (0.05, 1.0, _SHARE + "; the fit searches 0.55 to 0.95"),
    "step_time_cv": (0.0, 0.5, "a rank whose step varies by half its mean is broken, not jittery (fitted 0.031)"),
    "backward_bytes_ratio": (1.0, 4.0, "a backward reads at least what its forward wrote, and a few passes more"),
    "attention_backward_ratio": (1.0, 5.0, "FlashAttention's backward runs 2.5x the forward's FLOPs; 5x is "
                                           "every score recomputed twice"),
    "grouped_gemm_half_tokens": (0.0, 1e5, "the fit searches 1 to 100,000 tokens per expert (fitted 601)"),
    "moe_sync_host_seconds": (0.0, 0.1, "100 ms of host time per MoE layer is 18x the fitted all-to-all wait"),
    "cuda_graph_host_share": (0.0, 1.0, "a share of a time"),
    "dp_overlap": (0.0, 1.0, "a share of a time"),
    "async_tp_hidden_share": (0.0, 1.0, "a share of a time"),
    "allocator_fragmentation_share": (0.0, 1.0, "the allocator strands less than the bytes it serves "
                                                "(fitted 4 to 7 %)"),
}
MAX_TEXT_CHARS = {"name": 200, "source": 2000}
MAX_LIST_ITEMS = 200


@dataclass(frozen=True)
class TrainingCalibration:
    """Achieved shares of peak, times and ratios of the training step [share, s, tokens, x].

    See :data:`CONSTANTS` for each attribute's unit, meaning and source; mapped constants are
    read-only mappings keyed as :data:`KEYS` says.
    """

    name: str
    source: str
    gemm_efficiency: MappingProxyType
    attention_efficiency: MappingProxyType
    attention_half_tokens: MappingProxyType
    hbm_efficiency: float
    step_time_cv: float
    backward_bytes_ratio: float
    attention_backward_ratio: float
    grouped_gemm_half_tokens: float
    moe_sync_host_seconds: MappingProxyType
    cuda_graph_host_share: float
    dp_overlap: float
    async_tp_hidden_share: float
    allocator_fragmentation_share: MappingProxyType
    fitted: tuple = field(default=())  # constants fitted ("gemm_efficiency[hopper:16]" for one key)
    fitted_on: tuple = field(default=())
    assumed: tuple = field(default=())  # values no public run identifies

    def __hash__(self):  # mappings are read-only views: hash their items (engines and plans are cached by input)
        return hash(tuple(tuple(sorted(v.items())) if isinstance(v, MappingProxyType) else v
                          for v in (getattr(self, f.name) for f in fields(self))))

    def with_(self, **changes) -> "TrainingCalibration":
        """A copy with some values changed; a mapping given in part keeps the other keys' values."""
        for name, value in changes.items():
            if isinstance(value, dict):
                changes[name] = MappingProxyType({**getattr(self, name), **value})
        return replace(self, **changes)

    def origin(self, key: str) -> str:
        """'fitted', 'assumed' or 'sourced' for a constant or one key of it ("gemm_efficiency[hopper:16]")."""
        base = key.split("[")[0]
        if key in self.fitted or base in self.fitted:
            return "fitted"
        return "assumed" if key in self.assumed or base in self.assumed else "sourced"

    def as_table(self) -> list[dict]:
        """Every constant with its value, unit, origin, meaning and source (for the user)."""
        rows = []
        for name, (unit, meaning, source) in CONSTANTS.items():
            value = getattr(self, name)
            items = [(f"{name}[{k}]", v) for k, v in value.items()] if isinstance(value, MappingProxyType) \
                else [(name, value)]
            rows += [{"constant": key, "value": v, "unit": unit, "origin": self.origin(key), "meaning": meaning,
                      "source": source} for key, v in items]
        return rows

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update({k: dict(v) for k, v in d.items() if isinstance(v, MappingProxyType)})
        d["fitted"], d["fitted_on"], d["assumed"] = list(self.fitted), list(self.fitted_on), list(self.assumed)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


_text = checks.printable  # text of a calibration file: 1 to a limit of printable characters


def _number(where: str, label: str, name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x:
        shown = repr(x) if isinstance(x, (int, float)) else repr(str(x)[:60])
        raise ValueError(f"{where}: {label}={shown} is not allowed: a finite number")
    low, high, why = RANGES[name]
    if not low <= x <= high or (CONSTANTS[name][0] == "share" and low > 0 and x <= 0):
        raise ValueError(f"{where}: {label}={x:g} is not allowed: must be from {low:g} to {high:g} "
                         f"({CONSTANTS[name][0]}): {why}")
    return float(x)


def from_dict(d, *, where: str = "training calibration") -> TrainingCalibration:
    """A :class:`TrainingCalibration` from a parsed ``training`` section, every value checked.

    Keys left out keep the shipped values (a mapping given in part keeps its other keys); an unknown key,
    a value that is not a finite number in its range (:data:`RANGES`) and over-long or non-printable text
    are refused with a message that starts with ``where`` and names the constant, the value and the range.
    """
    if not isinstance(d, dict):
        raise ValueError(f"{where} must hold a JSON object of training calibration constants")
    if "flash_tile_tokens" in d:  # files written before 2026-12: their efficiencies were fitted on that curve
        raise ValueError(f"{where}: flash_tile_tokens is no longer read: attention_half_tokens (measured per "
                         "generation, docs/training-cv.md) replaced it, and efficiencies fitted with the 128-token "
                         "tile do not hold on the new curve; refit (benchmarks/fit_training.py --save) or remove it")
    base = {f.name: getattr(CALIBRATION, f.name) for f in fields(CALIBRATION)}
    merged = checks.merged(d, base, where)
    for name, limit in MAX_TEXT_CHARS.items():
        merged[name] = _text(where, name, merged[name], limit)
    for name in CONSTANTS:
        v = merged[name]
        if name in KEYS:
            if not isinstance(v, (dict, MappingProxyType)):
                raise ValueError(f"{where}: {name} must map keys ({', '.join(KEYS[name])}) to values")
            bad = [str(k)[:40] for k in v if k not in KEYS[name]]
            if bad:
                raise ValueError(f"{where}: {name}[{bad[0]!r}] is not allowed: keys are {', '.join(KEYS[name])}")
            given = {k: _number(where, f"{name}[{k}]", name, x) for k, x in v.items()}
            merged[name] = MappingProxyType({k: given.get(k, base[name][k]) for k in KEYS[name]})
        else:
            merged[name] = _number(where, name, name, v)
    for name in ("fitted", "fitted_on", "assumed"):
        value = merged.get(name) or ()
        if not isinstance(value, (list, tuple)) or len(value) > MAX_LIST_ITEMS:
            raise ValueError(f"{where}: {name} must be a list of at most {MAX_LIST_ITEMS} names")
        merged[name] = tuple(_text(where, name, x, MAX_TEXT_CHARS["name"]) for x in value)
    return TrainingCalibration(**merged)


def from_json(text: str, *, where: str = "training calibration") -> TrainingCalibration:
    """A :class:`TrainingCalibration` from :meth:`TrainingCalibration.to_json` text (see :func:`from_dict`)."""
    return from_dict(checks.json_value(text, where), where=where)


CALIBRATION = TrainingCalibration(
    name="aisize-training-2026-12",
    source="fitted jointly on reference/training_torchtitan.csv and reference/training_megatron.csv by "
           "benchmarks/fit_training.py; sourced and assumed values as each constant says",
    gemm_efficiency=MappingProxyType({"volta:16": 0.841, "ampere:16": 0.841, "hopper:16": 0.678, "hopper:8": 0.753,
                                      "blackwell:16": 0.725, "blackwell:8": 0.805, "blackwell:4": 0.805}),
    attention_efficiency=MappingProxyType({"volta:fa2": 0.652, "ampere:fa2": 0.652, "hopper:fa2": 0.272,
                                           "hopper:fa3": 0.638, "blackwell:fa3": 0.638}),
    attention_half_tokens=MappingProxyType({"volta:fa2": 1040.0, "ampere:fa2": 1040.0, "hopper:fa2": 1760.0,
                                            "hopper:fa3": 1760.0, "blackwell:fa3": 3808.0}),
    hbm_efficiency=0.55,
    step_time_cv=0.031,
    backward_bytes_ratio=2.0,
    attention_backward_ratio=2.5,
    grouped_gemm_half_tokens=601.0,
    moe_sync_host_seconds=MappingProxyType({"alltoall": 5.34e-3, "flex": 1e-5}),
    cuda_graph_host_share=1.0,
    dp_overlap=0.8,
    async_tp_hidden_share=0.5,
    allocator_fragmentation_share=MappingProxyType({"eager": 0.067, "compiled": 0.040}),
    fitted=("gemm_efficiency[ampere:16]", "gemm_efficiency[hopper:16]", "gemm_efficiency[hopper:8]",
            "gemm_efficiency[blackwell:8]", "attention_efficiency[ampere:fa2]", "attention_efficiency[hopper:fa2]",
            "attention_efficiency[hopper:fa3]", "attention_efficiency[blackwell:fa3]", "hbm_efficiency",
            "step_time_cv", "grouped_gemm_half_tokens", "moe_sync_host_seconds", "cuda_graph_host_share",
            "allocator_fragmentation_share"),
    fitted_on=("training_torchtitan.csv", "training_megatron.csv"),
    assumed=("gemm_efficiency[volta:16]", "gemm_efficiency[blackwell:16]", "gemm_efficiency[blackwell:4]",
             "attention_efficiency[volta:fa2]", "backward_bytes_ratio", "dp_overlap"),
)


def resolve(calibration) -> TrainingCalibration:
    """The training calibration an estimate uses: None (the shipped one), a :class:`TrainingCalibration`,
    an :class:`aisize.calibration.Calibration` (its training section) or the path of a calibration file."""
    if calibration is None:
        return CALIBRATION
    if isinstance(calibration, TrainingCalibration):
        return calibration
    from aisize import calibration as combined  # the combined file's reader imports this module

    if isinstance(calibration, combined.Calibration):
        return calibration.training
    if isinstance(calibration, (str, bytes)) or hasattr(calibration, "__fspath__"):
        return combined.load(calibration).training
    raise ValueError(f"calibration={str(calibration)[:60]!r} is not allowed: give None (the shipped one), a "
                     "TrainingCalibration, an aisize.calibration.Calibration or a calibration file's path")
