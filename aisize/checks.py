"""Input checks used where values enter the package.

Every public function checks its inputs with these before any arithmetic, so a
bad value fails with a ``ValueError`` that names the parameter, the value and
what is allowed, instead of surfacing later as NaN, a negative time or a numpy
traceback. Each check accepts a scalar or an array (for vectorized sweeps) and
returns it as a float or a float ndarray.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterable
from numbers import Real

import numpy as np

# Anything larger is a typo, not a cluster (1e30 bytes is a million yottabytes).
ABSURD = 1e30

# The most of each count a plan derives from its inputs (:func:`count`): past these it refuses by name before it
# builds anything sized by the count (a tuple per replica, a packer's record per server).
MAX_GPUS = 10**7  # the engines' limit on ranks (aisize.plan.job.MAX_GPUS), 10x the largest sites announced
MAX_REPLICAS = 10**6  # the queueing models' limit on servers (aisize.queueing.analytic.MAX_SERVERS)
MAX_SERVERS = 100_000  # an 800,000-GPU site of 8-GPU servers (the largest announced, xAI's Colossus 2, plans ~1M
# GPUs); the packer keeps ~3 kB per server (~0.35 GB for these) ...
MAX_SERVER_SLOTS = 1_000_000  # ... and ~0.7 kB per server in each time slot it is used (~0.7 GB for these): with
# phases and hour windows cutting time into S slots, a plan holds at most MAX_SERVER_SLOTS / S servers


def _as_numeric(name: str, value):
    kind = type(value)
    if kind is float or kind is int:  # the common cases first, without the abstract-class checks below
        return float(value)
    if kind is np.ndarray and value.dtype == np.float64 and value.size:  # already what asarray would give
        return value
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        raise ValueError(f"{name}={value!r} is not allowed: must be a number")
    if isinstance(value, Real):
        return float(value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not allowed: must be a number or an array of numbers") from None
    if arr.dtype == object or arr.size == 0:
        raise ValueError(f"{name}={value!r} is not allowed: must be a number or a non-empty array of numbers")
    return arr


def _fail(name: str, value, rule: str):
    arr = np.asarray(value)
    shown = value if arr.ndim == 0 else f"array containing {arr.flat[0]!r}"
    raise ValueError(f"{name}={shown!r} is not allowed: must be {rule}")


def _first_bad(arr, mask):
    return arr if np.ndim(arr) == 0 else np.asarray(arr)[mask].flat[0]


def number(name: str, value, *, low: float = -ABSURD, high: float = ABSURD,
           low_inclusive: bool = True, high_inclusive: bool = True):
    """Check that ``value`` is finite and within [low, high] (ends as chosen)."""
    v = _as_numeric(name, value)
    if (type(v) is float and math.isfinite(v)  # a valid scalar, without numpy's per-call overhead
            and ((v >= low) if low_inclusive else (v > low)) and ((v <= high) if high_inclusive else (v < high))):
        return v
    if type(v) is np.ndarray:  # a valid array in two reductions (NaN propagates through both)
        least, most = float(v.min()), float(v.max())
        if (math.isfinite(least) and math.isfinite(most) and ((least >= low) if low_inclusive else (least > low))
                and ((most <= high) if high_inclusive else (most < high))):
            return v
    lo_ok = (v >= low) if low_inclusive else (v > low)
    hi_ok = (v <= high) if high_inclusive else (v < high)
    bad = ~(np.isfinite(v) & lo_ok & hi_ok)
    if np.any(bad):
        lo = "[" if low_inclusive else "("
        hi = "]" if high_inclusive else ")"
        _fail(name, _first_bad(v, bad), f"a finite number in {lo}{low:g}, {high:g}{hi}")
    return v


def positive(name: str, value, *, high: float = ABSURD):
    """Check ``0 < value <= high``."""
    return number(name, value, low=0.0, high=high, low_inclusive=False)


def non_negative(name: str, value, *, high: float = ABSURD):
    """Check ``0 <= value <= high``."""
    return number(name, value, low=0.0, high=high)


def fraction(name: str, value, *, allow_zero: bool = False):
    """Check a share or utilisation: ``0 < value <= 1`` (``0 <= value`` if allowed)."""
    return number(name, value, low=0.0, high=1.0, low_inclusive=allow_zero)


def integer(name: str, value, *, low: int = 1, high: int = 10**12):
    """Check a whole number (scalar or array) in ``[low, high]``; returns int or int ndarray."""
    v = number(name, value, low=low, high=high)
    if type(v) is float:
        if v.is_integer():
            return int(v)
        _fail(name, v, f"a whole number in [{low}, {high}]")
    whole = v.astype(np.int64)  # |v| <= high was checked (only a seed bound, 2**63 - 1, reaches past int64)
    bad = whole != v
    if bad.any():
        _fail(name, _first_bad(v, bad), f"a whole number in [{low}, {high}]")
    return int(whole) if whole.ndim == 0 else whole


def choice(name: str, value, allowed: Iterable):
    """Check that ``value`` is one of ``allowed``."""
    allowed = list(allowed)
    if isinstance(value, Iterable) and not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed: must be one of {', '.join(map(repr, allowed))}")
    return value


def flag(name: str, value) -> bool:
    """Check a yes/no switch: True or False (numpy bools and 0/1 too), never text or None."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return bool(value)
    raise ValueError(f"{name}={value!r} is not allowed: must be True or False")


def scalar(name: str, value) -> float:
    """``value`` (checked by one of the above) as one float; an array is refused, naming ``name``.

    For parameters that take no array, e.g. ``scalar("params", positive("params", params))``.
    """
    if np.ndim(value) != 0:
        raise ValueError(f"{name}={value!r} is not allowed: must be a single number, not an array")
    return float(value)


def read_file(name: str, path, limit_bytes: int) -> bytes:
    """The bytes of the regular file ``path``; ValueError if it is not one or holds more than ``limit_bytes``.

    Opened without blocking (a FIFO does not wait for a writer) and checked on the open file itself, so a
    device such as ``/dev/zero`` (which reports 0 bytes and never ends) is refused before anything is read.
    OSError (missing, unreadable) is left to the caller, which knows what the file was for.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before open(): it refuses a folder with its own IsADirectoryError
        os.close(fd)
        raise ValueError(f"{name}={str(path)!r} is not a regular file (a folder, device, FIFO or socket)")
    with open(fd, "rb") as file:
        raw = file.read(limit_bytes + 1)
    if len(raw) > limit_bytes:
        raise ValueError(f"{name}={str(path)!r} is larger than allowed: at most {limit_bytes:,} bytes")
    return raw


class CountError(ValueError):
    """A count the plan derived (replicas, GPUs, servers, ...) is past its limit (:func:`count`)."""


def count(what: str, value, limit: int, *, why: str = "") -> int:
    """Check a count a plan derived from its inputs before anything proportional to it is built.

    ``what`` names it in the user's words ("model replicas", "GPUs"); ``why`` says which inputs drove it.
    Returns it as an int; raises :class:`CountError` ("needs 1,650,000,000 model replicas, more than aisize
    plans (1,000,000): <why>") past ``limit``, and for a negative, infinite or NaN count.
    """
    v = float(value)
    if 0 <= v <= limit:
        return int(v)
    shown = f"{v:,.0f}" if math.isfinite(v) and abs(v) < 1e15 else ("infinitely many" if v == math.inf else f"{v:g}")
    raise CountError(f"needs {shown} {what}, more than aisize plans ({limit:,})" + (f": {why}" if why else ""))


def json_value(text: str, where: str):
    """``text`` parsed as JSON, or a ValueError starting with ``where`` that says why (and at which line)."""
    import json

    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{where} is not JSON: {getattr(e, 'msg', 'nested too deep')}"
                         + (f" at line {e.lineno}" if hasattr(e, "lineno") else "")) from None


def printable(where: str, name: str, value, limit: int) -> str:
    """``value`` if it is text of 1 to ``limit`` printable characters, else a ValueError naming it."""
    if not isinstance(value, str) or not value.strip() or len(value) > limit or not value.isprintable():
        raise ValueError(f"{where}: {name}={str(value)[:60]!r} is not allowed: text of 1 to {limit} printable "
                         "characters")
    return value


def merged(given: dict, base: dict, where: str) -> dict:
    """``base`` updated by ``given``, refusing a key of ``given`` that ``base`` lacks (a settings file's keys)."""
    unknown = set(given) - set(base)
    if unknown:
        raise ValueError(f"{where} has unknown keys {sorted(map(str, unknown))[:5]!r}; allowed: {', '.join(base)}")
    return {**base, **given}
