"""Latency vs load and vs concurrency for a storage system or an inference replica, and the knee.

A service is modelled as one station of c parallel channels with mean service
time S (:class:`Station`). Open system (requests arrive at a rate, whatever the
backlog): G/G/c of :mod:`aisize.queueing.analytic`. Closed system (a fixed
number N of requests always outstanding, as with a benchmark's queue depth or
N clients each sending the next request when the last returns, no think time):
every one of the N jobs is at the station, so its throughput is the station's
rate with N present, X(N) = mu(N), and R(N) = N/X(N) (MVA of one load-dependent
centre with zero think time, Lazowska et al. 1984, ch. 6 and 8). For c channels
mu(N) = min(N, c)/S, so R(N) = S·max(1, N/c). A :class:`StorageStation` is the
fitted open-system curve R(λ) (docs/storage.md); its rate with N IOs present is
the throughput at which that curve holds N in the system, N = X·R(X) (Little),
so the closed curve and its knee are the open curve's, read at N = X·R(X).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.queueing.analytic import MAX_SERVERS, QueueResult, _allen_cunneen_wait, _response_quantile, ggc

# The storage load curve (docs/storage.md, "The storage queue, fitted on published load curves"): an M/M/c
# of few effective servers on the unloaded latency, the published peak at a fixed share of saturation.
# Least squares in log latency over the 20 points of SPECstorage Solution 2020 results storage2020-20240708-00080
# (NetApp AFF A90, EDA) and storage2020-20231002-00055 (AFF A900, SWBUILD) (data/storage_load_curves.csv,
# role "fit"): rms error 26 % in latency; on three curves not fitted (Azure NetApp Files, 2025-26) 11-28 %.
STORAGE_EFFECTIVE_SERVERS = 2  # [1]: a curve that bends at half load, not at saturation (many channels do)
STORAGE_PEAK_UTILISATION = 0.959  # [1]: a system's rated (last published) ops/s as a share of its saturation
_KNEE_GRID = 64  # utilisation points per refinement round
_KNEE_ROUNDS = 5  # 65⁵ ≈ 1.2e9: the knee to ~1e-9 of capacity
_STATISTICS = {"mean": None, "p50": 0.50, "p95": 0.95, "p99": 0.99}


@dataclass(frozen=True)
class Station:
    """One service centre: c parallel channels, mean service time S, its coefficient of variation."""

    servers: int  # parallel channels c [1]
    service_seconds: float  # mean service time S, the unloaded latency [s]
    service_cv: float = 1.0  # coefficient of variation of S [1]

    def __post_init__(self):
        # one station per object: sweeps vary the load, not the station
        checks.scalar("servers", checks.integer("servers", self.servers, low=1, high=MAX_SERVERS))
        checks.scalar("service_seconds", checks.positive("service_seconds", self.service_seconds))
        checks.scalar("service_cv", checks.non_negative("service_cv", self.service_cv, high=1e3))

    @property
    def capacity_per_s(self) -> float:
        """Maximum throughput c/S [1/s]."""
        return self.servers / self.service_seconds


@dataclass(frozen=True)
class StorageStation(Station):
    """A storage system: the fitted load curve on its unloaded latency, and its Little's-law channels.

    Latency (:func:`latency_vs_load`, :func:`knee_load`) is the unloaded latency stretched as an
    M/M/``effective_servers`` queue at utilisation λ / (``rated_per_s`` / ``peak_utilisation``), the curve
    fitted on published SPECstorage load tables; the closed-system view (:func:`latency_vs_concurrency`,
    :func:`knee_concurrency`) is the same curve at N = λ·R(λ). ``servers`` (rated IOPS x unloaded latency)
    is informative only: the IOs in flight at the rated rate were the system unloaded.
    """

    rated_per_s: float = 0.0  # the system's rated (peak measured) operations/s [1/s], > 0
    effective_servers: int = STORAGE_EFFECTIVE_SERVERS  # [1]
    peak_utilisation: float = STORAGE_PEAK_UTILISATION  # rated / saturation [1]

    def __post_init__(self):
        super().__post_init__()
        checks.scalar("rated_per_s", checks.positive("rated_per_s", self.rated_per_s))
        checks.scalar("effective_servers", checks.integer("effective_servers", self.effective_servers, low=1,
                                                          high=MAX_SERVERS))
        checks.scalar("peak_utilisation", checks.number("peak_utilisation", self.peak_utilisation, low=0.0,
                                                        high=1.0, low_inclusive=False, high_inclusive=False))

    @property
    def saturation_per_s(self) -> float:
        """Operations/s at which the fitted open-system latency grows without bound [1/s]."""
        return self.rated_per_s / self.peak_utilisation

    @property
    def capacity_per_s(self) -> float:
        """Maximum throughput [1/s]: the fitted curve's saturation, open or closed."""
        return self.saturation_per_s


def _open_queue(station: Station):
    """(servers, service time [s], cv, arrivals per unit utilisation [1/s]) of the open-system queue."""
    if isinstance(station, StorageStation):
        return station.effective_servers, station.service_seconds, station.service_cv, station.saturation_per_s
    return station.servers, station.service_seconds, station.service_cv, station.capacity_per_s


@dataclass(frozen=True)
class ConcurrencyCurve:
    """Closed-system curve: throughput and latency at each concurrency N."""

    concurrency: float | np.ndarray  # requests outstanding N [1]
    throughput_per_s: float | np.ndarray  # X(N) = min(N, c)/S [1/s]
    response_mean_seconds: float | np.ndarray  # R(N) = S·max(1, N/c) [s]
    utilisation: float | np.ndarray  # min(N, c)/c [1]


@dataclass(frozen=True)
class Knee:
    """Highest load keeping the chosen latency statistic within factor × unloaded."""

    arrival_rate_per_s: float  # [1/s]
    utilisation: float  # [1]
    unloaded_seconds: float  # the statistic at zero load [s]
    limit_seconds: float  # factor × unloaded [s]


def storage_station(iops_max_per_s, base_latency_seconds, service_cv=1.0) -> StorageStation:
    """A storage system as a station: c = IOPS_max × base latency channels (Little's law), S = base latency.

    Its open-system latency follows the fitted load curve (:class:`StorageStation`): it doubles at
    ~74 % of IOPS_max (M/M/2 at 0.707 of saturation), where M/M/c on the c Little channels stays flat
    to saturation while SPECstorage's AFF A90 curve doubles at ~60 % (docs/storage.md).

    Parameters
    ----------
    iops_max_per_s : float
        Rated IOPS at saturation [1/s], > 0.
    base_latency_seconds : float
        Unloaded IO latency [s], > 0.
    service_cv : float
        Coefficient of variation of the per-IO service time [1] (1: exponential).

    c is rounded to the nearest whole channel (at least 1), so the station's
    capacity c/S may differ slightly from IOPS_max. Example: 2.5 M IOPS at
    100 µs → 250 channels.

    References
    ----------
    .. [1] Little, Operations Research 9(3), 1961 (L = λ·W).
    """
    iops = checks.scalar("iops_max_per_s", checks.positive("iops_max_per_s", iops_max_per_s))
    lat = checks.scalar("base_latency_seconds", checks.positive("base_latency_seconds", base_latency_seconds))
    cv = checks.scalar("service_cv", checks.non_negative("service_cv", service_cv, high=1e3))
    channels = max(1, int(round(iops * lat)))
    return StorageStation(channels, lat, cv, rated_per_s=iops)


def inference_station(replicas, slots_per_replica, request_seconds, service_cv=1.0) -> Station:
    """Inference serving as a station: replicas × concurrent slots channels, S = unloaded request latency.

    Parameters
    ----------
    replicas : int
        Model replicas [1], ≥ 1.
    slots_per_replica : int
        Requests one replica serves at once without slowing (batch slots) [1], ≥ 1.
    request_seconds : float
        Unloaded end-to-end latency of one request [s], > 0.
    service_cv : float
        Coefficient of variation of request latency [1] (output lengths vary).

    References
    ----------
    .. [1] Kleinrock, Queueing Systems Vol. 1, 1975, section 3.5 (M/M/c).
    """
    r = checks.scalar("replicas", checks.integer("replicas", replicas, low=1, high=MAX_SERVERS))
    k = checks.scalar("slots_per_replica", checks.integer("slots_per_replica", slots_per_replica, low=1,
                                                          high=MAX_SERVERS))
    s = checks.scalar("request_seconds", checks.positive("request_seconds", request_seconds))
    cv = checks.scalar("service_cv", checks.non_negative("service_cv", service_cv, high=1e3))
    return Station(int(r * k), s, cv)


def latency_vs_load(station: Station, arrival_rate_per_s) -> QueueResult:
    """Open-system latency at each arrival rate (vectorized over arrival_rate_per_s [1/s]).

    Rates at or above the station's capacity give ``stable=False`` and inf.

    References
    ----------
    .. [1] Allen, Probability, Statistics and Queueing Theory, 1990, section 6.4.
    .. [2] A :class:`StorageStation` queues as its fitted load curve (docs/storage.md): utilisation is
       λ / saturation, and the reported utilisation is that share.
    """
    c, s, cv, per_u = _open_queue(station)
    if isinstance(station, StorageStation):  # the same utilisation on the fitted M/M/c of c_eff servers
        lam = checks.positive("arrival_rate_per_s", arrival_rate_per_s)
        return ggc(lam * (c / s) / per_u, s, c, service_cv=cv)
    return ggc(arrival_rate_per_s, s, c, service_cv=cv)


def _storage_closed_utilisation(station: StorageStation, n: np.ndarray) -> np.ndarray:
    """Utilisation u at which the fitted open curve holds n IOs in the system: u·saturation·R(u) = n.

    u·R(u) rises strictly from 0 (u = 0) without bound (u → 1), so bisection finds the one root; R ≥ S bounds it
    by n / (saturation·S), so 60 halvings of that bracket reach float resolution however few IOs are in flight."""
    c, s, cv, per_u = _open_queue(station)
    lo, hi = np.zeros_like(n), np.minimum(1.0, n / (per_u * s))
    cc, ss, cvv = np.full_like(n, float(c)), np.full_like(n, s), np.full_like(n, cv)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        _, _, wait = _allen_cunneen_wait(mid * c / s, ss, cc, cvv, 1.0)
        low = mid * per_u * (s + wait) < n
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return 0.5 * (lo + hi)


def latency_vs_concurrency(station: Station, concurrency) -> ConcurrencyCurve:
    """Closed-system throughput and latency at N outstanding requests (see module docstring).

    A plain :class:`Station`: X(N) = min(N, c)/S, exact. A :class:`StorageStation`: the fitted open curve read
    at N = X·R(X), so a storage system has one curve whichever way it is loaded; ``utilisation`` is then the
    share of its saturation, as in :func:`latency_vs_load`.

    Parameters
    ----------
    station : Station
    concurrency : float or array
        Requests kept outstanding N (queue depth, concurrent clients) [1], > 0.

    References
    ----------
    .. [1] E. D. Lazowska, J. Zahorjan, G. S. Graham, K. C. Sevcik, Quantitative
       System Performance, Prentice-Hall 1984, ch. 5 (bounds), ch. 6 (MVA) and ch. 8 (load-dependent
       centres: a closed station's throughput at population N is its rate with N present).
    .. [2] Little, Operations Research 9(3), 1961 (L = λ·W).
    """
    n = checks.positive("concurrency", concurrency, high=1e12)
    if isinstance(station, StorageStation):
        arr = np.atleast_1d(np.asarray(n, dtype=float))
        u = _storage_closed_utilisation(station, arr)
        x = u * station.saturation_per_s
        r = arr / x
        out = (arr, x, r, u) if np.ndim(n) else tuple(float(v[0]) for v in (arr, x, r, u))
        return ConcurrencyCurve(*out)
    busy = np.minimum(n, station.servers)
    x = busy / station.service_seconds
    r = n / x
    u = busy / station.servers
    out = (n, x, r, u) if np.ndim(n) else tuple(float(v) for v in (n, x, r, u))
    return ConcurrencyCurve(*out)


def knee_concurrency(station: Station, factor=2.0):
    """Highest whole concurrency N with R(N) ≤ factor × S.

    A plain :class:`Station`: floor(factor · c). A :class:`StorageStation`: Little's law at the open-system
    knee, floor(λ_knee · factor · S) (:func:`knee_load`, mean), so the closed and open knees are one point.

    Parameters
    ----------
    station : Station
    factor : float or array
        Allowed latency growth over unloaded [1], > 1.

    References
    ----------
    .. [1] Lazowska et al., Quantitative System Performance, 1984, section 5.3
       (the saturation point N* = c·(S + Z)/S with Z = 0).
    .. [2] Little, Operations Research 9(3), 1961 (L = λ·W), for a :class:`StorageStation`.
    """
    f = checks.number("factor", factor, low=1.0, high=1e6, low_inclusive=False)
    if isinstance(station, StorageStation):
        flat = np.atleast_1d(np.asarray(f, dtype=float))
        knees = [knee_load(station, float(v)) for v in flat]
        n = np.floor(np.array([k.arrival_rate_per_s * k.limit_seconds for k in knees]) * (1.0 + 1e-12))
        n = n.reshape(np.shape(f))
    else:
        n = np.floor(f * station.servers * (1.0 + 1e-12))
    return int(n) if np.ndim(n) == 0 else n.astype(np.int64)


def bend_concurrency(station: Station) -> int:
    """The closed curve's bend: the whole number of requests N* at which its two asymptotes meet.

    R(N) runs along R = S (unloaded) for few requests outstanding and along R = N / X_max (saturation) for many;
    the asymptotes cross at N* = X_max x S, where the curve turns from flat to straight. A plain
    :class:`Station` bends at its c channels (N* = c, exact: R = S max(1, N/c)); a :class:`StorageStation` at
    saturation x unloaded latency, where the fitted M/M/2 holds utilisation rho with rho / (1 - rho^2) = 1, i.e.
    rho = 0.618 and R = S / rho = 1.618 S, its slope d ln R / d ln N = 2 rho^2 / (1 + rho^2) = 0.553 (past it,
    more than half of each added request's share is waiting). Unlike :func:`knee_concurrency` (R = factor x S,
    2 S for the fitted curve: rho = 0.707, 1.41 N*, already on the straight part), it is a property of the
    curve's shape, not of a latency budget.

    References
    ----------
    .. [1] Lazowska et al., Quantitative System Performance, 1984, section 5.3 (balanced bounds: N* =
       (D + Z) / D_max, here Z = 0, D = S and D_max = 1 / X_max).
    .. [2] Little, Operations Research 9(3), 1961 (L = X R at the crossing).
    """
    x_max = station.capacity_per_s  # a StorageStation's saturation, a plain station's c / S
    return int(np.floor(x_max * station.service_seconds * (1.0 + 1e-12)))


def knee_load(station: Station, factor: float = 2.0, statistic: str = "mean") -> Knee:
    """Highest open-system arrival rate at which a latency statistic stays within factor × unloaded.

    Parameters
    ----------
    station : Station
    factor : float
        Allowed latency growth over unloaded [1], > 1.
    statistic : str
        "mean", "p50", "p95" or "p99" response time.

    Latency rises monotonically with load, so a grid of utilisations is scanned
    in one vectorized call and the bracketing cell refined (5 rounds of 64).

    References
    ----------
    .. [1] Allen, Probability, Statistics and Queueing Theory, 1990, section 6.4.
    """
    f = checks.scalar("factor", checks.number("factor", factor, low=1.0, high=1e6, low_inclusive=False))
    checks.choice("statistic", statistic, _STATISTICS)
    p = _STATISTICS[statistic]
    c, s, cs, per_u = _open_queue(station)
    unloaded = s if p is None else float(_response_quantile(p, 0.0, 0.0, s, cs))
    limit = f * unloaded
    field = "response_mean_seconds" if p is None else f"response_{statistic}_seconds"
    lo, hi = 0.0, 1.0
    for _ in range(_KNEE_ROUNDS):
        u = np.linspace(lo, hi, _KNEE_GRID + 2)[1:-1]
        if p is None:  # the mean needs no percentile solve
            _, _, wait = _allen_cunneen_wait(u * c / s, s, float(c), cs, 1.0)
            ok = wait + s <= limit
        else:
            ok = getattr(ggc(u * c / s, s, c, service_cv=cs), field) <= limit
        last = int(np.nonzero(ok)[0][-1]) if ok.any() else -1
        lo, hi = (lo if last < 0 else u[last]), (u[last + 1] if last + 1 < u.size else hi)
    return Knee(float(lo * per_u), float(lo), float(unloaded), float(limit))


__all__ = ["ConcurrencyCurve", "Knee", "STORAGE_EFFECTIVE_SERVERS", "STORAGE_PEAK_UTILISATION", "Station",
           "StorageStation", "bend_concurrency", "inference_station", "knee_concurrency",
           "knee_load", "latency_vs_concurrency", "latency_vs_load", "storage_station"]
