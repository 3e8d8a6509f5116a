"""Point-to-point transfers and collective operations: bytes moved and time.

The alpha-beta model: a transfer of S bytes in k sequential steps over a link
of bandwidth B [B/s] at efficiency e takes ``k * alpha + bytes / (B * e)``.
Ring collectives move, per GPU, ``2 (n - 1) / n * S`` bytes for all-reduce and
``(n - 1) / n * S`` for all-gather, reduce-scatter and all-to-all, where S is
the full buffer size; NCCL's "bus bandwidth" is the algorithm bandwidth
(S / time) times that same factor, so it is comparable to the link's rate.

All functions accept scalars or numpy arrays and broadcast.

References
----------
.. [1] R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
   Communication Operations in MPICH", IJHPCA 19(1), 2005 (alpha-beta costs).
.. [2] P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for
   clusters of workstations", JPDC 69(2), 2009 (ring all-reduce 2(n-1)/n).
.. [3] NVIDIA, nccl-tests ``doc/PERFORMANCE.md``, "Bus bandwidth" (the
   2(n-1)/n and (n-1)/n factors).
"""

from __future__ import annotations

import numpy as np

from aisize import checks

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast")
ALGORITHMS = ("ring", "tree")

# A default per-step latency is an assumption, shown as such: ~5 us per NCCL
# step over a network hop, ~1 us inside an NVLink domain (nccl-tests small-message times).
# Training (aisize.training.comm) and serving (aisize.serving.iteration) read these two.
SCALEUP_STEP_SECONDS = 1e-6
SCALEOUT_STEP_SECONDS = 5e-6
DEFAULT_EFFICIENCY = 0.8


def traffic_factor(op: str, n):
    """Bytes each GPU sends, as a multiple of the full buffer size S.

    Parameters
    ----------
    op : one of :data:`OPS`
    n : GPUs in the collective [count], >= 1

    Returns
    -------
    2 (n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
    all-to-all, 1 for broadcast with n > 1 (pipelined) [dimensionless].

    References
    ----------
    .. [1] nccl-tests ``doc/PERFORMANCE.md`` (bus bandwidth factors).
    """
    checks.choice("op", op, OPS)
    return _traffic(op, checks.integer("n", n, high=10**7))


def _traffic(op, n):
    share = (n - 1) / n
    if op == "all-reduce":
        return 2.0 * share
    if op == "broadcast":
        return np.where(n > 1, 1.0, 0.0) if np.ndim(n) else float(n > 1)
    return share


def steps(op: str, n, algorithm: str = "ring"):
    """Sequential communication steps (latency terms) of a collective over n GPUs.

    Ring: 2(n-1) for all-reduce, n-1 otherwise. Tree: 2 ceil(log2 n) for
    all-reduce (reduce then broadcast), ceil(log2 n) otherwise. All-to-all is
    n-1 pairwise exchanges either way.

    References
    ----------
    .. [1] Thakur et al. 2005, tables 1-2.
    """
    checks.choice("op", op, OPS)
    checks.choice("algorithm", algorithm, ALGORITHMS)
    return _steps(op, checks.integer("n", n, high=10**7), algorithm)


def _steps(op, n, algorithm):
    if algorithm == "tree" and op != "all-to-all":
        depth = np.ceil(np.log2(n))
        return 2.0 * depth if op == "all-reduce" else depth
    return 2.0 * (n - 1) if op == "all-reduce" else (n - 1) * 1.0


def transfer_seconds(payload_bytes, bandwidth_bytes_per_s, *, latency_seconds=0.0,
                     efficiency=DEFAULT_EFFICIENCY, messages=1):
    """Time to move ``payload_bytes`` over one link, one direction (alpha-beta).

    Parameters
    ----------
    payload_bytes : bytes to move [B], >= 0
    bandwidth_bytes_per_s : link rate per direction [B/s], > 0
    latency_seconds : per-message latency alpha [s], >= 0
    efficiency : achieved share of the link rate, (0, 1]
    messages : sequential messages (latency terms) [count], >= 0

    Returns
    -------
    seconds [s]

    References
    ----------
    .. [1] Thakur et al. 2005, section 2 (alpha + n*beta model).
    """
    payload = checks.non_negative("payload_bytes", payload_bytes)
    bandwidth = checks.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    alpha = checks.non_negative("latency_seconds", latency_seconds)
    eff = checks.fraction("efficiency", efficiency)
    k = checks.non_negative("messages", messages)
    return _transfer(payload, bandwidth, alpha, eff, k)


# The unchecked cores below take inputs their public function has checked: a hierarchical collective
# runs several ring collectives and transfers, and training evaluates thousands of layouts a move.
def _transfer(payload, bandwidth, alpha, eff, messages):
    return messages * alpha + payload / (bandwidth * eff)


def _collective(op, payload, n, bandwidth, alpha, eff, algorithm="ring"):
    return _transfer(_traffic(op, n) * payload, bandwidth, alpha, eff, _steps(op, n, algorithm))


def collective_seconds(op: str, payload_bytes, n, bandwidth_bytes_per_s, *,
                       latency_seconds=0.0, efficiency=DEFAULT_EFFICIENCY, algorithm: str = "ring"):
    """Time of a collective over ``n`` GPUs with one link rate per GPU.

    Parameters
    ----------
    op : one of :data:`OPS`
    payload_bytes : full buffer size S [B] (the gradient buffer for all-reduce;
        the gathered output for all-gather; the input for reduce-scatter and all-to-all)
    n : GPUs taking part [count]
    bandwidth_bytes_per_s : each GPU's link rate per direction [B/s]
    latency_seconds : per-step latency alpha [s]
    efficiency : achieved share of the link rate, (0, 1]
    algorithm : "ring" or "tree" (tree changes only the latency term: NCCL's
        double binary tree reaches the same bus bandwidth as the ring)

    Returns
    -------
    seconds [s]; 0 for n = 1.

    References
    ----------
    .. [1] Thakur et al. 2005; [2] Patarasuk & Yuan 2009; [3] nccl-tests PERFORMANCE.md.
    """
    checks.choice("op", op, OPS)
    n = checks.integer("n", n, high=10**7)
    payload = checks.non_negative("payload_bytes", payload_bytes)
    bandwidth = checks.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    alpha = checks.non_negative("latency_seconds", latency_seconds)
    eff = checks.fraction("efficiency", efficiency)
    checks.choice("algorithm", algorithm, ALGORITHMS)
    return _collective(op, payload, n, bandwidth, alpha, eff, algorithm)


def two_tier_collective_seconds(op: str, payload_bytes, n_inner, n_outer,
                                inner_bytes_per_s, outer_bytes_per_s, *,
                                inner_latency_seconds=SCALEUP_STEP_SECONDS,
                                outer_latency_seconds=SCALEOUT_STEP_SECONDS,
                                efficiency=DEFAULT_EFFICIENCY):
    """A collective over ``n_inner * n_outer`` GPUs: n_inner per scale-up domain
    (NVLink), n_outer domains joined by the scale-out network.

    Hierarchical algorithms as NCCL runs them on rail-optimized fabrics:
    all-reduce = reduce-scatter inside the domain, all-reduce of S/n_inner
    across domains, all-gather inside; all-gather and reduce-scatter = a
    cross-domain phase on S/n_inner plus an in-domain phase on S; all-to-all
    sends the share (n - n_inner)/n of S across domains and (n_inner - 1)/n
    inside, both at once, so the slower part sets the time.

    Parameters
    ----------
    op, payload_bytes : as in :func:`collective_seconds`
    n_inner, n_outer : GPUs per domain, domains [count]
    inner_bytes_per_s : scale-up rate per GPU per direction [B/s]
    outer_bytes_per_s : scale-out rate per GPU per direction [B/s] (NIC rate
        times NICs per server divided by GPUs per server)
    inner_latency_seconds, outer_latency_seconds : per-step latencies [s]
    efficiency : achieved share of both link rates, (0, 1]

    Returns
    -------
    seconds [s]

    References
    ----------
    .. [1] Thakur et al. 2005, section 4 (hierarchical composition).
    .. [2] NVIDIA, "Doubling all2all Performance with NVIDIA Collective
       Communication Library 2.12", 2022 (rail-optimized cross-node traffic).
    """
    checks.choice("op", op, OPS)
    s = checks.non_negative("payload_bytes", payload_bytes)
    ni = checks.integer("n_inner", n_inner, high=10**5)
    no = checks.integer("n_outer", n_outer, high=10**7)
    inner_bw = checks.positive("inner_bytes_per_s", inner_bytes_per_s)
    outer_bw = checks.positive("outer_bytes_per_s", outer_bytes_per_s)
    inner_alpha = checks.non_negative("inner_latency_seconds", inner_latency_seconds)
    outer_alpha = checks.non_negative("outer_latency_seconds", outer_latency_seconds)
    eff = checks.fraction("efficiency", efficiency)

    def inner(kind, size):
        return _collective(kind, size, ni, inner_bw, inner_alpha, eff)

    def outer(kind, size):
        return _collective(kind, size, no, outer_bw, outer_alpha, eff)

    if op == "all-reduce":
        return inner("reduce-scatter", s) + outer("all-reduce", s / ni) + inner("all-gather", s)
    if op in ("all-gather", "reduce-scatter"):
        return inner(op, s) + outer(op, s / ni)
    if op == "broadcast":
        return outer("broadcast", s) + inner("broadcast", s)
    n = ni * no
    inside = _transfer(s * (ni - 1) / n, inner_bw, inner_alpha, eff, ni - 1)
    across = _transfer(s * (n - ni) / n, outer_bw, outer_alpha, eff, n - ni)
    return np.maximum(inside, across)


def bus_bandwidth(op: str, algorithm_bytes_per_s, n):
    """NCCL bus bandwidth from algorithm bandwidth (S / time) [B/s].

    References
    ----------
    .. [1] nccl-tests ``doc/PERFORMANCE.md``: busbw = algbw x 2(n-1)/n for
       all-reduce, x (n-1)/n for all-gather, reduce-scatter, all-to-all.
    """
    return checks.non_negative("algorithm_bytes_per_s", algorithm_bytes_per_s) * traffic_factor(op, n)
