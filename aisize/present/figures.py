"""Figures more than one surface shows (app tabs, report sections, CLI), each from one function here,
with the label that says what it is over, so the same label always carries the same value.
"""

from __future__ import annotations

from typing import NamedTuple

from aisize.format import num, sig


class Figure(NamedTuple):
    """A shown figure: its label (what and over what period), its value, and how it is worked out."""

    label: str
    value: float
    note: str


def gpus_busy(p) -> Figure:
    """Share of the installed GPU-hours that are busy over the cost's life (what owning is priced at)."""
    c = p.cost
    return Figure(f"GPUs busy over the {num(c.life_years)}-year life", c.gpu_utilisation,
                  "Busy GPU-hours / installed GPU-hours over the life; the phases repeat as a cycle, the last "
                  "(open-ended) phase runs on (aisize.plan.timeline.long_run_utilisation)")


def gpus_busy_timeline(p) -> Figure:
    """Share of the installed GPU-hours that are busy over the timeline drawn (its phases once)."""
    t = p.timeline
    return Figure(f"GPUs busy over the {sig(t.horizon_days)} days drawn", t.gpu_utilisation,
                  "Busy GPU-hours / installed GPU-hours from day 0 to the end of the timeline drawn")
