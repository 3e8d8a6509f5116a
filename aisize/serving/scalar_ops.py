"""numpy's float64 operations on one plain number, by the same steps, to the bit.

The serving solve steps one Little's-law root at a time on a slider move (:func:`aisize.serving.latency.
littles_law_concurrency`), where numpy's cost per call on one number is most of the time. Each function here is
numpy's operation where its operands are arrays and the same IEEE steps in plain floats where they are single
numbers (division by zero, NaN, infinities and signed zeros as numpy gives them); tests/test_solve_per_call.py
compares them bit for bit. Measured in docs/speed-solve.md.
"""

from __future__ import annotations

import math

import numpy as np
try:  # np.clip's ufunc, what np.clip calls for float bounds on floats (its wrapper costs 3 x the clip)
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # numpy 1.x
    from numpy.core.umath import clip as clip_ufunc

NUMBERS = (float, np.float64)


def is_number(x) -> bool:
    """``x`` is one float64 number (a float, a numpy float64 or a 0-d float64 array)."""
    return type(x) in NUMBERS or (type(x) is np.ndarray and x.ndim == 0 and x.dtype.char == "d")


def divide(a, b):
    """``a / b`` as numpy divides float64 (IEEE: a zero divisor gives ±inf or NaN, never an error)."""
    if type(a) is float and type(b) is float and b != 0.0:
        return a / b
    with np.errstate(invalid="ignore", divide="ignore"):  # a zero divisor's inf or NaN, bits and all, numpy's
        return float(np.float64(a) / b) if type(a) is float and type(b) is float else a / b


def where(c, a, b):
    """``np.where(c, a, b)``; for a plain condition between plain floats or ints, the one chosen, as is."""
    if type(c) is bool and type(a) in PLAIN and type(b) in PLAIN:
        return a if c else b
    return np.where(c, a, b)


PLAIN = (float, int)


def negate(c):
    """``~c`` of a boolean array; ``not c`` of a plain bool (whose ``~`` is an int's)."""
    return (not c) if type(c) is bool else ~c


def finite_clip(x, lo, hi):
    """``np.clip(np.nan_to_num(x, nan=1e-9), lo, hi)``; for plain floats the same steps as numpy's on one number
    (NaN to 1e-9, ±inf to ±the largest float, then x below lo to lo and above hi to hi, a NaN bound kept)."""
    if type(x) is float and type(lo) is float and type(hi) is float:
        if x != x:
            x = 1e-9
        elif x in (math.inf, -math.inf):
            x = math.copysign(LARGEST, x)
        y = x if x >= lo else lo  # numpy's clip of one number (signed zeros and NaN bounds as it keeps them)
        return y if (y != y or y <= hi) else hi
    # nan_to_num's replacements by where (its Python wrapper is most of its time on a few rates)
    x = np.where(np.isnan(x), 1e-9, np.where(np.isinf(x), np.copysign(LARGEST, x), x))
    return np.clip(x, lo, hi)


LARGEST = float(np.finfo(float).max)
