"""Each training constant on the assumptions surface carries its own unit, mapped constants included.

A constant keyed by generation and kernel ("ATTENTION_HALF_TOKENS[volta, fa2]") was looked up by its whole name,
missed the unit table and fell back to a share: 104,000 tokens read "104000 %" (helper review, 2026-12-05)."""

from __future__ import annotations

import pytest

from aisize.present.assumption_text import _training_text
from aisize.training import efficiency_constants


@pytest.mark.parametrize("name, unit", [("ATTENTION_HALF_TOKENS[volta, fa2]", "tokens"),
                                        ("ATTENTION_HALF_TOKENS[hopper, fa3]", "tokens"),
                                        ("FLASH_TILE_TOKENS", "tokens"),
                                        ("GEMM_EFFICIENCY[hopper, 16-bit]", "%"),
                                        ("BACKWARD_BYTES_RATIO", "×")])
def test_a_mapped_constant_takes_its_base_names_unit(name, unit):
    label, got, _ = _training_text(name, "source")
    assert got == unit and "[" not in label and label.endswith("(training)")


def test_no_shipped_constant_in_tokens_reads_as_a_share():
    for c in efficiency_constants():
        _, unit, _ = _training_text(c["name"], c["source"])
        if "TOKENS" in c["name"]:
            assert unit == "tokens", c["name"]
        elif unit == "%":  # a share is at most 1 (an efficiency), never a count
            assert 0 < float(c["value"]) <= 1.0, (c["name"], c["value"])
