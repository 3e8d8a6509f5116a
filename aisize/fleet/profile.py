"""A service's load through the day: a request rate that holds from each start time to the next.

Given as 24 hourly or 96 quarter-hour values, or as a CSV of (time of day, rate) rows; the day
repeats (the last value holds until midnight). All figures per day are exact integrals of this
step function.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aisize import checks
from aisize.units import DAY, HOUR

STEPS = {24: 60.0, 96: 15.0}  # values a day -> minutes each
MAX_POINTS = 10_000  # a CSV longer than this is not a day's profile


@dataclass(frozen=True)
class LoadProfile:
    """Request rate over the day: ``rates_per_s[i]`` holds from ``start_seconds[i]`` to the next start."""

    start_seconds: tuple[float, ...]  # first is 0, increasing, below one day
    rates_per_s: tuple[float, ...]  # >= 0

    def rate_at(self, seconds):
        """The rate at times of day ``seconds`` (wrapping at midnight) [1/s] (vectorized)."""
        t = np.mod(np.asarray(seconds, dtype=float), DAY)
        i = np.searchsorted(np.asarray(self.start_seconds), t, side="right") - 1
        return np.asarray(self.rates_per_s)[i]

    @property
    def durations_seconds(self) -> np.ndarray:
        return np.diff(np.append(self.start_seconds, DAY))

    @property
    def peak_per_s(self) -> float:
        return float(max(self.rates_per_s))

    @property
    def mean_per_s(self) -> float:
        return float(np.dot(self.rates_per_s, self.durations_seconds) / DAY)

    @property
    def requests_per_day(self) -> float:
        return self.mean_per_s * DAY

    @property
    def peak_to_mean(self) -> float:
        return self.peak_per_s / self.mean_per_s if self.mean_per_s > 0 else float("inf")

    def mean_over(self, start_seconds, end_seconds):
        """Mean rate over [start, end) (same day, end > start) [1/s], vectorized: what a meter averaging
        over a window reads."""
        a, b = np.asarray(start_seconds, dtype=float), np.asarray(end_seconds, dtype=float)
        return (self._integral(b) - self._integral(a)) / np.maximum(b - a, 1e-12)

    def _integral(self, t):
        """Requests from midnight of day 0 to ``t`` (any real t, whole days add a day's requests)."""
        days, within = np.divmod(np.asarray(t, dtype=float), DAY)
        starts = np.asarray(self.start_seconds)
        rates = np.asarray(self.rates_per_s)
        cum = np.concatenate(([0.0], np.cumsum(rates * self.durations_seconds)))
        i = np.searchsorted(starts, within, side="right") - 1
        return days * cum[-1] + cum[i] + rates[i] * (within - starts[i])

    def scaled(self, factor: float) -> LoadProfile:
        """The same shape at ``factor`` times the rate."""
        f = checks.scalar("factor", checks.non_negative("factor", factor))
        return LoadProfile(self.start_seconds, tuple(r * f for r in self.rates_per_s))


def _rates(values, field: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{field}={values!r} is not allowed: must be a list of numbers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{field} is not allowed: must be a non-empty list of numbers")
    for i, v in enumerate(arr):
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"{field}[{i}]={values[i]!r} is not allowed: a rate must be a finite number >= 0")
    if not arr.any():
        raise ValueError(f"{field} is not allowed: every rate is 0 (the service would never run)")
    return arr


def profile(values, *, scale=1.0, field: str = "load_profile") -> LoadProfile:
    """A profile from 24 hourly or 96 quarter-hour values, each multiplied by ``scale`` [1/s].

    Raises ValueError naming ``field[i]`` for a negative, infinite or missing value, and ``field``
    for a count other than 24 or 96.
    """
    rates = _rates(values, field)
    if rates.size not in STEPS:
        raise ValueError(f"{field} has {rates.size} values: give 24 (hourly) or 96 (every 15 minutes)")
    k = checks.scalar("scale", checks.positive("scale", scale))
    step = DAY / rates.size
    return LoadProfile(tuple(float(i * step) for i in range(rates.size)), tuple(float(r * k) for r in rates))


def _hour_of(text: str, field: str, row: int) -> float:
    text = text.strip()
    try:
        if ":" in text:
            hh, mm = text.split(":", 1)
            return int(hh) + float(mm) / 60.0
        return float(text)
    except ValueError:
        raise ValueError(f"{field} row {row}: time {text!r} is not allowed: give hours (7.5) or HH:MM "
                         "(07:30)") from None


def from_csv(source, *, scale=1.0, field: str = "load_profile.csv") -> LoadProfile:
    """A profile from CSV text or a file (a :class:`~pathlib.Path`): a header with ``time`` (hours or HH:MM)
    and ``requests_per_s``.

    Rows in increasing time from 0 (midnight) to before 24; each rate holds until the next row. A file is
    read as a regular file of at most :data:`aisize.scenario.paths.MAX_CSV_BYTES` (never a device or FIFO).
    """
    if isinstance(source, Path):
        from aisize.scenario.paths import MAX_CSV_BYTES, read_named_file

        text = read_named_file(str(source), field=field, max_bytes=MAX_CSV_BYTES)
    else:
        text = str(source)
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or not {"time", "requests_per_s"} <= set(rows[0]):
        raise ValueError(f"{field}: needs a header with the columns time and requests_per_s")
    if len(rows) > MAX_POINTS:
        raise ValueError(f"{field}: {len(rows)} rows is not allowed: at most {MAX_POINTS:,}")
    hours = [_hour_of(r["time"], field, i + 2) for i, r in enumerate(rows)]
    if hours[0] != 0.0:
        raise ValueError(f"{field}: the first row's time must be 0 (midnight), not {hours[0]:g}")
    for i in range(1, len(hours)):
        if not hours[i - 1] < hours[i] < 24.0:
            raise ValueError(f"{field} row {i + 2}: time {hours[i]:g} h is not allowed: times must increase "
                             "and stay below 24")
    rates = _rates([_number(r["requests_per_s"], field, i + 2) for i, r in enumerate(rows)],
                   f"{field}.requests_per_s")
    k = checks.scalar("scale", checks.positive("scale", scale))
    return LoadProfile(tuple(h * HOUR for h in hours), tuple(float(r * k) for r in rates))


def _number(text, field, row) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{field} row {row}: requests_per_s {text!r} is not a number") from None
