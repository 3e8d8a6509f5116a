"""Checkpoints: size, write and restore times, the optimal interval, and goodput.

Size: full training state about 14 B/param (bf16 weights 2 + fp32 master weights,
Adam momentum and variance 12), weights only 2 B/param; sharded over ranks.
Write: N:N (every rank writes its shard) runs at the aggregate of the writers'
links, capped by the storage system; N:1 (one writer) at one writer's link.
Interval: Young's first-order optimum sqrt(2 x MTBF x write time); a cluster's
MTBF is the node MTBF / nodes. A job shorter than twice that optimum is checkpointed
at half its running time instead (:func:`interval_for_job`): Young and Daly derive
the optimum for a run many intervals long, and at an interval longer than the job a
plan never checkpoints at all (a failure loses the whole run), which no storage or ML
engineer signs; at one near the job's length its one checkpoint comes just before
the end and protects almost nothing. At half the job a checkpoint is written by
mid-run, so a failure loses at most half of it. Goodput (share of wall time doing useful
training), Daly's first-order model: lost = write/interval + (interval/2 + restart)/MTBF.

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint
   interval", CACM 17(9), 1974.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
   restart dumps", Future Generation Computer Systems 22(3), 2006, eqs. 1-3
   (first-order wall-time model) and eq. 37.
.. [3] mlcommons/storage Submission_guidelines.md v2.0 (2025), section 2.2.1 table 2:
   Llama 3 8B / 70B / 405B checkpoints 105 GB / 912 GB / 5.29 TB, binary units
   (Rules.md 4.3.4), = 14 B/param.
.. [4] Llama Team, "The Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4
   (466 interruptions in 54 days on up to 16K H100s; > 90 % effective training time)
   and 3.3.1 (storage: 2 TB/s sustained, 7 TB/s peak).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks

FULL_STATE_BYTES_PER_PARAM = 14.0  # bf16 weights + fp32 master, momentum, variance [3]
WEIGHTS_ONLY_BYTES_PER_PARAM = 2.0  # bf16 weights
PATTERNS = ("N:N", "N:1")


@dataclass(frozen=True)
class CheckpointSize:
    """One checkpoint and one rank's shard [B]."""

    total_bytes: float
    shard_bytes: float


def checkpoint_size(params, *, bytes_per_param=FULL_STATE_BYTES_PER_PARAM, ranks=1) -> CheckpointSize:
    """Checkpoint size and per-rank shard.

    Parameters
    ----------
    params : model parameters [count]
    bytes_per_param : 14 for full training state, 2 for bf16 weights only [B]
    ranks : ranks the checkpoint is sharded over [count]

    References
    ----------
    .. [1] mlcommons/storage Submission_guidelines.md v2.0, table 2 (Llama 3 sizes).
    """
    n = checks.positive("params", params)
    b = checks.positive("bytes_per_param", bytes_per_param, high=64)
    r = checks.integer("ranks", ranks, high=10**7)
    total = n * b
    return CheckpointSize(total, total / r)


@dataclass(frozen=True)
class CheckpointWrite:
    """Time to write (or read) one checkpoint and the rate achieved."""

    seconds: float
    bytes_per_s: float
    storage_bound: bool | np.ndarray  # True where the storage system, not the writers' links, limits


def checkpoint_write(checkpoint_bytes, writer_bytes_per_s, storage_write_bytes_per_s, *, writers=1,
                     pattern="N:N") -> CheckpointWrite:
    """Write time for N:N (all ranks write shards) or N:1 (one writer) checkpointing.

    Parameters
    ----------
    checkpoint_bytes : whole checkpoint [B]
    writer_bytes_per_s : one writer's path to storage (its NIC share) [B/s]
    storage_write_bytes_per_s : the storage system's aggregate write rate [B/s]
    writers : ranks (or nodes) writing in parallel for N:N [count]
    pattern : "N:N" or "N:1"

    References
    ----------
    .. [1] Bent et al., "PLFS: A Checkpoint Filesystem for Parallel Applications", SC09
       (N-N vs N-1 checkpoint patterns).
    """
    size = checks.non_negative("checkpoint_bytes", checkpoint_bytes)
    link = checks.positive("writer_bytes_per_s", writer_bytes_per_s)
    store = checks.positive("storage_write_bytes_per_s", storage_write_bytes_per_s)
    n = checks.integer("writers", writers, high=10**7)
    checks.choice("pattern", pattern, PATTERNS)
    path = n * link if pattern == "N:N" else link
    rate = np.minimum(path, store)
    return CheckpointWrite(size / rate, rate * 1.0, store < path)


def write_bandwidth_for_stall(checkpoint_bytes, interval_seconds, max_stall_fraction):
    """Write bandwidth that keeps blocking checkpoint writes under a share of training time [B/s].

    stall = write time / interval  =>  bandwidth = size / (max_stall x interval).

    Parameters
    ----------
    checkpoint_bytes : whole checkpoint [B]
    interval_seconds : training time between checkpoints [s]
    max_stall_fraction : allowed share of time spent writing, (0, 1]

    References
    ----------
    .. [1] Daly 2006, eq. 1 (checkpoint overhead term write/interval).
    """
    size = checks.non_negative("checkpoint_bytes", checkpoint_bytes)
    tau = checks.positive("interval_seconds", interval_seconds)
    f = checks.fraction("max_stall_fraction", max_stall_fraction)
    return size / (f * tau)


def cluster_mtbf(node_mtbf_seconds, nodes):
    """Mean time between failures of a job spanning ``nodes`` independent nodes [s].

    References
    ----------
    .. [1] Daly 2006, section 2 (independent exponential failures add rates).
    """
    m = checks.positive("node_mtbf_seconds", node_mtbf_seconds)
    n = checks.integer("nodes", nodes, high=10**8)
    return m / n


def young_daly_interval(mtbf_seconds, write_seconds):
    """Optimal compute time between checkpoints, sqrt(2 x MTBF x write time) [s].

    References
    ----------
    .. [1] Young 1974; Daly 2006 eq. 37 (first-order term).
    """
    m = checks.positive("mtbf_seconds", mtbf_seconds)
    w = checks.positive("write_seconds", write_seconds)
    return np.sqrt(2.0 * m * w)


def interval_for_job(interval_seconds, job_seconds):
    """The checkpoint interval a job of ``job_seconds`` running time uses: ``interval_seconds`` (the Young/Daly
    optimum), at most half the job, so that it writes at least one checkpoint before it ends [s].

    Young's and Daly's optimum assumes a run of many intervals (their expected rework is half an interval
    per failure); a job shorter than the optimum would never checkpoint, and one just longer would write its
    only checkpoint near the end. At half the job a checkpoint is written by mid-run, so a failure loses at
    most half of it; a job longer than twice the optimum keeps the optimum.

    References
    ----------
    .. [1] Young 1974; Daly 2006 section 2 (the optimum for a run of many intervals).
    """
    tau = checks.positive("interval_seconds", interval_seconds)
    t = checks.positive("job_seconds", job_seconds)
    return np.minimum(tau, t / 2.0)


def restore_seconds(checkpoint_bytes, read_bytes_per_s, *, restart_seconds=0.0):
    """Recovery time (RTO): size / read bandwidth + restart [s].

    References
    ----------
    .. [1] Daly 2006, section 2 (restart time R).
    """
    size = checks.non_negative("checkpoint_bytes", checkpoint_bytes)
    bw = checks.positive("read_bytes_per_s", read_bytes_per_s)
    r = checks.non_negative("restart_seconds", restart_seconds)
    return size / bw + r


def read_bandwidth_for_rto(checkpoint_bytes, rto_seconds, *, restart_seconds=0.0):
    """Read bandwidth that restores a checkpoint within a recovery-time objective [B/s].

    References
    ----------
    .. [1] Inverse of :func:`restore_seconds`.
    """
    size = checks.non_negative("checkpoint_bytes", checkpoint_bytes)
    rto = checks.positive("rto_seconds", rto_seconds)
    r = checks.non_negative("restart_seconds", restart_seconds)
    if np.any(rto <= r):
        raise ValueError(f"rto_seconds={rto_seconds!r} is not allowed: must exceed "
                         f"restart_seconds={restart_seconds!r}")
    return size / (rto - r)


def goodput(mtbf_seconds, interval_seconds, write_seconds, restart_seconds):
    """Share of wall time spent on useful training, Daly's first-order model [-].

    lost = write/interval + (interval/2 + restart)/MTBF; goodput = max(0, 1 - lost).

    Parameters
    ----------
    mtbf_seconds : mean time between job interruptions [s] (:func:`cluster_mtbf`)
    interval_seconds : training time between checkpoints [s] (:func:`young_daly_interval`)
    write_seconds : time training is blocked per checkpoint [s] (the staging copy
        only, for asynchronous checkpoints)
    restart_seconds : detection, rescheduling, restart and restore per interruption [s]

    References
    ----------
    .. [1] Daly 2006, eqs. 1-3 (first order).
    .. [2] Llama 3 (arXiv 2407.21783) section 3.3.4: > 90 % effective training time
       with 466 interruptions in 54 days.
    """
    m = checks.positive("mtbf_seconds", mtbf_seconds)
    tau = checks.positive("interval_seconds", interval_seconds)
    w = checks.non_negative("write_seconds", write_seconds)
    r = checks.non_negative("restart_seconds", restart_seconds)
    lost = w / tau + (tau / 2.0 + r) / m
    return np.maximum(0.0, 1.0 - lost)


@dataclass(frozen=True)
class CheckpointPlan:
    """Checkpointing at the Young/Daly interval, and what it costs."""

    write_seconds: float
    interval_seconds: float
    restore_seconds: float
    goodput: float


def checkpoint_plan(checkpoint_bytes, write_bytes_per_s, read_bytes_per_s, mtbf_seconds, *,
                    restart_seconds=0.0) -> CheckpointPlan:
    """Write time, optimal interval, restore time and goodput for one job.

    Parameters
    ----------
    checkpoint_bytes : whole checkpoint [B]
    write_bytes_per_s, read_bytes_per_s : achieved checkpoint write / restore rates [B/s]
    mtbf_seconds : job MTBF [s]
    restart_seconds : restart overhead besides reading the checkpoint [s]

    References
    ----------
    .. [1] Young 1974; Daly 2006.
    """
    size = checks.positive("checkpoint_bytes", checkpoint_bytes)
    w = size / checks.positive("write_bytes_per_s", write_bytes_per_s)
    tau = young_daly_interval(mtbf_seconds, w)
    rto = restore_seconds(size, read_bytes_per_s, restart_seconds=restart_seconds)
    return CheckpointPlan(w, tau, rto, goodput(mtbf_seconds, tau, w, rto))
