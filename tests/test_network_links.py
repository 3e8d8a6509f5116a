"""Tests for aisize.network.links: link conversions, 10 vs 40 Gb feeds, staging, training traffic."""

import numpy as np
import pytest

from aisize.catalog.records import Link
from aisize.network import collectives, links
from aisize.units import bidirectional_to_per_direction, gbit_per_s_to_bytes_per_s

GB = 1e9
IMAGENET_TRAIN_IMAGES = 1_281_167  # DESIGN.md section 2 (ImageNet-1k)
IMAGENET_TRAIN_BYTES = 138e9


def _link(id, gbit, kind="ethernet", latency=None):
    return Link(id=id, name=id, kind=kind, bandwidth_per_direction_bytes_per_s=gbit_per_s_to_bytes_per_s(gbit),
                vendor_figure=f"{gbit} Gb/s", vendor_figure_bidirectional=False, latency_seconds=latency,
                source="IEEE 802.3 / IBTA", note=None)


def test_link_conversions_match_published_rates():
    # IBTA: EDR 4x = 100 Gb/s = 12.5 GB/s; NDR 400 Gb/s = 50 GB/s; IEEE 802.3: 10 GbE = 1.25 GB/s
    assert gbit_per_s_to_bytes_per_s(100) == 12.5 * GB
    assert gbit_per_s_to_bytes_per_s(400) == 50 * GB
    assert gbit_per_s_to_bytes_per_s(10) == 1.25 * GB
    # NVIDIA H100 NVLink 900 GB/s is both directions together: 450 GB/s each way
    assert bidirectional_to_per_direction(900 * GB) == 450 * GB


def test_link_transfer_uses_latency_and_parallel_links():
    ib = _link("ib-edr", 100, "infiniband", latency=1e-6)
    t = links.link_transfer_seconds(10 * GB, ib, links=2, efficiency=1.0, messages=3)
    assert t == pytest.approx(10 / 25 + 3e-6)
    # no latency in the catalog: latency term 0
    assert links.link_transfer_seconds(1.25 * GB, _link("eth-10g", 10), efficiency=1.0) == pytest.approx(1.0)


def test_ten_vs_forty_gigabit_epoch():
    # the seeds' 10 Gb vs 40 Gb question: one ImageNet-1k epoch per server at 90 % efficiency
    feeds = {g: links.link_feed_for(_link(f"eth-{g}g", g), IMAGENET_TRAIN_BYTES,
                                    IMAGENET_TRAIN_BYTES / IMAGENET_TRAIN_IMAGES, efficiency=0.9)
             for g in (10, 40)}
    assert feeds[10].epoch_seconds == pytest.approx(138e9 / (1.25e9 * 0.9))  # ~123 s
    assert feeds[10].epoch_seconds / feeds[40].epoch_seconds == pytest.approx(4.0)
    # 10 GbE sustains ~10,400 ImageNet JPEGs/s, 40 GbE ~41,800
    assert feeds[10].samples_per_s == pytest.approx(1.125e9 / (138e9 / 1_281_167))
    assert 10_000 < feeds[10].samples_per_s < 11_000


def test_link_feed_vectorized_over_rates():
    feed = links.link_feed(100 * GB, 1e5, np.array([1.25, 5.0]) * GB, efficiency=1.0)
    np.testing.assert_allclose(feed.epoch_seconds, [80.0, 20.0])


def test_staging_is_storage_bound_on_a_dgx_with_two_storage_nics():
    # 8 GPUs on PCIe Gen5 x16 (63 GB/s per direction, DESIGN.md) vs 2 x 400 Gb/s storage NICs
    epoch = 1_000 * GB
    st = links.staging_for(epoch, _link("ib-ndr", 400, "infiniband"),
                           Link("pcie-gen5-x16", "PCIe 5.0 x16", "pcie", 63 * GB, "63 GB/s", False, None, "PCI-SIG", None),
                           8, storage_links=2, efficiency=0.8)
    assert st.storage_seconds == pytest.approx(1000 / 80)
    assert st.pcie_seconds == pytest.approx(1000 / (8 * 63 * 0.8))
    assert st.epoch_seconds == st.storage_seconds and not st.pcie_bound
    serial = links.staging_seconds(epoch, 80 * GB, 63 * GB, 8, efficiency=0.8, pipelined=False)
    assert serial.epoch_seconds == pytest.approx(st.storage_seconds + st.pcie_seconds)


def test_gradient_sync_overlap():
    # Llama 2 7B bf16 gradients (6.74e9 params x 2 B), DP over 4 DGX H100 (8 GPUs each)
    grads = 6.74e9 * 2
    full = collectives.two_tier_collective_seconds("all-reduce", grads, 8, 4, 450 * GB, 50 * GB)
    hidden = links.gradient_sync(grads, 8, 4, 450 * GB, 50 * GB, backward_seconds=10.0)
    assert hidden.seconds == pytest.approx(full) and hidden.exposed_seconds == 0.0
    assert hidden.hidden_fraction == 1.0
    exposed = links.gradient_sync(grads, 8, 4, 450 * GB, 50 * GB, backward_seconds=full / 4)
    assert exposed.exposed_seconds == pytest.approx(0.75 * full)
    assert exposed.hidden_fraction == pytest.approx(0.25)


def test_tensor_parallel_four_all_reduces_per_layer():
    # Megatron-LM (arXiv 1909.08053, figure 4): 2 all-reduces forward + 2 backward per layer
    one = collectives.collective_seconds("all-reduce", 4096 * 8192 * 2, 8, 450 * GB, latency_seconds=1e-6)
    tp = links.tensor_parallel_traffic(4096, 8192, 80, 8, 450 * GB, microbatches=2)
    assert tp.seconds == pytest.approx(4 * 80 * 2 * one)
    assert tp.exposed_seconds == tp.seconds


def test_moe_all_to_all_bytes():
    # 8 experts per token (k) of hidden 7168, 4096 tokens per GPU, EP 64 over 8 nodes, fp8 dispatch
    one = collectives.two_tier_collective_seconds("all-to-all", 4096 * 8 * 7168 * 1, 8, 8, 450 * GB, 50 * GB)
    moe = links.moe_all_to_all(4096, 7168, 58, 8, 8, 8, 450 * GB, 50 * GB, bytes_per_element=1)
    assert moe.seconds == pytest.approx(4 * 58 * one)


@pytest.mark.parametrize("call, name", [
    (lambda: links.link_feed(1e9, 0.0, 1e9), "sample_bytes"),
    (lambda: links.link_feed(1e9, 1e5, 0.0), "bandwidth_bytes_per_s"),
    (lambda: links.link_feed(-1.0, 1e5, 1e9), "epoch_bytes"),
    (lambda: links.staging_seconds(1e9, 1e9, 1e9, 0), "gpus_per_server"),
    (lambda: links.staging_seconds(1e9, 0.0, 1e9, 8), "storage_read_bytes_per_s"),
    (lambda: links.gradient_sync(1e9, 8, 2, 1e9, 1e9, overlappable_share=1.5), "overlappable_share"),
    (lambda: links.tensor_parallel_traffic(4096, 0, 8, 8, 1e9), "hidden"),
    (lambda: links.link_transfer_seconds(1e9, _link("x", 10), links=0), "links"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
