"""Tests for aisize.network.fabric against NVIDIA DGX SuperPOD switch counts and Al-Fares et al. 2008."""

import numpy as np
import pytest

from aisize.catalog.records import Link, Server
from aisize.network import fabric

NDR_BYTES_PER_S = 50e9  # 400 Gb/s
QM9700_RADIX = 64  # NVIDIA Quantum-2 QM9700: 64 NDR ports


@pytest.mark.parametrize("sus, leaves, spines", [(1, 8, 4), (2, 16, 8), (4, 32, 16)])
def test_dgx_superpod_h100_compute_fabric(sus, leaves, spines):
    # DGX SuperPOD RA (DGX H100) table 4: fabric built for full SUs of 32 nodes x 8 rails
    nics = fabric.compute_nics(8, NDR_BYTES_PER_S)
    tree = fabric.compute_fabric(32 * sus, nics, QM9700_RADIX)
    assert (tree.tiers, tree.leaves, tree.spines, tree.cores) == (2, leaves, spines, 0)
    assert tree.leaf_spine_cables == 256 * sus  # table 4: spine-leaf cables 256 / 512 / 1024


@pytest.mark.parametrize("sus, leaves, spines, cores", [(16, 128, 128, 64), (32, 256, 256, 128), (64, 512, 512, 256)])
def test_dgx_superpod_b200_three_tier(sus, leaves, spines, cores):
    # DGX SuperPOD RA (DGX B200) compute fabric table: 16 SU = 4,096 GPUs -> 128 / 128 / 64
    tree = fabric.fat_tree(256 * sus, QM9700_RADIX, rails=8)
    assert (tree.tiers, tree.leaves, tree.spines, tree.cores) == (3, leaves, spines, cores)
    assert tree.spine_core_cables == 256 * sus


def test_k_ary_fat_tree_al_fares():
    # Al-Fares et al. SIGCOMM 2008: k = 48 supports 27,648 hosts with 5k^2/4 = 2,880 switches
    tree = fabric.fat_tree(27_648, 48)
    assert tree.tiers == 3 and tree.switches == 2_880
    assert tree.cores == 48**2 / 4
    assert tree.max_endpoints_two_tier == 48**2 / 2  # two-tier non-blocking limit k^2/2


def test_three_tier_limit_raises():
    with pytest.raises(ValueError, match="endpoints"):
        fabric.fat_tree(48**3 // 4 + 1, 48)


def test_oversubscription_needs_fewer_spines():
    full = fabric.fat_tree(1024, 64)
    over = fabric.fat_tree(1024, 64, oversubscription=3.0)  # 48 down, 16 up per leaf
    assert over.leaves == np.ceil(1024 / 48) and over.spines == np.ceil(22 * 16 / 64)
    assert over.spines < full.spines


def test_single_switch_and_vectorized():
    assert fabric.fat_tree(40, 64).tiers == 1
    tree = fabric.fat_tree(np.array([40, 256, 4096]), 64)
    np.testing.assert_array_equal(tree.tiers, [1, 2, 3])


def test_one_switch_is_where_a_tree_has_a_single_leaf():
    # the rule scale-out collectives read (aisize.training.comm.scaleout_rate): past one switch a
    # group spans leaves, and the leaves' down:up ratio slows what crosses the spines
    ends = np.arange(1, 300)
    for oversubscription in (1.0, 2.0, 3.0):
        tree = fabric.fat_tree(ends, QM9700_RADIX, oversubscription=oversubscription)
        np.testing.assert_array_equal(fabric.one_switch(ends, QM9700_RADIX), tree.leaves == 1)
    assert not fabric.one_switch(40, 64, rails=8)  # a rail-optimized fabric has a leaf per rail


def test_scaleout_rate_halves_past_one_switch_at_two_to_one():
    from aisize.training.comm import Links, scaleout_rate

    links = Links(scaleup_bytes_per_s=450e9, scaleout_bytes_per_s=50e9, scaleup_domain=8, oversubscription=2.0)
    np.testing.assert_array_equal(scaleout_rate(np.array([1, 64, 65, 4096]), links), [50e9, 50e9, 25e9, 25e9])
    flat = Links(scaleup_bytes_per_s=450e9, scaleout_bytes_per_s=50e9, scaleup_domain=8)
    np.testing.assert_array_equal(scaleout_rate(np.array([1, 4096]), flat), [50e9, 50e9])


def test_nics_rail_optimized_and_shared():
    rail = fabric.compute_nics(8, NDR_BYTES_PER_S)
    assert (rail.nics_per_server, rail.rails, rail.per_gpu_bytes_per_s) == (8, 8, 50e9)
    shared = fabric.compute_nics(8, NDR_BYTES_PER_S, gpus_per_nic=2, rail_optimized=False)
    assert (shared.nics_per_server, shared.rails, shared.per_gpu_bytes_per_s) == (4, 1, 25e9)
    # the HPE Apollo 6500 seed: 8 V100 with 4 x 100 Gb/s EDR -> 6.25 GB/s per GPU
    apollo = Server("apollo", "HPE Apollo 6500 Gen10", "HPE", "v100-sxm2-32gb", 8, 768e9, "Xeon", 40, 4,
                    "ib-edr", 0, None, None, 3500, 4, "HPE QuickSpecs", None)
    edr = Link("ib-edr", "EDR", "infiniband", 12.5e9, "100 Gb/s", False, None, "IBTA", None)
    assert fabric.compute_nics_for(apollo, edr).per_gpu_bytes_per_s == 6.25e9


def test_storage_network():
    # SuperPOD "best" per-node read (40 GB/s) over NDR at 80 %: 1 NIC by bandwidth, 2 for redundancy
    net = fabric.storage_network(32, 40e9, NDR_BYTES_PER_S, storage_ports=16, radix=64, min_nics_per_server=2)
    assert net.nics_per_server == 2
    assert net.fabric.endpoints == 32 * 2 + 16
    more = fabric.storage_network(32, 100e9, NDR_BYTES_PER_S, storage_ports=16, radix=64)
    assert more.nics_per_server == 3


@pytest.mark.parametrize("call, name", [
    (lambda: fabric.fat_tree(100, 63), "radix"),
    (lambda: fabric.fat_tree(100, 2), "radix"),
    (lambda: fabric.fat_tree(0, 64), "endpoints"),
    (lambda: fabric.fat_tree(100, 64, oversubscription=0.0), "oversubscription"),
    (lambda: fabric.compute_nics(8, 0.0), "nic_bytes_per_s"),
    (lambda: fabric.storage_network(4, -1.0, 1e9, 2, 64), "read_bytes_per_s_per_server"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- choosing the cheapest fabric (aisize.network.fabric.choose_fabric) ---

from aisize.network.fabric import Nics, choose_fabric  # noqa: E402

EIGHT_RAILS = Nics(8, 8, 50e9)  # DGX/HGX H100: 8 x 400 Gb/s NICs, one per GPU, rail-aligned


def test_a_small_cluster_gets_one_switch():
    # 3 servers x 8 NICs = 24 ports (+25 % growth = 30) fit one 64-port switch; the rail-optimized
    # reference design would take 8 rail leaves + 4 spines = 12 switches (what aisize planned before)
    c = choose_fabric(3, EIGHT_RAILS, 64)
    assert c.design == "single-switch" and c.tree.switches == 1 and c.ports_sized_for == 30
    assert dict((d, s) for d, s, _, _ in c.candidates)["rail-optimized"] == 12
    assert "30 ports" in c.reason


def test_growth_margin_moves_to_a_fat_tree_when_one_switch_has_no_room_left():
    assert choose_fabric(7, EIGHT_RAILS, 64, growth=0.0).design == "single-switch"  # 56 ports
    c = choose_fabric(7, EIGHT_RAILS, 64, growth=0.25)  # 70 ports
    assert c.design == "fat-tree" and c.tree.tiers == 2


def test_the_reference_design_where_it_costs_no_more():
    # SuperPOD 1 SU (32 x DGX H100, no growth): rail-optimized 8 leaves + 4 spines = 12 switches, the same
    # as a plain fat tree, and chosen for keeping same-rail traffic on one leaf [NVIDIA RA-11333-001, table 4]
    c = choose_fabric(32, EIGHT_RAILS, 64, growth=0.0)
    assert c.design == "rail-optimized" and (c.tree.leaves, c.tree.spines) == (8, 4)
    # asked for explicitly, it is used even where a single switch would do
    assert choose_fabric(2, EIGHT_RAILS, 64, design="rail-optimized").tree.switches == 12


def test_links_can_tip_the_choice():
    # at 32 servers + 25 % growth a plain fat tree needs fewer switches (15 vs 24): chosen on switches alone
    assert choose_fabric(32, EIGHT_RAILS, 64).design == "fat-tree"


def test_a_forced_design_that_cannot_carry_the_ports_is_refused():
    with pytest.raises(ValueError, match="design='single-switch'.*do not fit one 64-port switch"):
        choose_fabric(16, EIGHT_RAILS, 64, design="single-switch")


def test_plans_choose_the_cheapest_fabric():
    from aisize.plan import plan
    from aisize.scenario import from_dict, preset, to_dict

    p = plan(preset("xe9680-genai"))  # every job fits one server: no compute fabric at all
    assert p.network.compute_fabric["switches"] <= 1
    d = to_dict(preset("xe9680-genai"))
    d["workloads"][1].update(target_days=None, gpus=16)  # the 8B fine-tune now spans two servers
    p = plan(from_dict(d))
    assert p.pools[0].fabric.design == "single-switch" and p.network.compute_fabric["switches"] == 1
    big = plan(preset("llama3-70b-pretrain"))  # 1,024 NICs + 25 %: 40 leaves + 20 spines either way
    assert big.pools[0].fabric.design == "rail-optimized" and big.network.compute_fabric["switches"] == 60


def test_a_fabric_too_large_for_the_growth_margin_names_the_fields():
    from aisize.plan import plan
    from aisize.scenario import from_dict, preset, to_dict

    d = to_dict(preset("llama3-70b-pretrain"))
    d["workloads"][0].update(gpus=65536, global_batch=65536)  # 65,536 ports fill a radix-64 3-tier tree
    with pytest.raises(ValueError, match=r"hardware\.fabric_growth.*more than a three-tier fat tree"):
        plan(from_dict(d))
    d["hardware"]["fabric_growth"] = 0.0
    assert plan(from_dict(d)).network.compute_fabric["tiers"] == 3
