"""`aisize validate --cross-validate` names every kernel/roofline switch of the calibration it cross-validates, so a
table of scores says which sources produced it (a new `*_source` field must be printed, and listed here, too)."""

from dataclasses import fields, replace

from aisize.serving import CALIBRATION
from aisize.validation.cli import cross_validation_lines

LABELS = {"gemm_source": "GEMMs", "moe_source": "MoE", "attention_source": "attention",
          "allreduce_source": "all-reduce", "gather_source": "attention-DP gather",
          "moe_layer_source": "MoE-layer time", "elementwise_source": "elementwise"}


def test_the_header_names_every_source_switch():
    sources = [f.name for f in fields(CALIBRATION) if f.name.endswith("_source")]
    assert sorted(sources) == sorted(LABELS)
    lines = cross_validation_lines([], 1)[1:3]  # the sources, on two lines
    assert all(len(line) <= 120 for line in lines), lines  # within the CLI's width
    header = " ".join(lines)
    for name in sources:
        assert f"{getattr(CALIBRATION, name)} {LABELS[name]}" in header, (name, header)


def test_the_header_follows_the_calibration_given():
    cal = replace(CALIBRATION, gather_source="roofline", moe_layer_source="format_kernels")
    header = " ".join(cross_validation_lines([], 1, calibration=cal)[1:3])
    assert "roofline attention-DP gather" in header and "format_kernels MoE-layer time" in header
