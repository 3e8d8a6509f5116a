"""What every training engine call needs from the accelerator, the links and the precision.

Shared by :func:`aisize.training.estimate` and :func:`aisize.training.search_layouts` so the
two cannot drift apart: the accelerator record, the per-GPU link rates (given, or the
catalog's), the precision recipe's peaks and the framework's bytes per parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import catalog, checks
from aisize.memory.states import per_param_bytes
from aisize.precision import peak_flops_per_s, training_precision
from aisize.training import comm
from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.calibration import TrainingCalibration
from aisize.training.efficiency import generation
from aisize.training.recipes import Recipe, recipe
from aisize.units import bidirectional_to_per_direction


def accelerator_record(accelerator):
    """A catalog ``Accelerator`` for an id, or the record itself."""
    if isinstance(accelerator, str):
        if accelerator not in catalog.accelerators:
            raise ValueError(f"accelerator={accelerator!r} is not allowed: not in the catalog "
                             f"({', '.join(catalog.accelerators.ids())})")
        return catalog.accelerators[accelerator]
    if not hasattr(accelerator, "bf16_flops_per_s"):
        raise ValueError(f"accelerator={accelerator!r} is not allowed: give a catalog id or an Accelerator record")
    return accelerator


def default_links(acc, *, scaleup_bytes_per_s=None, scaleout_bytes_per_s=None, scaleup_domain=None,
                  oversubscription=1.0, switch_radix=comm.DEFAULT_SWITCH_RADIX) -> comm.Links:
    """Link rates per GPU: given, else the accelerator's NVLink and the NICs of the catalog's first
    server with this GPU (NICs x link rate / GPUs)."""
    up = scaleup_bytes_per_s
    if up is None:
        if not acc.scaleup_bidirectional_bytes_per_s:
            raise ValueError(f"scaleup_bytes_per_s=None is not allowed: accelerator {acc.id!r} has no scale-up "
                             "link in the catalog; pass the rate")
        up = bidirectional_to_per_direction(acc.scaleup_bidirectional_bytes_per_s)
    out = scaleout_bytes_per_s
    if out is None:
        servers = [s for s in catalog.servers if s.accelerator == acc.id]
        if not servers:
            raise ValueError(f"scaleout_bytes_per_s=None is not allowed: no catalog server carries {acc.id!r}; "
                             "pass the network rate per GPU")
        s = servers[0]
        out = s.compute_nics * catalog.links[s.compute_nic_link].bandwidth_per_direction_bytes_per_s / s.gpus
    return comm.Links(checks.positive("scaleup_bytes_per_s", up), checks.positive("scaleout_bytes_per_s", out),
                      checks.integer("scaleup_domain", scaleup_domain or acc.scaleup_domain, high=10**5),
                      checks.integer("switch_radix", switch_radix, low=4, high=10**4),
                      checks.number("oversubscription", oversubscription, low=1.0, high=64.0))


def state_precision(r: Recipe, framework: str) -> str:
    """The :data:`aisize.precision.TRAINING_PRECISIONS` entry whose per-parameter bytes the states use.

    Transformer Engine (Megatron) caches the low-precision weights (+1 B/param); torchao
    (FSDP) casts them on the fly.
    """
    if r.low_dtype is None:
        return r.name
    return "fp8" if framework == "megatron" else r.high_dtype


GRAD_REDUCE_PRECISIONS = ("fp32", "bf16")
# Gradient reduction by default: torchtitan's FSDP2 reduces in fp32 (mixed_precision_reduce);
# Megatron-Core's DistributedDataParallelConfig.grad_reduce_in_fp32 defaults to False (bf16);
# DeepSpeed and the ZeRO paper reduce the 16-bit gradients.
DEFAULT_GRAD_REDUCE = {"fsdp": "fp32", "megatron": "bf16", "zero": "bf16", "deepspeed": "bf16"}


def host_link_bytes_per_s(acc) -> float | None:
    """GPU-host rate per direction [B/s]: the catalog's NVLink-C2C where it has one, else PCIe x16 of its
    generation; None without either."""
    if acc.host_link_bidirectional_bytes_per_s:
        return bidirectional_to_per_direction(acc.host_link_bidirectional_bytes_per_s)
    if acc.pcie_gen:
        link = catalog.links.get(f"pcie-gen{int(acc.pcie_gen)}-x16")
        if link is not None:
            return link.bandwidth_per_direction_bytes_per_s
    return None


@dataclass(frozen=True)
class Engine:
    """Peaks, bytes per parameter and link rates one layout's evaluation uses."""

    recipe: Recipe
    generation: str
    high_peak: float  # 16-bit dense peak [FLOP/s] (MFU is measured against it)
    low_peak: float  # peak of the low-precision GEMMs [FLOP/s]
    hbm_bytes_per_s: float
    unit: dict  # bytes per parameter of each state component (aisize.memory.states.per_param_bytes)
    state_precision: str
    weight_bytes: float
    activation_scale: float
    gather_bytes: float  # bytes per parameter FSDP/ZeRO-3 all-gathers
    grad_bytes: float  # bytes per gradient element data parallelism reduces
    optimizer_state_bytes: float  # fp32 master + moments + gradient per parameter
    links: comm.Links
    exp_per_s: float | None = None  # softmax exponentials/s (catalog sfu_exp), None: not limiting
    host_bytes_per_s: float | None = None  # GPU-host link per direction (activation offload)
    optimizer: str = "adamw"
    calibration: TrainingCalibration = SHIPPED  # fitted and assumed constants every path of the step reads


def engine(acc, *, precision, framework, optimizer, links: comm.Links, grad_reduce_precision=None,
           calibration: TrainingCalibration | None = None) -> Engine:
    """The :class:`Engine` of a precision and framework on an accelerator (checks the precision and
    ``grad_reduce_precision``: "fp32" | "bf16", None for the framework's default). ``calibration``: a
    :class:`aisize.training.calibration.TrainingCalibration` (None: the shipped one)."""
    if calibration is not None and not isinstance(calibration, TrainingCalibration):
        raise ValueError(f"calibration={str(calibration)[:60]!r} is not allowed: give a TrainingCalibration "
                         "(aisize.calibration.load(path).training) or None for the shipped one")
    r = recipe(precision, acc)
    reduce = DEFAULT_GRAD_REDUCE[framework] if grad_reduce_precision is None else checks.choice(
        "grad_reduce_precision", grad_reduce_precision, GRAD_REDUCE_PRECISIONS)
    states = state_precision(r, framework)
    main_grad = 4.0 if reduce == "fp32" else 2.0
    unit = per_param_bytes(states, optimizer, framework, main_grad_bytes=main_grad)
    tp = training_precision(states)
    high = peak_flops_per_s(acc, r.high_dtype)
    low = peak_flops_per_s(acc, r.low_dtype) if r.low_dtype else high
    gather = r.element_bytes if (framework == "fsdp" and r.low_dtype) else unit["weight"]
    grad = main_grad if framework in ("megatron", "fsdp") else unit["grad"]
    return Engine(r, generation(acc), high, low, acc.memory_bandwidth_bytes_per_s, unit, states,
                  tp.weight_bytes, tp.activation_scale, gather, grad, unit["master"] + unit["moments"] + 4.0,
                  links, acc.sfu_exp_per_s, host_link_bytes_per_s(acc), optimizer,
                  SHIPPED if calibration is None else calibration)
