"""Step-time model: bubble and MFU identities, and published Megatron-LM MFU figures."""

import pytest

from aisize.step_time import step_time

FAST = dict(scaleup_bytes_per_s=1e18, scaleout_bytes_per_s=1e18)  # communication ~free
# A100 datasheet: 312 TFLOP/s bf16, NVLink 600 GB/s both ways (300 per direction); Selene DGX A100 nodes:
# 8 HDR 200 Gb/s NICs for 8 GPUs = 25 GB/s per GPU per direction.
A100 = dict(peak_flops_per_s=312e12, scaleup_bytes_per_s=300e9, scaleout_bytes_per_s=200e9 / 8, scaleup_domain=8)
MTNLG = dict(active_params=530e9, layers=105, hidden=20480, seq_len=2048, global_batch=2240, micro_batch=1,
             tp=8, pp=35, dp=8, sequence_parallel=True)


def test_mfu_equals_compute_efficiency_without_overheads():
    st = step_time(active_params=1e9, layers=24, hidden=2048, seq_len=2048, global_batch=64, micro_batch=1,
                   peak_flops_per_s=1e15, compute_efficiency=0.55, **FAST)
    assert st.mfu == pytest.approx(0.55, rel=1e-6)


@pytest.mark.parametrize("p, m, v", [(4, 16, 1), (8, 64, 1), (8, 64, 2)])
def test_pipeline_bubble_fraction(p, m, v):
    # Narayanan et al. 2021 sec. 2.2: bubble (p - 1)/m, interleaved (p - 1)/(v m).
    st = step_time(active_params=1e9, layers=48, hidden=2048, seq_len=2048, global_batch=m, micro_batch=1,
                   pp=p, virtual_stages=v, peak_flops_per_s=1e15, **FAST)
    assert st.pp_bubble_seconds / st.compute_seconds == pytest.approx((p - 1) / (v * m))


def test_full_recompute_costs_a_forward():
    kw = dict(active_params=1e9, layers=24, hidden=2048, seq_len=2048, global_batch=64, micro_batch=1,
              peak_flops_per_s=1e15, **FAST)
    full, none = step_time(recompute="full", **kw), step_time(**kw)
    assert full.compute_seconds / none.compute_seconds == pytest.approx(
        (8e9 + 16 * 24 * 2048 * 2048) / (6e9 + 12 * 24 * 2048 * 2048))


def test_megatron_530b_mfu():
    # Korthikanti et al. 2022, abstract: MT-NLG 530B on 2240 A100 reaches 54.2 % MFU with sequence parallelism
    # and selective recomputation, 42.1 % with full recomputation (TP 8, PP 35; Table 3 batch 2240).
    # Tolerance: +-20 % relative on the level (compute efficiency is an assumption), +-10 % on the ratio.
    sel = step_time(recompute="selective", **MTNLG, **A100)
    full = step_time(recompute="full", **MTNLG, **A100)
    assert sel.mfu == pytest.approx(0.542, rel=0.20)
    assert full.mfu == pytest.approx(0.421, rel=0.20)
    assert sel.mfu / full.mfu == pytest.approx(0.542 / 0.421, rel=0.10)


def test_tp_across_nodes_is_slower():
    kw = dict(active_params=70e9, layers=80, hidden=8192, seq_len=4096, global_batch=64, micro_batch=1,
              peak_flops_per_s=989e12, scaleup_bytes_per_s=450e9, scaleout_bytes_per_s=50e9, scaleup_domain=8)
    inside = step_time(tp=8, dp=2, **kw)
    across = step_time(tp=16, **kw)
    assert across.tp_comm_seconds > inside.tp_comm_seconds


def test_zero3_moves_more_dp_traffic():
    kw = dict(active_params=7e9, layers=32, hidden=4096, seq_len=4096, global_batch=256, micro_batch=1, dp=64,
              peak_flops_per_s=989e12, scaleup_bytes_per_s=450e9, scaleout_bytes_per_s=5e9, dp_overlap=0.0)
    assert step_time(zero_stage=3, **kw).dp_comm_exposed_seconds == pytest.approx(
        1.5 * step_time(zero_stage=1, **kw).dp_comm_exposed_seconds)


@pytest.mark.parametrize("kwargs, name", [
    (dict(pp=200), "pp"), (dict(global_batch=63, dp=2), "global_batch"), (dict(compute_efficiency=0), "compute_efficiency"),
    (dict(recompute="most"), "recompute"), (dict(dp=4, ep=3, global_batch=64), "ep"), (dict(hidden=-5), "hidden"),
])
def test_bad_input(kwargs, name):
    args = dict(active_params=1e9, layers=24, hidden=2048, seq_len=2048, global_batch=64, micro_batch=1,
                peak_flops_per_s=1e15, **FAST) | kwargs
    with pytest.raises(ValueError, match=name):
        step_time(**args)
