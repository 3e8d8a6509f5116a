"""Unit constants and conversions, the one place where units meet.

aisize computes in base units: bytes, bytes per second, FLOP, FLOP per second,
seconds, watts. Decimal (SI) prefixes are used for rates and capacities, binary
prefixes where the thing is binary (HBM as ``nvidia-smi`` shows it, MLPerf
Storage's "MB/s", which are MiB/s). See docs/DESIGN.md section 3.

Catalog tables state each figure in the unit of its source, written in the
column header (``memory [GB]``, ``bandwidth [Gbit/s]``); :func:`to_base` turns
such a figure into base units and :data:`UNITS` says which units exist.

References
----------
.. [1] BIPM, The International System of Units (SI), 9th ed., 2019, section 3.
.. [2] IEC 80000-13:2008, binary prefixes (KiB, MiB, GiB, TiB).
"""

from __future__ import annotations

from typing import NamedTuple

# Decimal (SI) byte multiples [bytes]
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15

# Binary byte multiples [bytes]
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40

BITS_PER_BYTE = 8

# FLOP multiples [FLOP]
TFLOP = 1e12
PFLOP = 1e15

# Time [s]
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0


class Unit(NamedTuple):
    """A unit a catalog column may be stated in."""

    dimension: str  # base quantity it measures, e.g. "bytes_per_s"
    factor: float  # multiply a value in this unit by factor to get base units


# dimension -> the suffix its base unit gets in record field names
BASE_SUFFIX = {
    "bytes": "bytes",
    "bytes_per_s": "bytes_per_s",
    "flops_per_s": "flops_per_s",
    "flops": "flops",
    "watts": "watts",
    "seconds": "seconds",
    "count": "count",
    "per_s": "per_s",
    "ratio": "ratio",
}

UNITS: dict[str, Unit] = {
    # capacities
    "B": Unit("bytes", 1.0),
    "KB": Unit("bytes", KB),
    "MB": Unit("bytes", MB),
    "GB": Unit("bytes", GB),
    "TB": Unit("bytes", TB),
    "PB": Unit("bytes", PB),
    "KiB": Unit("bytes", KiB),
    "MiB": Unit("bytes", MiB),
    "GiB": Unit("bytes", GiB),
    "TiB": Unit("bytes", TiB),
    # data rates
    "B/s": Unit("bytes_per_s", 1.0),
    "MB/s": Unit("bytes_per_s", MB),
    "GB/s": Unit("bytes_per_s", GB),
    "TB/s": Unit("bytes_per_s", TB),
    "MiB/s": Unit("bytes_per_s", MiB),
    "GiB/s": Unit("bytes_per_s", GiB),
    "Mbit/s": Unit("bytes_per_s", 1e6 / BITS_PER_BYTE),
    "Gbit/s": Unit("bytes_per_s", 1e9 / BITS_PER_BYTE),
    "Tbit/s": Unit("bytes_per_s", 1e12 / BITS_PER_BYTE),
    # compute
    "FLOP": Unit("flops", 1.0),
    "GFLOP": Unit("flops", 1e9),
    "TFLOP": Unit("flops", TFLOP),
    "PFLOP": Unit("flops", PFLOP),
    "TFLOP/s": Unit("flops_per_s", TFLOP),
    "PFLOP/s": Unit("flops_per_s", PFLOP),
    # power, time, counts, rates, ratios
    "W": Unit("watts", 1.0),
    "kW": Unit("watts", 1e3),
    "s": Unit("seconds", 1.0),
    "ms": Unit("seconds", 1e-3),
    "us": Unit("seconds", 1e-6),
    "ns": Unit("seconds", 1e-9),
    "h": Unit("seconds", HOUR),
    "count": Unit("count", 1.0),
    "thousand": Unit("count", 1e3),
    "million": Unit("count", 1e6),
    "billion": Unit("count", 1e9),
    "trillion": Unit("count", 1e12),
    "/s": Unit("per_s", 1.0),
    "K/s": Unit("per_s", 1e3),
    "M/s": Unit("per_s", 1e6),
    "T/s": Unit("per_s", 1e12),
    "ratio": Unit("ratio", 1.0),
    "%": Unit("ratio", 0.01),
}


def to_base(value: float, unit: str) -> float:
    """Convert ``value`` stated in ``unit`` (a key of :data:`UNITS`) to base units."""
    try:
        return value * UNITS[unit].factor
    except KeyError:
        raise ValueError(f"unit={unit!r} is unknown; allowed: {', '.join(UNITS)}") from None


def gbit_per_s_to_bytes_per_s(gbit_per_s):
    """Link rate in Gbit/s [10^9 bit/s] to bytes per second [B/s]."""
    return gbit_per_s * 1e9 / BITS_PER_BYTE


def bytes_per_s_to_gbit_per_s(bytes_per_s):
    """Bytes per second [B/s] to Gbit/s [10^9 bit/s]."""
    return bytes_per_s * BITS_PER_BYTE / 1e9


def bidirectional_to_per_direction(bytes_per_s):
    """A vendor's both-directions-together figure to one direction [B/s].

    NVIDIA quotes NVLink per GPU as the sum of both directions (H100: 900 GB/s
    is 450 GB/s each way); PCIe and network figures are usually per direction.
    """
    return bytes_per_s / 2.0
