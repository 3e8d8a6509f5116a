"""Planner errors in the user's terms: which workload, which of its fields, what to change.

A scenario that validates can still ask for more than the formulas accept: a week of
training on a quadrillion tokens needs billions of GPUs, and the check that stops it
(``ranks=4597738944.0 is not allowed: must be a finite number in [1, 1e+07]``) names an
internal parameter the user never wrote. :func:`planning_error` turns such a ValueError,
or an overflow, into one that names the workload (``workloads.0 ('LoRA fine-tune 70B')``),
says what it would need in plain words, and lists the scenario fields that drive it. The
culprit is found by planning each workload alone; when each plans alone, their sum (the
shared fabric or storage) is at fault.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from aisize.catalog import CatalogError
from aisize.checks import CountError

# "<name>=<value> is not allowed[ for ...]: <reason>", as aisize.checks and the planner word it
_CHECK = re.compile(r"^(?P<name>\w+)=(?P<value>.+?) is not allowed(?P<context> for [^:]*)?: (?P<reason>.*)$", re.S)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)", re.I)

# What an internal figure means to the user; {v} is its value.
MEANING = {
    "ranks": "needs {v} GPUs, more than aisize plans (10,000,000)",
    "gpus": "needs {v} GPUs, more than aisize plans",
    "servers": "needs {v} servers, more than aisize plans (1,000,000)",
    "replicas": "needs {v} model replicas, more than aisize plans (1,000,000)",
    "endpoints": "needs {v} network ports, more than a three-tier fat tree holds ({reason}): choose a larger "
                 "hardware.switch_radix or a lower hardware.oversubscription, or fewer GPUs",
    "flops": "needs {v} floating-point operations, more than aisize plans (1e30)",
    "seconds": "would take {v} seconds, more than aisize plans",
    "seconds_at_expected_mfu": "would take {v} seconds, more than aisize plans",
    "tp": "needs a tensor-parallel degree of {v}, more than aisize plans",
}

# The fields a user can change, per workload kind.
DRIVERS = {
    "training": "tokens_billion (or dataset and epochs), target_days or gpus, seq_len, global_batch, "
                "and policies.mfu",
    "inference": "requests_per_s, prompt_tokens, output_tokens, ttft_target_ms, tpot_target_ms, "
                 "tensor_parallel and model_loads_per_hour",
    "data-prep": "read_gb_per_s, write_gb_per_s, io_size_kib, metadata_ops_per_s and capacity_tb",
}
TOGETHER = ("the workloads together exceed the shared fabric or storage: check hardware.switch_radix, "
            "hardware.oversubscription, hardware.storage, policies.storage_usable_ratio, or the workloads' "
            "GPU counts and IO rates")


def _shown(value: str) -> str:
    value = re.sub(r"^np\.\w+\((.*)\)$", r"\1", value.strip())  # np.float64(69934.0) -> 69934.0
    found = _NUMBER.search(value)
    if not found:
        return value
    number = float(found.group(0))
    if not math.isfinite(number):
        return "infinitely many" if number > 0 else found.group(0)
    return f"{number:,.0f}" if abs(number) < 1e15 and number == round(number) else f"{number:.3g}"


def _user_fields(workload) -> set[str]:
    from aisize.scenario import model

    return set(type(workload).model_fields) | set(model.Policies.model_fields) | set(model.Hardware.model_fields)


def _what(text: str, workload) -> tuple[str, bool]:
    """The error's text in the user's terms, and whether it was translated (so needs a hint)."""
    match = _CHECK.match(text.strip())
    if not match:
        return text.strip(), False
    name, value = match["name"], match["value"]
    if name in MEANING:  # an internal figure, even where a field has the same name (hardware.servers)
        reason = match["reason"].removeprefix("more than a three-tier fat tree of ").strip()
        return MEANING[name].format(v=_shown(value), reason=reason), True
    if workload is not None and name in _user_fields(workload):
        return text.strip(), False  # already in the user's terms
    return f"an intermediate figure is out of range ({_shown(value)}: {match['reason']})", True


def _culprit(scenario, plan_one: Callable) -> tuple[int, object] | None:
    """(index, workload) of the first workload that fails when planned alone, else None."""
    for index, workload in enumerate(scenario.workloads):
        try:
            plan_one(scenario.model_copy(update={"workloads": [workload]}))
        except (ValueError, ArithmeticError):
            return index, workload
    return None


def planning_error(error: Exception, scenario, plan_one: Callable) -> ValueError:
    """A ValueError naming the workload and its fields for ``error`` raised while planning ``scenario``.

    ``plan_one`` plans a scenario (the untranslated planner), used to find the failing workload.
    """
    if isinstance(error, CatalogError):  # a catalog row (an overlay's, a scenario's own) names itself, not a workload
        return error
    text = str(error) if isinstance(error, ValueError) else f"the figures overflow ({type(error).__name__}: {error})"
    culprit = _culprit(scenario, plan_one) if len(scenario.workloads) > 1 else (0, scenario.workloads[0])
    if culprit is None:
        return ValueError(f"{TOGETHER}: {_what(text, None)[0]}")
    index, workload = culprit
    what, translated = _what(text, workload)
    translated = translated or isinstance(error, CountError)  # "needs N replicas, more than aisize plans": a hint
    drivers = DRIVERS.get(workload.kind, ", ".join(f for f in type(workload).model_fields if f not in ("kind", "name")))
    if workload.kind == "inference" and scenario.policies.serving_calibration is not None:
        drivers += ", and policies.serving_calibration"
    hint = f"; check its {drivers}" if translated and "hardware." not in what else ""
    return ValueError(f"workloads.{index} ({workload.name!r}): {what}{hint}")
