"""The plan's assumptions in words: each policy and named default with its label, unit and why it matters.

One wording for every surface: the report's Assumptions tables, the CLI's summary, the app's Summary tab and
the plan's findings (JSON) all read :func:`assumption_sentences` or :func:`assumption_rows`, never
``host.os_and_application_bytes = 34,359,738,368``. It lives in the planner so the findings may use it.
"""

from __future__ import annotations

from aisize import format as F
from aisize import serving
from aisize.scenario import Scenario
from aisize.training import efficiency_constants
from aisize.training.calibration import CALIBRATION as TRAINING_CALIBRATION
from aisize.units import GiB, MiB

# label, unit (how the value is shown), why it matters; keys missing here are shown by name.
POLICY_TEXT: dict[str, tuple[str, str, str]] = {
    "mfu": ("Model FLOPs utilisation (MFU)", "%",
            "Share of peak dense FLOP/s a training step achieves; large runs land at 35-50 %."),
    "training_time": ("Training time from", "", "step-time: the step-time model at the chosen layout (validated on published runs); mfu: the MFU policy instead, an override."),
    "target_gpu_utilisation": ("Target GPU utilisation", "%",
                               "Storage keeps GPUs busy this share of the time (MLPerf Storage's bar)."),
    "checkpoint_interval_minutes": ("Checkpoint interval", "min",
                                    "auto: Young/Daly, sqrt(2 x MTBF x checkpoint write time)."),
    "checkpoint_retention": ("Checkpoints retained", "", "Checkpoints kept per training job."),
    "checkpoint_bytes_per_param": ("Checkpoint size per parameter", "B",
                                   "bf16 weights + fp32 master, momentum and variance."),
    "node_mtbf_hours": ("Node MTBF", "h", "Per server; the cluster's MTBF is this ÷ servers."),
    "failure_rates": ("Failure rates", "", "node-mtbf, or a published fleet's interruptions per GPU-hour and "
                      "per server-hour (data/failure_rates.csv)."),
    "restart_minutes": ("Restart time", "min", "Restart after a failure, before the checkpoint is read."),
    "memory_headroom": ("GPU memory headroom", "%", "Kept free for framework, fragmentation, CUDA context."),
    "host_ram_ratio": ("Host RAM / GPU memory", "×", "Host RAM per server ÷ its total GPU memory."),
    "storage_usable_ratio": ("Usable / raw storage", "%", "Capacity left after data protection."),
    "storage_headroom": ("Storage headroom", "%", "Share of each storage rating left free at the peak demand: "
                         "flash file systems slow as they fill, and bursts need room."),
    "storage_minimum_units": ("Storage units at least", "", "Bought even when the plan asks nothing of "
                              "the storage: one holds the model repository and datasets."),
    "serving_calibration": ("Serving calibration", "", "The serving model's achieved shares of peak and fixed "
                            "costs (listed below); aisize calibrate fits them on your own benchmark runs."),
    "switch_radix": ("Switch radix", "ports", "Ports per fabric switch."),
    "oversubscription": ("Fabric oversubscription", ":1",
                         "Leaf downlink ÷ uplink bandwidth; 1:1 is non-blocking."),
}

# The planner's and engine's named defaults (aisize.plan.findings.assumptions_used keys).
DEFAULT_TEXT: dict[str, tuple[str, str, str]] = {
    "plan.rack_units": ("Rack height", "U", "Servers per rack are limited by rack height and power."),
    "plan.rack_power_watts": ("Rack power budget", "kW", "Air-cooled rack; a rack-scale system is one rack."),
    "plan.checkpoint_max_stall": ("Checkpoint stall allowed", "%",
                                  "Blocking checkpoint writes may take at most this share of training."),
    "plan.tokens_per_step": ("Default global batch", "tokens", "Llama 2 trained with 4M tokens per step."),
    "plan.pretraining_tokens": ("Pre-training threshold", "tokens",
                                "Full training on this many tokens or more gets the Chinchilla note."),
    "plan.unknown_write_share": ("Write rate when unpublished", "%",
                                 "Share of the read rate assumed for storage rated for reads only."),
    "plan.storage_latency_seconds": ("Unloaded storage latency", "ms",
                                     "Where the storage row publishes none: the median lowest latency of six published "
                                     "all-flash file systems (SPECstorage Solution 2020, docs/storage.md), typical of "
                                     "them, not of the system bought."),
    "plan.model_load_seconds": ("Model load time", "s", "An inference fleet reloads its weights this fast."),
    "plan.inference_service_cv": ("Request-time variability (CV)", "",
                                  "Fixed prompt and output lengths: request time is deterministic."),
    "plan.knee_factor": ("Latency knee", "×", "Load at which mean latency reaches this multiple of unloaded."),
    "plan.knee_elasticity": ("Past the knee", "× load rise", "A service is past its latency knee where a small "
                             "rise in load raises its latency by this multiple of that rise or more (at the planned "
                             "load)."),
    "plan.overprovision_factor": ("Over-provisioning threshold", "×",
                                  "More than this multiple of the need is reported."),
    "plan.mfu_gap_factor": ("MFU gap reported", "×", "Predicted vs assumed MFU apart by more is reported."),
    "plan.goodput_warning": ("Goodput warning", "%", "Lower goodput is reported (Llama 3 reports > 90 %)."),
    "plan.link_warning_utilisation": ("Busy-link warning", "%", "A data link busier than this is reported."),
    "plan.read_io_bytes": ("Training read IO size", "MiB", "Record-format (TFRecord-like) training reads."),
    "plan.default_seq_len": ("Default sequence length", "tokens", "Capped at the model's context length."),
    "plan.inference_fallback_utilisation": ("Replica load if no shape meets the SLOs", "%",
                                            "Sizes such a service at this share of capacity."),
    "plan.ongoing_display_days": ("Open-ended phase drawn", "days",
                                  "A last phase without an end (a service) is drawn this long on the timeline."),
    "training.dp_overlap": ("Gradient reduction overlap", "%",
                            "Share of the compute the data-parallel traffic hides under."),
    "training.async_tp_hidden_share": ("Async TP overlap", "%",
                                       "Share of tensor-parallel traffic async TP hides behind the GEMMs."),
    "host.os_and_application_bytes": ("OS and application RAM", "GiB", "Per server: kernel, drivers, framework."),
    "host.loader_workers_per_gpu": ("Data-loader workers per GPU", "", "Each holds prefetched batches in RAM."),
    "network.link_efficiency": ("Link efficiency", "%", "Share of link bandwidth collectives achieve."),
}

def _training_text(name: str, source: str) -> tuple[str, str, str]:
    """Label, unit and origin of one of aisize.training.efficiency_constants()."""
    base, _, key = name.partition("[")  # a mapped constant's unit is its base name's ("X[hopper, fa3]" -> X)
    unit = {"FLASH_TILE_TOKENS": "tokens", "ATTENTION_HALF_TOKENS": "tokens", "STEP_TIME_CV": "",
            "BACKWARD_BYTES_RATIO": "×", "ATTENTION_BACKWARD_RATIO": "×"}.get(base, "%")
    if key:  # "GEMM_EFFICIENCY[hopper, 16-bit]" -> "Matmul efficiency, Hopper 16-bit (training)"
        words = [w.strip() for w in key.rstrip("]").split(",")]
        name = base
    label = (name.replace("GEMM_EFFICIENCY", "Matmul efficiency").replace("ATTENTION_EFFICIENCY", "Attention efficiency")
             .replace("HBM_EFFICIENCY", "Memory-bound kernel efficiency").replace("FLASH_TILE_TOKENS", "Attention tile")
             .replace("ATTENTION_HALF_TOKENS", "Attention length at half efficiency")
             .replace("STEP_TIME_CV", "Step-time jitter (CV)").replace("BACKWARD_BYTES_RATIO", "Backward / forward bytes")
             .replace("ATTENTION_BACKWARD_RATIO", "Attention backward / forward FLOPs"))
    if key:
        label += ", " + " ".join(w.upper() if w.startswith("fa") else w.capitalize() for w in words)
    return f"{label} (training)", unit, source


DEFAULT_TEXT |= {f"training.{c['name']}": _training_text(c["name"], c["source"]) for c in efficiency_constants()}

_SERVING_LABEL = {"gemm_efficiency": "GEMM efficiency", "attention_efficiency": "Attention efficiency",
                  "memory_efficiency": "HBM efficiency", "expert_memory_efficiency": "HBM efficiency, expert reads",
                  "link_efficiency": "Link efficiency", "expert_gemm_efficiency": "MoE grouped-GEMM efficiency",
                  "gemm_tile_tokens": "GEMM tile", "elementwise_bytes_per_token": "Elementwise traffic",
                  "expert_bytes_per_token": "MoE routing traffic", "layer_seconds": "Fixed time per layer",
                  "moe_layer_seconds": "Fixed time per MoE layer", "collective_seconds": "Collective latency",
                  "eager_layer_seconds": "Launch time per layer (eager)", "draft_step_seconds": "Draft pass fixed time",
                  "host_seconds_per_sequence": "Host time per sequence", "grace_host_factor": "Grace host factor",
                  "request_seconds": "Fixed time per request"}
_SERVING_UNIT = {"share": "%", "s": "ms", "x": "×", "tokens": "tokens"}


def _serving_text(row: dict) -> tuple[str, str, str]:
    """Label, unit and why of one serving calibration constant (a row of ``Calibration.as_table()``)."""
    base, _, generation = row["constant"].partition("[")
    label = _SERVING_LABEL.get(base, base.replace("_", " ").capitalize())
    generation = generation.rstrip("]")
    generation = {"cdna3": "CDNA 3", "cdna4": "CDNA 4"}.get(generation, generation.capitalize())
    label = f"{label}, {generation} (serving)" if generation else f"{label} (serving)"
    unit = _SERVING_UNIT.get(row["unit"], "")
    why = f"{row['meaning'][0].upper()}{row['meaning'][1:]}" + ("" if unit else f" [{row['unit']}]")
    return label, unit, f"{why} ({row['origin']})."


DEFAULT_TEXT |= {f"serving.{r['constant']}": _serving_text(r) for r in serving.CALIBRATION.as_table()}


def calibration_label(policies) -> str:
    """The serving calibration a scenario's policies select, as the report names it."""
    chosen = policies.serving_calibration
    if chosen is None:
        return f"{serving.CALIBRATION.name} (aisize's default)"
    return f"{chosen.calibration.name} (file {chosen.file[:80]})"

_SCALE = {"kW": 1e-3, "ms": 1e3, "MiB": 1 / MiB, "GiB": 1 / GiB}


def _show(value, unit: str) -> str:
    if isinstance(value, str) or unit in (":1", "×"):
        return f"{value}" if isinstance(value, str) else f"{value:g}{unit}"
    if unit == "%":
        return f"{value * 100:g} %"
    if unit == "tokens":
        return f"{F.large(value, 3)} tokens" if value >= 1e6 else f"{value:,g} tokens"
    return f"{value * _SCALE.get(unit, 1):,g} {unit}".strip()


# Assumptions only one kind of workload reads: a plan with none of that kind marks them unused, rather than
# list "Model FLOPs utilisation (MFU): 40 %" for a plan with no training job as if a figure rested on it.
TRAINING_ONLY = {"policies.mfu", "policies.checkpoint_interval_minutes", "policies.checkpoint_retention",
                 "policies.checkpoint_bytes_per_param", "policies.restart_minutes", "plan.checkpoint_max_stall",
                 "plan.tokens_per_step", "plan.pretraining_tokens", "plan.mfu_gap_factor", "plan.goodput_warning",
                 "plan.read_io_bytes", "plan.default_seq_len"}
SERVING_ONLY = {"policies.serving_calibration", "plan.model_load_seconds", "plan.inference_service_cv",
                "plan.knee_elasticity", "plan.inference_fallback_utilisation"}


def unused_reason(key: str, scenario: Scenario, plan=None) -> str:
    """Why no workload of the plan reads assumption ``key`` ("" when one does): the kinds of its workloads,
    and, given the plan, whether any training job's time rests on the MFU policy (a transformer's full training
    is timed by the step-time model; plan.training's throughput_rule)."""
    kinds = {w.kind for w in scenario.workloads}
    if (key in TRAINING_ONLY or key.startswith("training.")) and "training" not in kinds:
        return "unused: the plan has no training job"
    if (key in SERVING_ONLY or key.startswith("serving.")) and "inference" not in kinds:
        return "unused: the plan has no inference service"
    if key == "policies.mfu" and plan is not None and plan.training and not any(
            t.throughput_rule == "policy-mfu" for t in plan.training):
        return "unused: every training job is timed by the step-time model or a measured rate"
    return ""


def _origin(key: str) -> str:
    module = key.rsplit(".", 1)[0]
    return "planner default" if module == "plan" else f"engine default ({module})"


def assumption_rows(scenario: Scenario, assumptions: dict | None = None, plan=None) -> tuple[list[list], list[list]]:
    """(policy rows, default rows), each row [label, value with its unit, set by, why it matters]: every
    policy (set by the scenario or defaulted), then every planner and engine default from ``assumptions``
    (the plan's list; computed from the policies if None). One no workload reads says so first in its why
    (:func:`unused_reason`; ``plan``, where given, tells whether the MFU policy times a job)."""
    from aisize.plan.findings import assumptions_used

    assumptions = assumptions if assumptions is not None else assumptions_used(scenario.policies)
    policies = []
    for model, names in ((scenario.policies, type(scenario.policies).model_fields),
                         (scenario.hardware, ("switch_radix", "oversubscription"))):
        for name in names:
            label, unit, why = POLICY_TEXT.get(name, (name.replace("_", " ").capitalize(), "", ""))
            # a value other than the default is the scenario's (a saved scenario writes every field, so whether
            # a field was written says nothing: a plan of the saved file must read as the plan did)
            default = type(model).model_fields[name].get_default(call_default_factory=True)
            origin = "scenario" if getattr(model, name) != default else "default"
            value = calibration_label(model) if name == "serving_calibration" else getattr(model, name)
            policies.append([label, _show(value, unit), origin, _why(f"policies.{name}", why, scenario, plan)])
    chosen = scenario.policies.serving_calibration  # its constants are the scenario's, labelled from its table
    texts = DEFAULT_TEXT | ({f"serving.{r['constant']}": _serving_text(r) for r in chosen.calibration.as_table()}
                            if chosen else {})
    defaults = []
    for key, value in assumptions.items():
        if key.startswith("policies."):
            continue  # shown above, with who set it
        label, unit, why = texts.get(key, (key, "", ""))
        origin = _origin(key)
        if key.startswith("serving."):  # a fitted file holds full-precision floats: four figures are shown
            value = float(f"{value:.4g}")
            origin = f"scenario ({chosen.calibration.name[:80]})" if chosen else origin
        elif key.startswith("training.") and chosen and chosen.training.name != TRAINING_CALIBRATION.name:
            origin = f"scenario ({chosen.training.name[:80]})"  # the calibration file's training section
        defaults.append([label, _show(value, unit), origin, _why(key, why, scenario, plan)])
    return policies, defaults


def _why(key: str, why: str, scenario: Scenario, plan) -> str:
    unused = unused_reason(key, scenario, plan)
    return f"{unused[0].upper()}{unused[1:]}. {why}".strip() if unused else why


def assumption_sentences(scenario: Scenario, assumptions: dict | None = None, plan=None) -> list[str]:
    """Every assumption as a line a reader can take in: "OS and application RAM: 32 GiB. Per server:
    kernel, drivers, framework." (not ``host.os_and_application_bytes = 34,359,738,368``); one the
    scenario sets says so, one no workload reads says that ("Unused: the plan has no training job.")."""
    policies, defaults = assumption_rows(scenario, assumptions, plan)
    out = []
    for label, value, origin, why in policies + defaults:
        text = f"{label}: {value}." if value else f"{label}."
        why = why.strip()
        if why:
            text += f" {why}" + ("" if why.endswith((".", ")")) else ".")
        if origin.startswith("scenario"):
            text += " (Set by the scenario.)"
        out.append(text)
    return out
