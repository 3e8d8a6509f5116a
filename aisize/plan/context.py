"""The hardware a plan runs on, resolved once from a scenario, and the planner's named assumptions.

Every constant below is an assumption the planner adds on top of the engine's
own defaults; :func:`assumptions` lists them (with the policies) so the plan
shows the user every value it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from aisize import catalog
from aisize.catalog.records import Accelerator, Link, Server, StorageSystem
from aisize.fleet.failures import FailureRates, failure_rates
from aisize.precision import peak_flops_per_s
from aisize.storage.published import typical_unloaded_latency_seconds
from aisize.units import MiB, bidirectional_to_per_direction

# Planner assumptions (shown to the user by findings.assumptions_used).
RACK_UNITS = 42  # a standard 42U rack
RACK_POWER_WATTS = 40e3  # air-cooled rack power budget; a rack-scale system (no rack_units) is one rack
CHECKPOINT_MAX_STALL = 0.05  # blocking checkpoint writes may take at most 5 % of training time
TOKENS_PER_STEP = 4 * 2**20  # default global batch in tokens: Llama 2 (arXiv:2307.09288 sec. 2.2) used 4M
PRETRAINING_TOKENS = 100e9  # full training on >= 100 B tokens is pre-training (gets the Chinchilla note)
UNKNOWN_WRITE_SHARE = 0.5  # storage rated for reads only: assume writes run at half the read rate
# unloaded IO latency of a storage row that publishes none: typical of published all-flash file systems, not the
# system's own: the median least mean latency of the SPECstorage 2020 results in data/storage_published_results.csv
# (0.3 ms; aisize.storage.published, docs/storage.md)
STORAGE_LATENCY_SECONDS = typical_unloaded_latency_seconds()
MODEL_LOAD_SECONDS = 60.0  # an inference fleet (re)loads its weights within a minute
INFERENCE_SERVICE_CV = 0.0  # fixed prompt/output lengths: request time is deterministic
KNEE_FACTOR = 2.0  # the "knee": load at which mean latency doubles over unloaded
# A service is past its knee where a 10 % rise in load raises its request latency by 20 % or more: elasticity 2,
# which an M/M/1 queue reaches at utilisation 2/3 (aisize.serving.curves.elasticity)
KNEE_ELASTICITY = 2.0
OVERPROVISION_FACTOR = 2.0  # more than 2x the need is over-provisioned
MFU_GAP_FACTOR = 1.5  # predicted vs assumed MFU differing by more than 1.5x is reported
GOODPUT_WARNING = 0.9  # goodput below 90 % is reported (Llama 3 reports > 90 %)
LINK_WARNING_UTILISATION = 0.7  # a data link above 70 % busy leaves little room for bursts
SCENARIO_OPTIMIZERS = {"adamw": "adamw", "sgd-momentum": "sgd", "adam-8bit": "adam8bit",
                       "lion": "lion", "adafactor": "adafactor"}  # scenario name -> aisize.precision name
READ_IO_BYTES = 1 * MiB  # record-format training reads (aisize.storage.io default)


@dataclass(frozen=True)
class HardwareContext:
    """The scenario's hardware as catalog records plus derived per-GPU bandwidths."""

    server: Server
    accelerator: Accelerator
    scale_out_link: Link
    storage_nic_link: Link
    storage: StorageSystem
    pcie_link: Link | None
    gpu_memory_bytes: float  # what the framework sees: memory_visible_bytes where published
    scaleup_bytes_per_s: float | None  # per GPU, per direction (None: no NVLink-class link)
    scaleout_bytes_per_s: float  # per GPU, per direction: NICs x link / GPUs
    storage_write_bytes_per_s: float  # the storage record's write rate, or the assumed share of reads
    storage_write_assumed: bool  # True where the record has no write figure
    switch_radix: int = 64  # ports per scale-out fabric switch (the scenario's hardware)
    oversubscription: float = 1.0  # leaf down:up ratio of the scale-out fabric


@lru_cache(maxsize=64)
def resolve(hardware) -> HardwareContext:
    """Look up every record a :class:`~aisize.scenario.Hardware` names, its own rows first (cached)."""
    accs, servers, stores = hardware.custom_records()
    server = servers.get(hardware.server) or catalog.servers[hardware.server]
    acc = accs.get(server.accelerator) or catalog.accelerators[server.accelerator]
    link = catalog.links[hardware.scale_out_link or server.compute_nic_link]
    store_link = catalog.links[server.storage_nic_link or server.compute_nic_link]
    store = stores.get(hardware.storage) or catalog.storage[hardware.storage]
    pcie = catalog.links.get(f"pcie-gen{acc.pcie_gen}-x16")
    up = (bidirectional_to_per_direction(acc.scaleup_bidirectional_bytes_per_s)
          if acc.scaleup_bidirectional_bytes_per_s else None)
    out = server.compute_nics * link.bandwidth_per_direction_bytes_per_s / server.gpus
    write = store.write_bandwidth_bytes_per_s
    assumed = write is None
    if assumed:
        write = UNKNOWN_WRITE_SHARE * store.read_bandwidth_bytes_per_s
    return HardwareContext(server, acc, link, store_link, store, pcie,
                           acc.memory_visible_bytes or acc.memory_bytes, up, out, write, assumed,
                           hardware.switch_radix, hardware.oversubscription)


@lru_cache(maxsize=128)
def params_of(model):
    """:func:`aisize.models.transformer_params` of a catalog Transformer, cached (records are frozen)."""
    from aisize.models import transformer_params

    return transformer_params(model)


def storage_supply(ctx: HardwareContext, servers: int) -> tuple[float, float]:
    """(read, write) bytes/s the storage gives ``servers`` servers, before sizing building blocks.

    By the record's scope: a whole ``system`` gives its rating to everyone; ``node``
    guidance is per server; a ``unit`` or ``drive`` gives one unit's rating here
    (the cluster plan sizes how many units the blend needs).
    """
    read, write = ctx.storage.read_bandwidth_bytes_per_s, ctx.storage_write_bytes_per_s
    if ctx.storage.scope == "node":
        return read * servers, write * servers
    return read, write


def peak_for(accelerator: Accelerator, dtype: str) -> float:
    """Dense peak at ``dtype``, falling back to the next wider tensor format the GPU has [FLOP/s]."""
    order = {"fp32": ("fp32",), "bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16"),
             "fp8": ("fp8", "bf16", "fp16"), "int8": ("int8", "fp8", "bf16", "fp16")}[dtype]
    for d in order:
        if getattr(accelerator, f"{d}_flops_per_s", None):
            return peak_flops_per_s(accelerator, d)
    return peak_flops_per_s(accelerator, dtype)  # raises, naming the dtype and the accelerator


def training_dtype(accelerator: Accelerator, precision: str) -> str:
    """The training precision the GPU can run: bf16 on a GPU without bf16 (V100) becomes fp16."""
    if precision == "bf16" and not accelerator.bf16_flops_per_s and accelerator.fp16_flops_per_s:
        return "fp16"
    return precision


@lru_cache(maxsize=256)
def mfu_range_for(gpus: int):
    """:func:`aisize.validation.ranges.mfu_range` at a GPU count, cached (it filters a table per call)."""
    from aisize.validation.ranges import mfu_range

    return mfu_range(gpus)


def serving_calibration(policies):
    """The serving constants every serving figure of a plan uses: the calibration the scenario's
    ``policies.serving_calibration`` selects, else :data:`aisize.serving.CALIBRATION`."""
    from aisize import serving

    chosen = policies.serving_calibration
    return chosen.calibration if chosen is not None else serving.CALIBRATION


def training_calibration(policies):
    """The training constants every step time of a plan uses: the ``training`` section of the calibration file
    ``policies.serving_calibration`` names (one file holds both), else the shipped ones."""
    from aisize.training.calibration import CALIBRATION

    chosen = policies.serving_calibration
    return chosen.training if chosen is not None else CALIBRATION


def planner_assumptions() -> dict[str, object]:
    """The planner's own named assumptions with their values."""
    names = ("RACK_UNITS", "RACK_POWER_WATTS", "CHECKPOINT_MAX_STALL", "TOKENS_PER_STEP",
             "PRETRAINING_TOKENS", "UNKNOWN_WRITE_SHARE", "STORAGE_LATENCY_SECONDS", "MODEL_LOAD_SECONDS",
             "INFERENCE_SERVICE_CV", "KNEE_FACTOR", "KNEE_ELASTICITY", "OVERPROVISION_FACTOR", "MFU_GAP_FACTOR",
             "GOODPUT_WARNING", "LINK_WARNING_UTILISATION", "READ_IO_BYTES")
    return {n.lower(): globals()[n] for n in names}


def failure_rates_of(policies) -> FailureRates:
    """The interruption rates the plan models: one per node MTBF (``policies.node_mtbf_hours``), or a published
    fleet's (``policies.failure_rates``, data/failure_rates.csv); the storage's weight reloads and the fleet's
    spares read the same rates."""
    if policies.failure_rates != "node-mtbf":
        return failure_rates(policies.failure_rates)
    return FailureRates("node-mtbf", 0.0, 1.0 / policies.node_mtbf_hours, 0.0, "policies.node_mtbf_hours")
