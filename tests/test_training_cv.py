"""Attention's length curve in the training step, against the measured context-attention tables.

The step times attention at ``attention_efficiency[gen:kernel] x s / (s + attention_half_tokens[gen:kernel])``.
The half-lengths are measured (docs/training-cv.md): vLLM's context-attention tables (data/kernels, 32 query
heads, 8 KV heads of 128, one causal sequence) read the TFLOP/s below, and a·s/(s + b) fitted to them over
2k-16k tokens gives b. FlashAttention's 128-row tile, the curve before, read them 20-35 % off at 2k-4k.
"""

import numpy as np
import pytest

import aisize.serving.kernel_attention as KA
from aisize.training.calibration import CALIBRATION, from_dict
from aisize.training.efficiency import attention_efficiency

LENGTHS = np.array([2048.0, 4096.0, 8192.0, 16384.0])


def _table_tflops(gpu):
    g = KA.grid(gpu, "vllm", "context", ("gqa", 32.0, 8.0, 128), "bf16")
    seconds, ok = KA.interpolate(g, np.ones_like(LENGTHS), LENGTHS)
    assert ok.all()
    return 4.0 * LENGTHS**2 * 128 * 32 / 2.0 / seconds / 1e12  # causal: half of 4·s²·d·h


@pytest.mark.parametrize("gpu, key, published", [
    # TFLOP/s the tables read at 2k, 4k, 8k, 16k (rounded), shown so a changed table is seen here
    ("h100-sxm", "hopper:fa3", (390, 518, 587, 664)),
    ("b200", "blackwell:fa3", (537, 841, 1083, 1251)),
])
def test_the_half_length_reproduces_the_measured_length_curve(gpu, key, published):
    measured = _table_tflops(gpu)
    np.testing.assert_allclose(measured, published, rtol=0.01)
    gen, kernel = key.split(":")
    model = attention_efficiency(gen, LENGTHS, kernel)
    # shape only (the plateau is fitted on training runs): each length against 16k
    ratio = (model / model[-1]) / (measured / measured[-1])
    assert np.all(np.abs(ratio - 1.0) <= 0.08), ratio
    tile = LENGTHS / (LENGTHS + 128.0)  # the old curve misses the measured 2k point by 30 % or more
    assert (tile[0] / tile[-1]) / (measured[0] / measured[-1]) > 1.3


def test_hand_worked_attention_efficiency_at_8k_on_hopper():
    # 8,192 / (8,192 + 1,760) = 0.82315; at 32k: 32,768 / 34,528 = 0.94903 (15 % faster per FLOP)
    e = CALIBRATION.attention_efficiency["hopper:fa3"]
    assert CALIBRATION.attention_half_tokens["hopper:fa3"] == 1760.0
    assert attention_efficiency("hopper", 8192.0, "fa3") == pytest.approx(e * 0.82315, rel=1e-4)
    assert attention_efficiency("hopper", 32768.0, "fa3") / attention_efficiency("hopper", 8192.0, "fa3") \
        == pytest.approx(0.94903 / 0.82315, rel=1e-4)


def test_a_file_written_for_the_old_tile_curve_is_refused_by_name():
    with pytest.raises(ValueError, match="flash_tile_tokens is no longer read: attention_half_tokens"):
        from_dict({"flash_tile_tokens": 128.0})
