"""Failures and spares: interruption rates from published fleets, job MTBF, training goodput, serving spares.

``data/failure_rates.csv`` holds published interruption counts with their exposure (GPUs,
servers, days). A GPU fault stops one GPU, the rest (host, network, software) one server, so
the rates are counted per GPU-hour and per server-hour, and a job or a replica on g GPUs in
n servers is interrupted at

    λ = g x λ_gpu + n x λ_server      (independent exponential failures add rates)

and its mean time between interruptions is 1/λ. Training goodput is the existing first-order
Young/Daly model (:func:`aisize.storage.goodput`) fed by that MTBF. A serving fleet needs N
replicas up; each of N + s replicas is down a share p = λ_r·T/(1 + λ_r·T) of the time (T its
recovery time), independently, so the spares s are the fewest with
P(at most s down) = Σ_{k≤s} C(N+s, k) p^k (1−p)^{N+s−k} ≥ the availability target.

References
----------
.. [1] Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, sec. 3.3.4, Table 5.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
   FGCS 22(3), 2006 (independent failures add rates; first-order goodput).
.. [3] M. Rausand, A. Høyland, System Reliability Theory, 2nd ed., Wiley 2004, sec. 4.4
   (k-out-of-n structures of independent components).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import checks
from aisize.catalog import data_dir
from aisize.storage import goodput, young_daly_interval
from aisize.units import DAY, HOUR


@dataclass(frozen=True)
class FailureRates:
    """Interruption rates of one published fleet [1/h]."""

    id: str
    per_gpu_hour: float
    per_server_hour: float
    gpu_share: float  # GPU faults / all interruptions in the source fleet
    source: str

    def per_hour(self, gpus, servers):
        """Interruptions per hour of work on ``gpus`` GPUs in ``servers`` servers (vectorized)."""
        g = checks.non_negative("gpus", gpus)
        n = checks.non_negative("servers", servers)
        return g * self.per_gpu_hour + n * self.per_server_hour

    def expected(self, gpus, servers, days):
        """Expected interruptions of ``gpus`` GPUs in ``servers`` servers over ``days`` days."""
        return self.per_hour(gpus, servers) * checks.non_negative("days", days) * 24.0

    def mtbf_seconds(self, gpus, servers):
        """Mean time between interruptions of work spanning ``gpus`` GPUs in ``servers`` servers [s]."""
        rate = np.asarray(self.per_hour(gpus, servers), dtype=float)
        out = np.where(rate > 0, HOUR / np.where(rate > 0, rate, 1.0), np.inf)
        return float(out) if out.ndim == 0 else out


@lru_cache(maxsize=1)
def _rows() -> dict:
    out: dict = {}
    with open(data_dir() / "failure_rates.csv", newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault(r["id"], {})[r["component"]] = r
    return out


def sources() -> list[str]:
    """Ids of the published fleets in ``data/failure_rates.csv``."""
    return sorted(_rows())


@lru_cache(maxsize=16)
def failure_rates(source: str = "llama3-405b-h100") -> FailureRates:
    """The per-GPU-hour and per-server-hour interruption rates of a published fleet."""
    rows = _rows()
    checks.choice("failure_rates", source, sorted(rows))
    gpu, server = rows[source]["gpu"], rows[source]["server"]
    hours = float(gpu["days"]) * 24.0
    g_count, s_count = float(gpu["interruptions"]), float(server["interruptions"])
    return FailureRates(source, g_count / (float(gpu["gpus"]) * hours), s_count / (float(server["servers"]) * hours),
                        g_count / (g_count + s_count), gpu["source"])


@dataclass(frozen=True)
class TrainingGoodput:
    """A training job's interruptions and goodput at the optimal checkpoint interval."""

    mtbf_seconds: float
    interruptions_per_day: float
    interval_seconds: float  # Young/Daly
    goodput: float


def training_goodput(rates: FailureRates, *, gpus, servers, checkpoint_write_seconds,
                     restart_seconds) -> TrainingGoodput:
    """Goodput of a job on ``gpus`` GPUs in ``servers`` servers, checkpointing at the Young/Daly interval."""
    mtbf = rates.mtbf_seconds(gpus, servers)
    w = checks.scalar("checkpoint_write_seconds", checks.positive("checkpoint_write_seconds",
                                                                  checkpoint_write_seconds))
    r = checks.scalar("restart_seconds", checks.non_negative("restart_seconds", restart_seconds))
    interval = float(young_daly_interval(mtbf, w))
    return TrainingGoodput(float(mtbf), DAY / float(mtbf), interval, float(goodput(mtbf, interval, w, r)))


@dataclass(frozen=True)
class Spares:
    """Spare replicas for an availability target."""

    replicas_needed: int
    spares: int
    replica_failures_per_day: float
    replica_unavailability: float  # share of time one replica is down
    availability: float  # P(at least replicas_needed up) with the spares
    availability_without_spares: float


def _at_most(n: int, s: int, p: float) -> float:
    """P(at most s of n independent components are down), each down with probability p."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0 if s < n else 1.0
    logs = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
            + (n - k) * math.log1p(-p) for k in range(min(s, n) + 1)]
    return float(min(sum(math.exp(x) for x in logs), 1.0))


def spares_for(rates: FailureRates, *, replicas, gpus_per_replica, servers_per_replica, recovery_seconds,
               availability_target, field: str = "availability_target") -> Spares:
    """The fewest spare replicas that keep ``replicas`` serving with probability ``availability_target``."""
    n = int(checks.scalar("replicas", checks.integer("replicas", replicas, low=1, high=10**6)))
    lam = float(rates.per_hour(checks.positive("gpus_per_replica", gpus_per_replica),
                               checks.positive("servers_per_replica", servers_per_replica))) / HOUR
    t = checks.scalar("recovery_seconds", checks.non_negative("recovery_seconds", recovery_seconds))
    target = checks.scalar(field, checks.number(field, availability_target, low=0.0, high=1.0,
                                                high_inclusive=False))
    p = lam * t / (1.0 + lam * t)
    # P(at most s of n + s down) never falls as s grows (one more spare adds at most one more down), so the fewest
    # spares are found by doubling, then halving: O(s log s), where adding one spare at a time took O(s^2)
    most = 10 * n + 100
    if _at_most(n + most, most, p) < target:
        raise ValueError(f"{field}={target!r} is not reachable: each replica is down {p:.1%} of the time")
    lo, hi = -1, 0  # _at_most fails at lo (or lo is -1), holds at hi
    while _at_most(n + hi, hi, p) < target:
        lo, hi = hi, min(2 * hi + 1, most)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _at_most(n + mid, mid, p) >= target else (mid, hi)
    s = hi
    return Spares(n, s, lam * DAY, p, _at_most(n + s, s, p), _at_most(n, 0, p))
