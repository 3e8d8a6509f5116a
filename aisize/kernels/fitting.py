"""Distillation of measured kernel timings into compact surfaces (used by the importer only).

Everything works in log space: x = ln(axis value), y = ln(seconds). Two steps, both deterministic
numpy (no iterative solver), so a re-import reproduces the committed files byte for byte:

1. **Innermost axis** (GEMM m, attention sequence, MoE tokens, message size, ...): isolated
   glitches are set aside (:func:`isolated_spikes`); each measured curve is fitted by a
   piecewise-linear function of ln x with knots at the powers of two (optionally also 3 * 2**k)
   inside its measured range plus its two end points (least squares, a tiny second-difference
   penalty for knots without data). Knots that the neighbouring knots reproduce within ``tol`` are
   then removed (Douglas-Peucker on the fitted curve), so flat and power-law stretches keep two.
2. **Outer axes**, innermost first (e.g. GEMM k, then n): a node (a whole sub-table at one axis
   value) is dropped when interpolating between its retained neighbours keeps the RMS difference
   from the current surface at the measured points under it within ``tol`` and the largest within
   ``tol * MAX_FACTOR``. Neighbour lookups that leave the measured range count as infinite error,
   so sparse sweeps keep their nodes.

The error against the measured points is checked afterwards (tests/test_kernels.py, docs/kernels.md).
"""

from __future__ import annotations

import numpy as np

from aisize.kernels.tables import CODE_SCALE, KernelTable

#: second-difference penalty of the innermost-axis least-squares fit (only matters without data).
SMOOTHING = 1e-3
#: a point this far (in ln) above or below both neighbours on its curve is a measurement glitch.
SPIKE = float(np.log(3.0))
#: an outer node may be dropped when the RMS error it causes is within tol and the largest
#: error within tol * MAX_FACTOR.
MAX_FACTOR = 3.0


def _hat(xk: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Interpolation matrix: row i gives the weights of knots xk reproducing a value at xs[i]."""
    a = np.zeros((len(xs), len(xk)))
    if len(xk) == 1:
        a[:, 0] = 1.0
        return a
    j = np.clip(np.searchsorted(xk, xs, side="right") - 1, 0, len(xk) - 2)
    t = (xs - xk[j]) / (xk[j + 1] - xk[j])
    rows = np.arange(len(xs))
    a[rows, j] = 1.0 - t
    a[rows, j + 1] = t
    return a


def _curve_starts(cid: np.ndarray) -> np.ndarray:
    return np.r_[0, np.flatnonzero(cid[1:] != cid[:-1]) + 1, len(cid)]


def fit_curves(cid: np.ndarray, x: np.ndarray, y: np.ndarray, knots: np.ndarray):
    """Least-squares piecewise-linear fit of each curve (rows sorted by cid, then x).

    Returns (curve id, knot x, knot y) sorted by curve then x. Curves sharing the same measured x
    set share one solve.
    """
    starts = _curve_starts(cid)
    groups: dict[bytes, list[int]] = {}
    for c in range(len(starts) - 1):
        groups.setdefault(x[starts[c]:starts[c + 1]].tobytes(), []).append(c)
    out_c, out_x, out_y = [], [], []
    for key in sorted(groups):
        cs = groups[key]
        xs = np.frombuffer(key, dtype=np.float64)
        xk = np.unique(np.r_[knots[(knots > xs[0]) & (knots < xs[-1])], xs[0], xs[-1]])
        kk = len(xk)
        a = _hat(xk, xs)
        m = a.T @ a
        if kk > 2:
            d = np.zeros((kk - 2, kk))
            for i in range(kk - 2):
                d[i, i:i + 3] = (1.0, -2.0, 1.0)
            m = m + SMOOTHING * (d.T @ d)
        op = np.linalg.solve(m + 1e-12 * np.eye(kk), a.T)
        ys = np.stack([y[starts[c]:starts[c + 1]] for c in cs], axis=1)
        v = op @ ys
        for col, c in enumerate(cs):
            out_c.append(np.full(kk, c))
            out_x.append(xk)
            out_y.append(v[:, col])
    kc, kx, ky = np.concatenate(out_c), np.concatenate(out_x), np.concatenate(out_y)
    order = np.lexsort((kx, kc))
    return kc[order], kx[order], ky[order]


def isolated_spikes(cid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mask of isolated glitches along each curve (rows sorted by cid, then x).

    A point is a glitch when it is more than :data:`SPIKE` (in ln, i.e. 3x) slower than both of its
    neighbours or faster than both by as much, e.g. one GEMM m measured at 20x its neighbours. End
    points are never flagged. The fit ignores glitches; the reproduction figures still count them.
    """
    n = len(y)
    mask = np.zeros(n, dtype=bool)
    if n < 3:
        return mask
    inner = np.r_[False, (cid[1:-1] == cid[:-2]) & (cid[1:-1] == cid[2:]), False]
    prev = np.r_[y[0], y[:-1]]
    nxt = np.r_[y[1:], y[-1]]
    up = y - np.maximum(prev, nxt) > SPIKE
    down = np.minimum(prev, nxt) - y > SPIKE
    return inner & (up | down)


def simplify_curves(cid: np.ndarray, x: np.ndarray, y: np.ndarray, tol: float) -> np.ndarray:
    """Douglas-Peucker per curve (rows sorted by cid, then x): mask of knots to keep."""
    n = len(x)
    idx = np.arange(n)
    kept = np.r_[True, cid[1:] != cid[:-1]] | np.r_[cid[1:] != cid[:-1], True]
    while True:
        p = np.maximum.accumulate(np.where(kept, idx, 0))
        q = np.minimum.accumulate(np.where(kept, idx, n)[::-1])[::-1]
        dx = x[q] - x[p]
        t = np.where(dx > 0, (x - x[p]) / np.where(dx > 0, dx, 1.0), 0.0)
        err = np.where(kept, 0.0, np.abs(y - (y[p] + t * (y[q] - y[p]))))
        bad = err > tol
        if not bad.any():
            return kept
        order = np.lexsort((-err, cid))
        first = order[np.r_[True, cid[order][1:] != cid[order][:-1]]]
        kept[first[bad[first]]] = True


def table_for(axes: tuple[str, ...], axis_values: list[np.ndarray], variant: np.ndarray,
              idx: np.ndarray, code: np.ndarray) -> KernelTable:
    meta = {"gpu": "", "engine": "", "op": "work", "cats": [], "axes": list(axes),
            "variants": [[] for _ in range(int(variant.max()) + 1 if len(variant) else 0)],
            "sources": []}
    return KernelTable(meta, axis_values, variant, idx, code)


def node_of(table: KernelTable, variant: np.ndarray, idx: np.ndarray, level: int) -> np.ndarray:
    """Level-`level` node of points given by exact axis indices (which must exist in the table)."""
    node = variant.astype(np.int64)
    for j in range(level + 1):
        m = len(table.axis_values[j])
        pos = np.searchsorted(table._key[j], node * m + idx[:, j])
        node = pos
    return node


def prune_level(table: KernelTable, level: int, src_var: np.ndarray, src_idx: np.ndarray,
                tol: float, max_factor: float = MAX_FACTOR) -> np.ndarray:
    """Keep-mask over the table's points after dropping nodes of axis ``level`` (see module doc).

    ``src_var`` / ``src_idx`` are the measured points (variant id, axis indices into the table's
    axis values); the error is taken against the current table at those points.
    """
    j = level
    parent = table._parent[j]
    vidx = table._vidx[j]
    k = len(parent)
    if k <= 2:
        return np.ones(table.n_points, dtype=bool)
    coords = np.stack([table.axis_values[a][src_idx[:, a]] for a in range(len(table.axes))], axis=1)
    base, ok, _ = table.lookup_ids(src_var, coords)
    src_node = node_of(table, src_var, src_idx, j)
    order = np.argsort(src_node, kind="stable")
    src_node_sorted = src_node[order]
    bounds = np.searchsorted(src_node_sorted, np.arange(k + 1))
    logv = np.log(table.axis_values[j])
    pos = np.arange(k)
    kept = np.r_[True, parent[1:] != parent[:-1]] | np.r_[parent[1:] != parent[:-1], True]
    err = np.full(k, np.inf)
    last_l = np.full(k, -1)
    last_r = np.full(k, -1)
    while True:
        lft = np.maximum.accumulate(np.where(kept, pos, 0))
        rgt = np.minimum.accumulate(np.where(kept, pos, k)[::-1])[::-1]
        dirty = ~kept & ((lft != last_l) | (rgt != last_r))
        if dirty.any():
            nodes = np.flatnonzero(dirty)
            counts = bounds[nodes + 1] - bounds[nodes]
            rows = order[np.concatenate([np.arange(bounds[c], bounds[c + 1]) for c in nodes])] \
                if counts.sum() else np.zeros(0, dtype=np.int64)
            owner = np.repeat(nodes, counts)
            cl = coords[rows].copy()
            cr = coords[rows].copy()
            cl[:, j] = table.axis_values[j][vidx[lft[owner]]]
            cr[:, j] = table.axis_values[j][vidx[rgt[owner]]]
            yl, okl, _ = table.lookup_ids(src_var[rows], cl)
            yr, okr, _ = table.lookup_ids(src_var[rows], cr)
            x0, x1 = logv[vidx[lft[owner]]], logv[vidx[rgt[owner]]]
            t = (np.log(coords[rows, j]) - x0) / (x1 - x0)
            approx = yl + t * (yr - yl)
            e = np.abs(approx - base[rows])
            e[~(okl & okr & ok[rows])] = np.inf
            emax = np.zeros(k)
            np.maximum.at(emax, owner, e)
            esq = np.bincount(owner, weights=np.where(np.isfinite(e), e * e, 0.0), minlength=k)
            rms = np.sqrt(esq[nodes] / np.maximum(counts, 1))
            # scaled so that "err > tol" means: rms above tol, or max above tol * max_factor
            err[nodes] = np.maximum(rms, emax[nodes] / max_factor)
            last_l[nodes], last_r[nodes] = lft[nodes], rgt[nodes]
        cand = ~kept & (err > tol)
        if not cand.any():
            break
        e_c = np.where(cand, err, -1.0)
        o = np.lexsort((-e_c, parent))
        first = o[np.r_[True, parent[o][1:] != parent[o][:-1]]]
        kept[first[cand[first]]] = True
    point_node = node_of(table, table.point_variant, table.point_idx, j)
    return kept[point_node]


def quantize(y: np.ndarray) -> np.ndarray:
    """ln(seconds) -> int16 codes (0.1 % resolution)."""
    code = np.round(y * CODE_SCALE)
    if code.min(initial=0) < -32768 or code.max(initial=0) > 32767:
        raise ValueError("latency outside the int16 code range")
    return code.astype(np.int64)
