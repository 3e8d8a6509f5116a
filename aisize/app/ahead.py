"""Planning the next slider step while the page waits (issue 51 item 2).

A slider moved by the keyboard moves one step at a time, and the next move is most often the same slider one more
step the same way. After a move, once the kernel has nothing else to do (on the kernel's event loop, after the
move's messages, never beside a move), :class:`PlanAhead` plans the scenario with that slider one step further and keeps
the plan; when the next move asks for exactly that scenario the app shows the kept plan instead of planning it again.
A move to any other value plans as before, and any move first cancels a plan ahead not yet started. The kept plan is
the plan of the same scenario by the same function (the planner's warm memories change no figure: the warm-cold
tests), so a page shows the same figures either way.

What the browser sends on an ArrowRight is not ``value + step``: ipywidgets' sliders run noUiSlider 15, which steps
the handle in its own units (the exponent, on a log slider), snaps it to its step grid in percent of the range and
maps it back (:func:`next_value` repeats that arithmetic, operation for operation: noUiSlider 15's ``Spectrum`` and
keydown handler as ipywidgets 8.1 bundles them, read in voila's ``labextensions/widgets-manager8/static``). A value
the browser computes otherwise (its ``Math.pow`` a bit from Python's) only misses: the move plans as before.

``AISIZE_PLAN_AHEAD=0`` in the kernel's environment turns it off (a team server short of CPU: each step plans twice).
Outside a running event loop (tests, scripts, the report) nothing is planned ahead.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os

import ipywidgets as widgets

ENV = "AISIZE_PLAN_AHEAD"
SLIDERS = (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider)  # those whose key steps it repeats
TOTALS = {"planned": 0, "used": 0}  # of every state in this process (the move timer logs them)
# after the move: its messages handed to the IOPub thread are sent first (a plan ahead holding the GIL would delay
# them); much later and a quick next step comes before it
DELAY_S = 0.01


def _js_round(x: float) -> float:
    """JavaScript's ``Math.round``: the nearest integer, halves up (Python's ``round`` goes to even)."""
    down = math.floor(x)
    return float(down + 1 if x - down >= 0.5 else down)


def _decimals(step) -> int:
    """noUiSlider's ``countStepDecimals``: the digits after the point of the step as JavaScript writes it."""
    text = repr(float(step)) if not float(step).is_integer() else "0"
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


class _Range:
    """noUiSlider 15's ``Spectrum`` over one range [lo, hi] with a step (ipywidgets gives it no other)."""

    def __init__(self, lo: float, hi: float, step: float):
        self.lo, self.hi = float(lo), float(hi)
        self.pct_step = 100 * float(step) / (self.hi - self.lo) / (100 / (100 - 0))

    def to_stepping(self, value: float) -> float:
        if value >= self.hi:
            return 100.0
        x = value + abs(self.lo) if self.lo < 0 else value - self.lo
        return 0 + 100 * x / (self.hi - self.lo) / (100 / (100 - 0))

    def get_step(self, pct: float) -> float:
        if pct == 100:
            return pct
        return 0 + _js_round((pct - 0) / self.pct_step) * self.pct_step

    def from_stepping(self, pct: float) -> float:
        if pct >= 100:
            return self.hi
        return (pct - 0) * (100 / (100 - 0)) * (self.hi - self.lo) / 100 + self.lo

    def snapped(self, value: float) -> float:
        """The handle's position (percent) for a value set from outside (``noUiSlider.set``)."""
        return max(min(self.get_step(self.to_stepping(value)), 100.0), 0.0)


def next_value(slider, direction: int):
    """The value the browser sends when ``slider`` (an IntSlider, FloatSlider or FloatLogSlider) is moved one key
    step right (``direction`` 1) or left (-1) from its value; None at its end or for another widget."""
    if isinstance(slider, widgets.FloatLogSlider):
        span = _Range(slider.min, slider.max, slider.step)
        exponent = math.log(slider.value) / math.log(slider.base) if slider.value > 0 else slider.min
        handle = span.snapped(min(max(exponent, slider.min), slider.max))
    elif isinstance(slider, (widgets.IntSlider, widgets.FloatSlider)):
        span = _Range(slider.min, slider.max, slider.step)
        handle = span.snapped(float(slider.value))
    else:
        return None
    at = span.from_stepping(handle)
    if (direction > 0 and handle == 100) or (direction < 0 and handle == 0):
        return None
    step = float(slider.step)
    if direction > 0 and at + step > span.hi:
        step = span.hi - at
    step = float(f"{step:.{_decimals(slider.step)}f}")
    step = max(step, 1e-7) * (1 if direction > 0 else -1)
    pct = max(min(span.get_step(span.to_stepping(at + step)), 100.0), 0.0)
    if pct == handle:
        return None
    value = span.from_stepping(pct)
    if isinstance(slider, widgets.FloatLogSlider):
        return float(slider.base) ** value
    return int(_js_round(value)) if isinstance(slider, widgets.IntSlider) else value


class PlanAhead:
    """One plan ahead at a time for an :class:`~aisize.app.state.AppState`: scheduled after a move, cancelled by the
    next, kept until a move asks for its scenario."""

    def __init__(self, state):
        self.state = state
        self.pending = None  # the scheduled call (an asyncio.TimerHandle)
        self.kept = None  # (the scenario's fields, its plan)
        self.planned = self.used = 0  # plans made ahead; moves that showed one

    @staticmethod
    def enabled() -> bool:
        return os.environ.get(ENV, "1") != "0"

    def cancel(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None

    def schedule(self, edit) -> bool:
        """Plan the scenario ``edit(data)`` makes of the state's data (the moved slider's next step; None: none)
        once the kernel is idle; False where nothing waits (no running event loop) or it is off."""
        self.cancel()
        if edit is None or not self.enabled():
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self.pending = loop.call_later(DELAY_S, self.run, edit)
        return True

    def run(self, edit) -> None:
        """Plan ahead now (the scheduled call; tests call it directly). A scenario the state would refuse is not
        kept: the move to it is refused as before."""
        self.pending = None
        try:
            self.kept = self.state.plan_edited(edit)
        except Exception:  # noqa: BLE001 (a plan ahead must never break the page; the real move says what is wrong)
            logging.getLogger(__name__).debug("no plan ahead", exc_info=True)
            self.kept = None
            return
        self.planned += 1
        TOTALS["planned"] += 1

    def take(self, fields: dict, loaded: bool = False):
        """The kept plan where ``fields`` are its scenario's (an edit, not a scenario loaded), else None; either way
        it is dropped."""
        kept, self.kept = self.kept, None
        if kept is not None and not loaded and kept[0] == fields:
            self.used += 1
            TOTALS["used"] += 1
            return kept[1]
        return None
