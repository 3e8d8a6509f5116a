"""Where a parallel group's ranks land: how many share one scale-up (NVLink) domain.

Megatron-Core numbers ranks tensor-parallel fastest, then context-parallel, expert-parallel,
data-parallel and pipeline-parallel (``order="tp-cp-ep-dp-pp"``; with MoE parallel folding the
expert layers number the same ranks expert-TP, expert-parallel, expert-data-parallel, PP), and
jobs fill scale-up domains with consecutive ranks. A group of ``n`` ranks whose neighbours are
``stride`` ranks apart therefore covers ``n x stride`` consecutive ranks: it is on NVLink when
that span fits in one domain. A larger group tiles domains: each domain holds the largest whole
share of the group that fits, ``domain // stride`` ranks rounded down to a divisor of ``n`` (so
the hierarchy stays uniform), and the rest of the group is in other domains, reached over the
scale-out network. Domains of any size: 8 (HGX/DGX, MI300X), 36 or 72 (GB200/GB300 NVL36/NVL72).

Example: on a GB200 NVL72 an expert-parallel group of 64 at stride 1 fits one rack (64 ranks on
NVLink); a data-parallel group of 256 at stride 1 puts 64 ranks in each of 4 racks; the same
group at stride 8 puts 8 in each of 32 racks.

References
----------
.. [1] NVIDIA Megatron-LM, ``megatron/core/parallel_state.py`` (``RankGenerator``, order
   ``tp-cp-ep-dp-pp``; expert ranks ``tp-ep-dp-pp`` with ``expert_tensor_parallel_size``).
.. [2] Liu et al. 2025, "MoE Parallel Folding", arXiv:2504.14960, sec. 3.
.. [3] NVIDIA GB200 NVL72 specification (72 GPUs in one NVLink domain).
"""

from __future__ import annotations

import numpy as np

__all__ = ["domain_share"]

_CODE = 1 << 20  # packs (n, cap) into one integer; caps beyond it are no different


def _largest_divisor_at_most(n: int, cap: int) -> int:
    for d in range(min(n, cap), 0, -1):
        if n % d == 0:
            return d
    return 1


def domain_share(n, stride, domain):
    """(ranks of the group in one scale-up domain, domains the group spans) [count].

    Parameters
    ----------
    n : ranks in the group [count], >= 1 (scalar or array)
    stride : distance between neighbouring ranks of the group in Megatron's order [count], >= 1
    domain : GPUs per scale-up domain [count], >= 1

    Returns
    -------
    (inner, outer) with inner x outer = n: inner is the largest divisor of n that is at most
    domain // stride (1 when the stride is a domain or more).

    References
    ----------
    .. [1] Megatron-LM ``RankGenerator`` (rank order); see the module docstring.
    """
    n = np.asarray(n, dtype=np.int64)
    cap = np.maximum(np.asarray(domain, dtype=np.int64) // np.maximum(np.asarray(stride, dtype=np.int64), 1), 1)
    n_b, cap_b = np.broadcast_arrays(n, cap)
    if n_b.ndim == 0:
        inner = np.int64(_largest_divisor_at_most(int(n_b), int(cap_b)))
        return inner, n // inner
    # the grids repeat few (n, cap) pairs: solve each pair once
    code = n_b.ravel() * _CODE + np.minimum(cap_b.ravel(), _CODE - 1)
    uniq, back = np.unique(code, return_inverse=True)
    solved = np.array([_largest_divisor_at_most(int(c // _CODE), int(c % _CODE)) for c in uniq], dtype=np.int64)
    inner = solved[np.ravel(back)].reshape(n_b.shape)
    return inner, n_b // inner
