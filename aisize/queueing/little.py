"""Little's law: occupancy = rate × time in system.

For storage the same law reads: outstanding IOs (queue depth) = IOPS × latency.
It holds for any stable system in steady state, whatever the arrival and
service distributions or the scheduling order.
"""

from __future__ import annotations

import numpy as np

from aisize import checks


def _out(x):
    return float(x) if np.ndim(x) == 0 else x


def little(*, in_system=None, rate_per_s=None, time_seconds=None):
    """Little's law L = λ·W: give any two of the three, get the third.

    Parameters
    ----------
    in_system : float or array, optional
        Mean number in the system L (jobs, requests, outstanding IOs) [1], > 0.
    rate_per_s : float or array, optional
        Throughput λ (completions per second) [1/s], > 0.
    time_seconds : float or array, optional
        Mean time in the system W [s], > 0.

    Returns the missing quantity (float or array). Exactly two must be given.

    References
    ----------
    .. [1] J. D. C. Little, "A proof for the queuing formula L = λW",
       Operations Research 9(3), 1961, 383–387.
    """
    given = {k: v for k, v in (("in_system", in_system), ("rate_per_s", rate_per_s),
                               ("time_seconds", time_seconds)) if v is not None}
    if len(given) != 2:
        raise ValueError(
            f"little() got {sorted(given) or 'nothing'}: must be given exactly two of "
            "in_system, rate_per_s, time_seconds")
    v = {k: checks.positive(k, x) for k, x in given.items()}
    if "in_system" not in v:
        return _out(v["rate_per_s"] * v["time_seconds"])
    if "rate_per_s" not in v:
        return _out(v["in_system"] / v["time_seconds"])
    return _out(v["in_system"] / v["rate_per_s"])


def outstanding_ios(iops_per_s, latency_seconds):
    """Outstanding IOs (queue depth) a storage system holds: IOPS × latency.

    Parameters
    ----------
    iops_per_s : float or array
        IO operations completed per second [1/s], > 0.
    latency_seconds : float or array
        Mean IO latency [s], > 0.

    Example: 2.5 M IOPS at 200 µs needs 500 IOs in flight.

    References
    ----------
    .. [1] Little, Operations Research 9(3), 1961 (L = λ·W).
    """
    return little(rate_per_s=checks.positive("iops_per_s", iops_per_s),
                  time_seconds=checks.positive("latency_seconds", latency_seconds))
