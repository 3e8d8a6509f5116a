"""Host (per server) sizing: host RAM as a sum of line items, CPU cores for data preparation.

Host RAM needed = the server's total GPU memory times a ratio (default 1.0: the
rule "at least as much host RAM as GPU memory") plus OS/application, data-loader
workers and their prefetched batches, pinned host-to-device buffers, asynchronous
checkpoint staging, CPU-offloaded optimizer state and page cache for the dataset.
Every assumption is a named constant here and appears as its own line item.

Published host-to-GPU memory ratios (datasheet labels, for reference):
DGX H100 2 TB host for 8 x 80 GB = 640 GB HBM; DGX A100 1 TB for 320 GB and
2 TB for 640 GB; all 3.125 label for label (3.2 physically: 2 TiB of DIMMs for
640 GiB of HBM). :func:`host_to_gpu_memory_ratio` computes the same from
catalog rows, comparing the labels.

References
----------
.. [1] NVIDIA DGX H100 datasheet (2 TB system memory, 640 GB GPU memory), 2023.
.. [2] NVIDIA DGX A100 datasheet (320 GB system: 1 TB; 640 GB system: 2 TB), 2020.
.. [3] PyTorch ``torch.utils.data.DataLoader`` docs: ``prefetch_factor`` (default 2
   batches loaded in advance by each worker), ``pin_memory``.
.. [4] mlcommons/storage Submission_guidelines.md v2.0 (2025): ~0.5 GB host memory
   per emulated accelerator's data loader.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from aisize import checks
from aisize.catalog.records import Accelerator, Server
from aisize.units import GB, TB, GiB, to_base

# Published reference ratios, host RAM / total GPU memory, from nominal labels [1], [2].
DGX_H100_HOST_TO_GPU_MEMORY_RATIO = 2 * TB / (8 * 80 * GB)  # 2 TB / 640 GB = 3.125
DGX_A100_320GB_HOST_TO_GPU_MEMORY_RATIO = 1 * TB / (8 * 40 * GB)  # 1 TB / 320 GB = 3.125
DGX_A100_640GB_HOST_TO_GPU_MEMORY_RATIO = 2 * TB / (8 * 80 * GB)  # 2 TB / 640 GB = 3.125

# Assumptions (shown to the user as line items, all overridable).
DEFAULT_HOST_TO_GPU_MEMORY_RATIO = 1.0  # the sizing rule's floor: host RAM >= GPU memory
OS_AND_APPLICATION_BYTES = 32 * GiB  # kernel, drivers, CUDA context, framework, monitoring
DEFAULT_LOADER_WORKERS_PER_GPU = 8
DEFAULT_PREFETCH_FACTOR = 2  # PyTorch DataLoader default [3]
LOADER_WORKER_OVERHEAD_BYTES = 0.5 * GB  # per worker process (interpreter, index) [4]
DEFAULT_PINNED_BYTES_PER_GPU = 2 * GiB  # page-locked staging for H2D copies
DEFAULT_CHECKPOINT_STAGING_COPIES = 1  # async checkpoint keeps one host copy of the shard
DEFAULT_CORE_UTILISATION = 0.8  # share of a core a loader worker really gets
DEFAULT_RESERVED_CORES_PER_GPU = 1.0  # the training process driving each GPU


@dataclass(frozen=True)
class HostMemory:
    """Host RAM per server, by line item [B]."""

    gpu_mirror_bytes: float
    os_and_application_bytes: float
    loader_bytes: float
    pinned_bytes: float
    checkpoint_staging_bytes: float
    offloaded_optimizer_bytes: float
    page_cache_bytes: float
    kv_cache_bytes: float  # an inference engine's KV-cache tier in host DRAM (LMCache, vLLM offload, HiCache)
    total_bytes: float

    def items(self) -> dict[str, float]:
        """Line items (without the total), for tables and charts."""
        d = asdict(self)
        d.pop("total_bytes")
        return d


@dataclass(frozen=True)
class CpuCores:
    """CPU cores per server: data preparation plus cores reserved per GPU."""

    data_preparation_cores: float
    reserved_cores: float
    total_cores: float


@dataclass(frozen=True)
class HostVerdict:
    """A host requirement against one server."""

    memory: HostMemory
    cores: CpuCores
    server_memory_bytes: float
    server_cpu_cores: float
    memory_fits: bool | np.ndarray
    cores_fit: bool | np.ndarray
    memory_headroom_bytes: float  # negative when short
    cores_headroom: float


def host_memory(gpus_per_server, gpu_memory_bytes, *,
                ratio=DEFAULT_HOST_TO_GPU_MEMORY_RATIO,
                os_and_application_bytes=OS_AND_APPLICATION_BYTES,
                loader_workers_per_gpu=DEFAULT_LOADER_WORKERS_PER_GPU,
                batch_bytes_per_gpu=0.0,
                prefetch_factor=DEFAULT_PREFETCH_FACTOR,
                worker_overhead_bytes=LOADER_WORKER_OVERHEAD_BYTES,
                pinned_bytes_per_gpu=DEFAULT_PINNED_BYTES_PER_GPU,
                checkpoint_shard_bytes=0.0,
                checkpoint_staging_copies=DEFAULT_CHECKPOINT_STAGING_COPIES,
                offloaded_optimizer_bytes=0.0,
                dataset_cache_bytes=0.0,
                kv_cache_bytes=0.0) -> HostMemory:
    """Host RAM one server needs, as line items.

    Parameters
    ----------
    gpus_per_server : GPUs in the server [count]
    gpu_memory_bytes : memory of one GPU [B]
    ratio : host RAM per byte of GPU memory for the GPU-mirror item [-], >= 0
        (1.0 by default; DGX systems ship 3.2, see module constants)
    os_and_application_bytes : OS, drivers, framework [B]
    loader_workers_per_gpu : data-loader worker processes per GPU [count], >= 0
    batch_bytes_per_gpu : one decoded batch for one GPU [B] (batch x decoded sample bytes)
    prefetch_factor : batches each worker holds ahead [count] (PyTorch default 2)
    worker_overhead_bytes : resident memory of one worker process [B]
    pinned_bytes_per_gpu : page-locked transfer buffers per GPU [B]
    checkpoint_shard_bytes : one GPU's checkpoint shard [B] (staged in host RAM
        for asynchronous checkpointing; times GPUs per server)
    checkpoint_staging_copies : host copies of the shard kept [count], >= 0
    offloaded_optimizer_bytes : optimizer state offloaded to this server's CPU [B]
    dataset_cache_bytes : dataset bytes to keep in page cache on this server [B]
    kv_cache_bytes : KV cache the inference engines keep in this server's DRAM (a KV-cache tier) [B]

    Returns
    -------
    :class:`HostMemory` [B]

    References
    ----------
    .. [1] NVIDIA DGX H100 / DGX A100 datasheets (published ratios).
    .. [2] PyTorch DataLoader docs (workers x prefetch_factor batches in flight).
    .. [3] ZeRO-Offload, Ren et al. 2021, arXiv 2101.06840 (optimizer state on the CPU).
    """
    gpus = checks.integer("gpus_per_server", gpus_per_server, high=10**4)
    gpu_mem = checks.positive("gpu_memory_bytes", gpu_memory_bytes)
    ratio = checks.non_negative("ratio", ratio, high=1e3)
    os_b = checks.non_negative("os_and_application_bytes", os_and_application_bytes)
    workers = checks.non_negative("loader_workers_per_gpu", loader_workers_per_gpu, high=1e4)
    batch = checks.non_negative("batch_bytes_per_gpu", batch_bytes_per_gpu)
    prefetch = checks.non_negative("prefetch_factor", prefetch_factor, high=1e4)
    overhead = checks.non_negative("worker_overhead_bytes", worker_overhead_bytes)
    pinned = checks.non_negative("pinned_bytes_per_gpu", pinned_bytes_per_gpu)
    shard = checks.non_negative("checkpoint_shard_bytes", checkpoint_shard_bytes)
    copies = checks.non_negative("checkpoint_staging_copies", checkpoint_staging_copies, high=1e3)
    offload = checks.non_negative("offloaded_optimizer_bytes", offloaded_optimizer_bytes)
    cache = checks.non_negative("dataset_cache_bytes", dataset_cache_bytes)
    kv = checks.non_negative("kv_cache_bytes", kv_cache_bytes)

    mirror = ratio * gpus * gpu_mem
    loader = gpus * workers * (overhead + prefetch * batch)
    pinned_total = gpus * pinned
    staging = gpus * shard * copies
    total = mirror + os_b + loader + pinned_total + staging + offload + cache + kv
    return HostMemory(mirror, os_b, loader, pinned_total, staging, offload, cache, kv, total)


def cpu_cores(samples_per_s_per_server, core_seconds_per_sample, gpus_per_server, *,
              core_utilisation=DEFAULT_CORE_UTILISATION,
              reserved_cores_per_gpu=DEFAULT_RESERVED_CORES_PER_GPU) -> CpuCores:
    """CPU cores one server needs to decode and augment samples at the GPUs' rate.

    cores = samples/s x core-seconds per sample / core utilisation + reserved per GPU.

    Parameters
    ----------
    samples_per_s_per_server : samples the server's GPUs consume [1/s]
    core_seconds_per_sample : CPU time to read, decode and augment one sample [s]
        (measure it: one loader worker's samples/s is its inverse)
    gpus_per_server : GPUs in the server [count]
    core_utilisation : share of a core each worker achieves, (0, 1]
    reserved_cores_per_gpu : cores for the process driving each GPU [count]

    Returns
    -------
    :class:`CpuCores` [cores]

    References
    ----------
    .. [1] Mohan et al., "Analyzing and Mitigating Data Stalls in DNN Training",
       VLDB 14(5), 2021, section 3 (CPU pre-processing as a stall source; cores per GPU).
    """
    rate = checks.non_negative("samples_per_s_per_server", samples_per_s_per_server)
    cost = checks.non_negative("core_seconds_per_sample", core_seconds_per_sample)
    gpus = checks.integer("gpus_per_server", gpus_per_server, high=10**4)
    util = checks.fraction("core_utilisation", core_utilisation)
    reserved_per_gpu = checks.non_negative("reserved_cores_per_gpu", reserved_cores_per_gpu, high=1e3)
    prep = rate * cost / util
    reserved = gpus * reserved_per_gpu
    return CpuCores(prep, reserved + 0.0 * prep, prep + reserved)


def host_verdict(memory: HostMemory, cores: CpuCores, server_memory_bytes,
                 server_cpu_cores) -> HostVerdict:
    """Compare a host requirement with a server's RAM and cores.

    Parameters
    ----------
    memory, cores : from :func:`host_memory` and :func:`cpu_cores`
    server_memory_bytes : the server's host RAM [B]
    server_cpu_cores : the server's physical cores, all sockets [count]

    References
    ----------
    .. [1] NVIDIA DGX H100 datasheet (2 TB RAM, 2 x 56 cores) as an example server.
    """
    ram = checks.positive("server_memory_bytes", server_memory_bytes)
    n_cores = checks.positive("server_cpu_cores", server_cpu_cores)
    mem_room = ram - memory.total_bytes
    core_room = n_cores - cores.total_cores
    return HostVerdict(memory, cores, ram, n_cores, mem_room >= 0, core_room >= 0, mem_room, core_room)


def host_to_gpu_memory_ratio(server: Server, accelerator: Accelerator) -> float:
    """A catalog server's host RAM divided by its total GPU memory [-].

    Compares datasheet labels as the DGX datasheets do: the server's host memory
    (stored from its label, e.g. "2 TB") over the GPU's memory label (e.g. "80 GB"),
    not the GPU's physical GiB, so a DGX H100 gives 3.125 rather than a mixed-unit 2.91.
    Falls back to the physical memory when the label is not "<number> <unit>".

    References
    ----------
    .. [1] NVIDIA DGX H100 / DGX A100 datasheets.
    """
    return server.host_memory_bytes / (server.gpus * _label_bytes(accelerator))


def _label_bytes(accelerator: Accelerator) -> float:
    try:
        value, unit = accelerator.memory_label.split()
        return to_base(float(value), unit)
    except (AttributeError, ValueError):
        return accelerator.memory_bytes


def host_for_server(server: Server, accelerator: Accelerator, *, samples_per_s_per_server=0.0,
                    core_seconds_per_sample=0.0, **memory_kwargs) -> HostVerdict:
    """:func:`host_memory` and :func:`cpu_cores` for a catalog server, with the verdict.

    ``memory_kwargs`` are passed to :func:`host_memory` (ratio, batch_bytes_per_gpu, ...).

    References
    ----------
    .. [1] See :func:`host_memory` and :func:`cpu_cores`.
    """
    if accelerator.id != server.accelerator:
        raise ValueError(f"accelerator={accelerator.id!r} is not allowed: server {server.id!r} "
                         f"holds {server.accelerator!r}")
    memory = host_memory(server.gpus, accelerator.memory_bytes, **memory_kwargs)
    cores = cpu_cores(samples_per_s_per_server, core_seconds_per_sample, server.gpus)
    return host_verdict(memory, cores, server.host_memory_bytes, server.cpu_cores)
