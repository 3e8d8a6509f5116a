"""Latency curves of a plan's queues, for charts: the stations are the ones the planner sized.

Open system (requests arrive at a rate): :func:`latency_curve` of an inference
service. Closed system (a fixed number of requests outstanding):
:func:`concurrency_curve` of any planned station, :func:`storage_latency_curve`
of the shared storage. The stations come from ``StoragePlan.station`` and
``InferencePlan.station``, so a chart never rebuilds one from planner constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aisize import checks
from aisize.plan.inference import InferencePlan
from aisize.plan.storage import StoragePlan
from aisize.queueing import Station, latency_vs_concurrency
from aisize.serving.curves import latency_curve as serving_latency_curve
from aisize.serving.pools import disaggregated_curve
from aisize.storage.published import node_ops_ceiling_per_s

# Where the storage queue's unloaded latency comes from (StorageQueueBasis.latency_source), worded by
# aisize.present.storage_text: the system's own published figure, or the planner's default, typical of
# published all-flash file systems (aisize.storage.published, docs/storage.md).
LATENCY_PUBLISHED = "published"
LATENCY_TYPICAL = "typical"
DERIVED_IOPS = "IOPS DERIVED"  # the words data/storage.csv puts in a row's source when its IOPS are not measured
STORAGE_CURVE_POINTS = 60
STORAGE_CURVE_SPAN = (2.0, 1.2)  # default storage curve: to 2x the knee or 1.2x the blend, whichever is more


def latency_curve(p: InferencePlan, points: int = 50) -> pd.DataFrame:
    """Latency vs request rate for a planned service (open system): a DataFrame up to 99 % load.

    Parameters
    ----------
    p : an :class:`InferencePlan` (its replica estimate and replica count)
    points : rates from 1 % to 99 % of the fleet's capacity [count]

    Returns
    -------
    DataFrame: ``requests_per_s`` (fleet) [1/s], ``utilisation`` [1], ``latency_mean_seconds`` and
    ``latency_p95_seconds`` (request, end to end), ``ttft_seconds``, ``ttft_p95_seconds``,
    ``tpot_seconds``, ``tpot_p95_seconds`` [s].

    References
    ----------
    .. [1] :func:`aisize.serving.curves.latency_curve` (iteration model under Poisson load).
    """
    n = int(checks.scalar("points", checks.integer("points", points, low=2, high=10**6)))
    if p.serving_mode == "disaggregated":
        return _pools_curve(p, n)
    if p.estimate is None or not p.estimate.feasible:
        raise ValueError(f"service {p.name!r} has no feasible replica, so it has no latency curve")
    return serving_latency_curve(p.estimate, n, replicas=max(p.replicas, 1))


def _pools_curve(p: InferencePlan, points: int) -> pd.DataFrame:
    """Latency vs rate of a disaggregated service's fixed pools, up to the first overload."""
    return pd.DataFrame(disaggregated_curve(p.pools_estimate, points))


def concurrency_curve(station: Station, concurrency) -> pd.DataFrame:
    """Throughput and mean latency at each number of requests kept outstanding (closed system).

    Parameters
    ----------
    station : a planned station (``StoragePlan.station``, ``InferencePlan.station``)
    concurrency : requests (IOs) outstanding [count], > 0, scalar or array

    Returns
    -------
    DataFrame: ``concurrency``, ``throughput_per_s`` [1/s], ``response_mean_seconds`` [s],
    ``utilisation`` [1].

    References
    ----------
    .. [1] :func:`aisize.queueing.latency_vs_concurrency` (MVA for one station, Lazowska et al. 1984, ch. 6
       and 8; a storage station is its fitted load curve read at N = X·R(X), docs/storage.md).
    """
    c = latency_vs_concurrency(station, np.atleast_1d(np.asarray(concurrency, dtype=float)))
    return pd.DataFrame({"concurrency": c.concurrency, "throughput_per_s": c.throughput_per_s,
                         "response_mean_seconds": c.response_mean_seconds, "utilisation": c.utilisation})


def storage_latency_curve(plan, concurrency=None, points: int = STORAGE_CURVE_POINTS) -> pd.DataFrame:
    """Mean IO latency of the shared storage against outstanding IOs: :func:`concurrency_curve` of its station,
    the same fitted curve as the plan's open-system latency (``StoragePlan.knee_concurrency`` is where this curve
    bends, :func:`aisize.queueing.bend_concurrency`).

    Parameters
    ----------
    plan : a :class:`~aisize.plan.Plan` or its :class:`StoragePlan`
    concurrency : outstanding IOs [count], scalar or array; default ``points`` evenly spaced up
        to 2x the knee or 1.2x the blend's outstanding IOs (when finite), whichever is more
    points : points of the default grid [count]

    References
    ----------
    .. [1] :func:`aisize.queueing.latency_vs_concurrency`; Little's law for the blend's point.
    """
    s = plan if isinstance(plan, StoragePlan) else plan.storage
    if concurrency is None:
        n = int(checks.scalar("points", checks.integer("points", points, low=2, high=10**6)))
        knee_span, blend_span = STORAGE_CURVE_SPAN
        blend = s.outstanding_ios if math.isfinite(s.outstanding_ios) else 0.0  # unstable: no point to show
        top = max(knee_span * s.knee_concurrency, blend_span * blend, 2.0)
        concurrency = np.linspace(top / n, top, n)
    return concurrency_curve(s.station, concurrency)


@dataclass(frozen=True)
class StorageQueueBasis:
    """Where the storage queue's two figures come from: the catalog row of the system bought, or a default.

    The station (``StoragePlan.station``) serves at most ``rated_per_s`` = units x ``unit_rate_per_s``, the
    unit's rated read IOPS, or its read bandwidth / the blend's mean IO size where smaller or where no IOPS
    is given (:func:`aisize.storage.sizing.unit_iops_at`); its unloaded latency is the row's published
    latency, else ``aisize.plan.context.STORAGE_LATENCY_SECONDS``, typical of published all-flash file systems and
    not the system's own (``latency_source`` says which: :data:`LATENCY_PUBLISHED` or :data:`LATENCY_TYPICAL`,
    worded by :func:`aisize.present.storage_text.latency_basis` on every surface).
    A row whose source says ``IOPS DERIVED`` (:data:`DERIVED_IOPS`) rates IOPS from its drives' datasheet figures
    and its network, capped at the most one node of a published all-flash file system served
    (``iops_node_ceiling_per_s``), not from a measurement of the system: every surface must say so (``iops_derived``).
    """

    system: str  # catalog id of the storage bought
    units: float  # units (or the one system) the station counts [count]
    unit_rate_per_s: float  # IO/s one unit serves at the blend's mean IO size [1/s]
    rated_per_s: float  # the station's rated IO/s, units x unit_rate_per_s [1/s]
    published_iops_per_s: float | None  # the row's read IOPS per unit [1/s]; None: not given
    iops_derived: bool  # True: the row's IOPS are derived from its drives and network (DERIVED_IOPS), not measured
    iops_io_size_bytes: float | None  # IO size the published IOPS holds at [B]; None: not stated
    bandwidth_bound: bool  # True where read bandwidth / mean IO size, not the published IOPS, sets the rate
    latency_seconds: float  # unloaded IO latency the station uses [s]
    latency_source: str  # LATENCY_PUBLISHED: the row's figure; LATENCY_TYPICAL: STORAGE_LATENCY_SECONDS
    channels: int  # Little's-law channels, rated IO/s x unloaded latency [count] (informative)
    iops_node_ceiling_per_s: float | None = None  # derived IOPS only: the published per-node cap they hold to [1/s]

    @property
    def latency_published(self) -> bool:
        """True where the catalog row publishes the latency; False: the planner's default stands in."""
        return self.latency_source == LATENCY_PUBLISHED


def storage_queue_basis(plan) -> StorageQueueBasis:
    """The storage queue's IO rate and latency with their origin (catalog row or default), one per plan.

    Parameters
    ----------
    plan : a :class:`~aisize.plan.Plan` or its :class:`StoragePlan`

    References
    ----------
    .. [1] Little, Operations Research 9(3), 1961 (channels = IO rate x latency); docs/storage.md ("How it
       queues"; "The defaults typical of published all-flash file systems": no purchasable unit publishes a
       latency, so SPECstorage Solution 2020 results stand in, data/storage_published_results.csv).
    """
    s = plan if isinstance(plan, StoragePlan) else plan.storage
    rec = s.record
    station = s.station
    published = rec.read_iops_per_s if rec is not None else None
    rated = float(getattr(station, "rated_per_s", station.capacity_per_s))
    unit = float(s.unit_iops) if s.unit_iops else rated / max(s.units, 1.0)
    derived = published is not None and DERIVED_IOPS in (rec.source or "")
    own = rec is not None and rec.latency_seconds is not None
    return StorageQueueBasis(
        s.system, float(s.units), unit, rated, published, derived,
        rec.iops_io_size_bytes if rec is not None else None,
        published is None or unit < published, float(station.service_seconds),
        LATENCY_PUBLISHED if own else LATENCY_TYPICAL, int(station.servers),
        node_ops_ceiling_per_s() if derived else None)
