"""Tests for aisize.host against the published DGX host-to-GPU memory ratios (NVIDIA DGX H100 and
DGX A100 datasheets) and MLPerf Storage's host-memory rule."""

import numpy as np
import pytest

from aisize import host
from aisize.catalog.records import Accelerator, Server
from aisize.units import GB, GiB


def _gpu(id, mem):
    return Accelerator(id, id, "NVIDIA", "SXM", "HBM", f"{round(mem / GiB)} GB", mem, None, 2e12, 60e12, None, None,
                       None, None, None, None, None, None, 8, 4, 400, "NVIDIA datasheet", None)


def _server(id, gpu, host_bytes, cores):
    return Server(id, id, "NVIDIA", gpu, 8, host_bytes, "x86", cores, 8, "ib-ndr", 2, "ib-ndr", None, 10_200, 8,
                  "NVIDIA datasheet", None)


@pytest.mark.parametrize("host_gb, gpu_gb, constant", [
    (2048, 80, host.DGX_H100_HOST_TO_GPU_MEMORY_RATIO),  # DGX H100: 2 TB for 640 GB
    (1024, 40, host.DGX_A100_320GB_HOST_TO_GPU_MEMORY_RATIO),  # DGX A100 320 GB: 1 TB
    (2048, 80, host.DGX_A100_640GB_HOST_TO_GPU_MEMORY_RATIO),  # DGX A100 640 GB: 2 TB
])
def test_dgx_ratios_from_records(host_gb, gpu_gb, constant):
    # the catalog stores host RAM from its label (SI) and HBM physically (GiB): compare labels
    ratio = host.host_to_gpu_memory_ratio(_server("dgx", "g", host_gb / 1024 * 1e12, 112), _gpu("g", gpu_gb * GiB))
    assert ratio == pytest.approx(constant) == pytest.approx(3.125)


def test_host_memory_line_items():
    # DGX H100-like: 8 x 80 GB; loader: 8 workers x (0.5 GB + 2 x one 256-image batch of 224x224x3 fp32);
    # async checkpoint: Llama 3 70B shard over 64 ranks staged once
    batch = 256 * 224 * 224 * 3 * 4
    shard = 69.88e9 * 14 / 64
    m = host.host_memory(8, 80 * GB, batch_bytes_per_gpu=batch, checkpoint_shard_bytes=shard,
                         dataset_cache_bytes=138e9)
    assert m.gpu_mirror_bytes == 640 * GB
    assert m.os_and_application_bytes == 32 * GiB
    assert m.loader_bytes == pytest.approx(8 * 8 * (0.5 * GB + 2 * batch))
    assert m.pinned_bytes == 16 * GiB
    assert m.checkpoint_staging_bytes == pytest.approx(8 * shard)
    assert m.total_bytes == pytest.approx(sum(m.items().values()))
    # fits a 2 TB DGX H100 (2 x 56 cores) with 5 ms CPU per sample at MLPerf's ResNet-50 H100 rate
    rate = 8 * 400 / 0.224
    cores = host.cpu_cores(rate, 5e-3, 8)
    assert cores.total_cores == pytest.approx(rate * 5e-3 / 0.8 + 8)
    v = host.host_verdict(m, cores, 2048 * GB, 112)
    assert v.memory_fits and v.cores_fit
    assert v.memory_headroom_bytes == pytest.approx(2048 * GB - m.total_bytes)


def test_published_ratio_with_page_cache_does_not_fit():
    m = host.host_memory(8, 80 * GB, ratio=host.DGX_H100_HOST_TO_GPU_MEMORY_RATIO, dataset_cache_bytes=500 * GB)
    v = host.host_verdict(m, host.cpu_cores(0.0, 0.0, 8), 2048 * GB, 112)
    assert not v.memory_fits and v.memory_headroom_bytes < 0


def test_worker_overhead_matches_mlperf_rule():
    # mlcommons/storage Submission_guidelines v2.0: ~0.5 GB host memory per emulated accelerator
    assert host.LOADER_WORKER_OVERHEAD_BYTES == 0.5 * GB


def test_host_for_server_and_mismatch():
    gpu = _gpu("h100-sxm", 80 * GB)
    v = host.host_for_server(_server("dgx-h100", "h100-sxm", 2048 * GB, 112), gpu,
                             samples_per_s_per_server=10_000, core_seconds_per_sample=1e-3)
    assert v.memory.gpu_mirror_bytes == 640 * GB and v.cores.data_preparation_cores == pytest.approx(12.5)
    with pytest.raises(ValueError, match="accelerator"):
        host.host_for_server(_server("dgx-a100", "a100", 2048 * GB, 128), gpu)


def test_vectorized_over_gpu_memory():
    m = host.host_memory(8, np.array([40.0, 80.0]) * GB, os_and_application_bytes=0, loader_workers_per_gpu=0,
                         pinned_bytes_per_gpu=0)
    np.testing.assert_allclose(m.total_bytes, [320 * GB, 640 * GB])


@pytest.mark.parametrize("call, name", [
    (lambda: host.host_memory(0, 80e9), "gpus_per_server"),
    (lambda: host.host_memory(8, 0.0), "gpu_memory_bytes"),
    (lambda: host.host_memory(8, 80e9, ratio=-1), "ratio"),
    (lambda: host.host_memory(8, 80e9, checkpoint_shard_bytes=-1), "checkpoint_shard_bytes"),
    (lambda: host.cpu_cores(100.0, 1e-3, 8, core_utilisation=0.0), "core_utilisation"),
    (lambda: host.cpu_cores(-1.0, 1e-3, 8), "samples_per_s_per_server"),
    (lambda: host.host_verdict(host.host_memory(8, 80e9), host.cpu_cores(0, 0, 8), 0.0, 112), "server_memory_bytes"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
