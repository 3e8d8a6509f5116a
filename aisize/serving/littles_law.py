"""Requests in flight at a request rate: the root of Little's law ``B = λ·O·T(B)`` for one replica, many at once.

:func:`littles_law_concurrency` is the solver every latency and sizing figure of a loaded replica stands on
(:mod:`aisize.serving.latency`); it is kept apart so that its steps, bracket and tolerance are read in one place.

References
----------
.. [1] Little 1961, "A proof for the queuing formula L = λW", Oper. Res. 9(3).
.. [2] Dowell & Jarratt 1971, "A modified regula falsi method for computing the root of an equation", BIT 11
   (the Illinois method: halve the stale end's value).
"""

from __future__ import annotations

import numpy as np
from aisize.serving.scalar_ops import LARGEST, clip_ufunc as _clip, divide, finite_clip, is_number, negate, where

__all__ = ["littles_law_concurrency"]
_SCAN = 2.0 ** -np.arange(23, -1, -1)  # where h is evaluated first, as shares of the slots (ascending)
_MAX_ITERATIONS = 24  # steps within that bracket, at most (a call settles in about 6)
# relative step below which a point has settled: the secant's error after a step of d is of order d**1.6, so
# a step of 1e-6 leaves the root good to about 1e-9 (1e-12 cost one or two more evaluations a solve and
# changed no published figure's check)
_TOLERANCE = 1e-6


def littles_law_concurrency(tokens_per_s, iteration_seconds, slots, bracket=None, scan_seconds=None):
    """Requests in flight B with ``B = λ·O·T(B)`` (Little's law), at most ``slots`` (vectorized).

    ``tokens_per_s`` is λ·O; ``iteration_seconds(B)`` the mean iteration at concurrency B (it must accept B with
    a leading axis of its own, and B with the slots' axes but not the rates'). The root of
    ``h(B) = λ·O·T(B) - B`` on (0, slots]; it returns ``slots`` where h(slots) >= 0 (the replica saturates). h
    falls as B grows, but not everywhere: the iteration time steps up where a grouped GEMM's tile or a
    CUDA-graph size fills, so h may cross zero more than once. The lowest crossing is the one a replica filling
    from empty settles at (B -> λ·O·T(B) rises to it), so one call first evaluates h at 0 and at slots / 2^k (k
    = 23 ... 0) and keeps the first bracket where h turns negative. Then each step takes the secant through the
    last two points evaluated where it falls inside the bracket, else the bracket's Illinois point (regula falsi
    alone crawled for dozens of steps where h is nearly flat beyond the root, near saturation). Each point stops
    at its own settling and is asked again at that root while others step on, so a batched point's root is the
    one it has alone (to ``iteration_seconds``'s elementwise bits), whatever is solved beside it. The array it
    returns is the last one it passed to ``iteration_seconds``, so a caller may keep that evaluation instead of
    repeating it.

    ``bracket``, when given, is ``(low, T(low), high, T(high))``: concurrencies known to hold the root
    between them (the roots of this solve at a lower and a higher rate), with their iteration times; the
    scan is then skipped. ``high`` may be ``slots`` with h(slots) >= 0, where the answer is ``slots``. A
    bracket that does not hold a point's root is set aside for the scan, for that point only.

    ``scan_seconds``, when given, stands in for ``iteration_seconds`` at the scan's points (the same values: a
    caller that kept them from a solve at another rate, since they do not depend on it).
    """
    rate = np.asarray(tokens_per_s, dtype=float)
    shape = np.broadcast(rate, slots).shape
    if bracket is not None:
        lo, t_lo, hi, t_hi = (np.broadcast_to(np.asarray(v, dtype=float), shape) for v in bracket)
        h_lo, h_hi = rate * t_lo - lo, rate * t_hi - hi
        # a bracket that does not hold the root (h must fall from >= 0 to <= 0, or end at the slots) is scanned for
        slack = 1e-9 * np.maximum(hi, 1e-9)
        off = (h_lo < -slack) | ((h_hi > slack) & (hi < np.broadcast_to(slots, shape)))
        if np.all(off):
            bracket = None
        elif np.any(off):  # each point's own bracket, or its scan where that does not hold its root
            found = _scan(rate, scan_seconds or iteration_seconds, slots, shape)
            lo, h_lo, hi, h_hi = (np.where(off, s, v) for s, v in zip(found, (lo, h_lo, hi, h_hi)))
    if bracket is None:
        lo, h_lo, hi, h_hi = _scan(rate, scan_seconds or iteration_seconds, slots, shape)
    # one root (the hot case) steps in plain floats, where each operation below gives numpy's float64 result to
    # the bit (the helpers keep numpy's division by zero, where, clip and nan_to_num); any array steps in numpy
    one = shape == () and all(is_number(v) for v in (lo, h_lo, hi, h_hi))
    if one:
        rate, lo, h_lo, hi, h_hi = (float(v) for v in (rate, lo, h_lo, hi, h_hi))
    elif shape:
        got = _array_steps(rate, iteration_seconds, lo, h_lo, hi, h_hi)
        if got is not None:
            return got
    # the secant of the last two points lands on a kink from its flat side at once
    side = 0 if one else np.zeros(shape)
    p, h_p, b, h_b = lo, h_lo, hi, h_hi
    frozen = None  # of many points, those settled: each is asked again at the x it settled at (its root)
    for _ in range(_MAX_ITERATIONS):
        secant = b - divide(h_b * (b - p), h_b - h_p)
        falsi = divide(lo * h_hi - hi * h_lo, h_hi - h_lo)
        inside = (secant > lo) & (secant < hi)
        x = where(h_hi >= 0, hi, where(inside, secant, falsi))
        x = finite_clip(x, lo, hi)
        if frozen is not None:
            x = np.where(frozen, b, x)
        asked = np.float64(x) if one else x  # what numpy's steps gave: the root returned is the last one asked
        t = iteration_seconds(asked)
        one = one and is_number(t)  # an iteration time with axes of its own: numpy from here on
        h_x = rate * (float(t) if one else t) - x
        settled = abs(x - b) <= _TOLERANCE * x  # x is the root to rounding
        if np.all(settled):  # every point settled
            return asked
        if not one and np.ndim(settled):  # a point stops at its own settling, whatever else is solved beside it
            frozen = settled if frozen is None else frozen | settled
        p, h_p, b, h_b = b, h_b, x, h_x
        last = asked
        right = h_x < 0  # the root is at or below x
        hi, h_hi = where(right, x, hi), where(right, h_x, h_hi)
        lo, h_lo = where(right, lo, x), where(right, h_lo, h_x)
        h_lo = where(right & (side == -1), h_lo / 2, h_lo)  # Illinois: halve the stale end
        h_hi = where(negate(right) & (side == 1), h_hi / 2, h_hi)
        side = where(right, -1, 1)
    return last


def _array_steps(rate, iteration_seconds, lo, h_lo, hi, h_hi):
    """:func:`littles_law_concurrency`'s steps on an array of roots from its bracket: the loop below it, each
    array the same to the bit, with fewer numpy calls (a step's own cost is most of it on a few dozen points:
    ``np.where`` as ``np.copyto`` into the bracket's own copies, nan_to_num only where some x is not finite, the
    clip's ufunc without its wrapper, one ``errstate`` for every division, Illinois's halving where it applies).
    Every x passed to ``iteration_seconds`` is a new array, never written after (a caller keeps it). None where the
    iteration time has axes the roots do not (the loop broadcasts them; nothing here has them)."""
    p, h_p, b, h_b = lo, h_lo, hi, h_hi
    lo, h_lo, hi, h_hi = (np.array(v, dtype=float) for v in (lo, h_lo, hi, h_hi))  # the bracket, updated in place
    frozen = was_right = was_left = last = None  # settled points; the side each point's last step fell on
    for _ in range(_MAX_ITERATIONS):
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.divide(lo * h_hi - hi * h_lo, h_hi - h_lo)  # Illinois's point ...
            secant = b - np.divide(h_b * (b - p), h_b - h_p)
        np.copyto(x, secant, where=(secant > lo) & (secant < hi))  # ... or the secant where it falls inside
        np.copyto(x, hi, where=h_hi >= 0)  # saturated
        if not np.isfinite(x).all():
            x = np.where(np.isnan(x), 1e-9, np.where(np.isinf(x), np.copysign(LARGEST, x), x))
        _clip(x, lo, hi, out=x)
        if frozen is not None:
            np.copyto(x, b, where=frozen)
        h_x = rate * iteration_seconds(x) - x
        if h_x.shape != x.shape:
            return None  # an iteration time with axes of its own: the loop that broadcasts them, from the start
        settled = np.abs(x - b) <= _TOLERANCE * x
        if settled.all():
            return x
        frozen = settled if frozen is None else frozen | settled
        p, h_p, b, h_b, last = b, h_b, x, h_x, x
        right = h_x < 0  # the root is at or below x
        left = ~right
        np.copyto(hi, x, where=right)
        np.copyto(h_hi, h_x, where=right)
        np.copyto(lo, x, where=left)
        np.copyto(h_lo, h_x, where=left)
        if was_right is not None:  # Illinois: halve the stale end
            stale = right & was_right
            if stale.any():
                np.divide(h_lo, 2, out=h_lo, where=stale)
            stale = left & was_left
            if stale.any():
                np.divide(h_hi, 2, out=h_hi, where=stale)
        was_right, was_left = right, left
    return last


def _scan(rate, iteration_seconds, slots, shape):
    """The first bracket of h(B) = rate·T(B) - B on 1e-9 and slots / 2^k (k = 23 ... 0) where h turns
    negative, as (low, h(low), high, h(high)); the top, h(slots) >= 0, where it never does. T depends on B
    alone, so the points span the slots' axes only and every rate reads the same evaluation."""
    top = np.maximum(np.asarray(slots, dtype=float), 1e-9)
    top = top.reshape((1,) * (len(shape) - top.ndim) + top.shape)
    points = np.concatenate([np.full((1,) + top.shape, 1e-9), top * _SCAN.reshape((-1,) + (1,) * len(shape))])
    h = rate * iteration_seconds(points) - points
    points = np.broadcast_to(points, h.shape)
    below = h < 0
    if h.ndim == 1:  # one root: the same elements by plain indexing (take_along_axis's [0] is a numpy scalar)
        k = int(np.argmax(below)) if below.any() else len(points) - 1
        j = max(k - 1, 0)
        return points[j], h[j], points[k], h[k]
    k = np.where(below.any(axis=0), np.argmax(below, axis=0), len(points) - 1)[None]
    before = np.maximum(k - 1, 0)
    return (np.take_along_axis(points, before, 0)[0], np.take_along_axis(h, before, 0)[0],
            np.take_along_axis(points, k, 0)[0], np.take_along_axis(h, k, 0)[0])
