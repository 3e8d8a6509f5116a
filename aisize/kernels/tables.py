"""Committed kernel-timing surfaces (data/kernels/): loading and vectorized lookup.

A surface file holds one (GPU, engine, op) table distilled from NVIDIA's measured kernel timings
(see :mod:`aisize.kernels.importer` and docs/kernels.md). Inside a table:

* *variants*: rows of categorical values (kernel source, dtype, KV dtype, window, ...), matched
  exactly; a caller names some of them and the rest resolve by the op's stated preferences (e.g.
  bfloat16, full attention, balanced routing), then to the variant with the most measured points,
  then by name;
* *axes*: numeric shape parameters, outermost first (e.g. ``n, k, m`` for a GEMM). The stored points
  form a tree: each node keeps the axis values it was measured (and retained) at, so sparse sweeps
  stay sparse. A query walks the tree and, at every axis, either matches a child exactly or
  interpolates linearly in (log value, log seconds) between the two bracketing children;
* a query outside the retained range of any axis at any node it visits is *out of range*: it is
  flagged (NaN plus a mask) or raises :class:`KernelOutOfRange`; nothing is extrapolated, so a
  caller can fall back to a roofline and say so.

Only numpy is needed to read the files (no pyarrow, no pandas); every load is lru-cached.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: natural-log seconds are stored as integer codes of this resolution (steps of 0.78 %, so at
#: most 0.39 % rounding error), as int16 successive differences split into two byte planes.
CODE_SCALE = 128.0
#: surface file format, bumped on any incompatible change.
FORMAT_VERSION = 1
#: the licence every committed surface inherits from its source.
SOURCE_LICENSE = "Apache-2.0"


class KernelDataMissing(LookupError):
    """No committed surface for the requested GPU / engine / op / variant."""


class KernelOutOfRange(ValueError):
    """A query falls outside the measured range of a surface (no extrapolation is done)."""

    def __init__(self, message: str, mask: np.ndarray):
        super().__init__(message)
        #: boolean array (query shape), True where the query is out of range.
        self.mask = mask


def data_dir() -> Path:
    """The committed surfaces: <repo>/data/kernels, or aisize/_data/kernels in an installed wheel."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here.parent / "data" / "kernels", here / "_data" / "kernels"):
        if cand.is_dir():
            return cand
    return here.parent / "data" / "kernels"


@dataclass(frozen=True)
class Lookup:
    """Result of a surface lookup: seconds (NaN where out of range) and the in-range mask."""

    seconds: np.ndarray
    in_range: np.ndarray
    variant: dict[str, str]
    table: "KernelTable"
    axis_failed: np.ndarray = field(repr=False, default=None)  # axis index per query, -1 if ok

    @property
    def all_in_range(self) -> bool:
        return bool(np.all(self.in_range))


class KernelTable:
    """One (GPU, engine, op) surface with its provenance and a vectorized tree lookup."""

    def __init__(self, meta: dict, axis_values: list[np.ndarray], variant: np.ndarray,
                 idx: np.ndarray, code: np.ndarray):
        self.meta = meta
        self.gpu: str = meta["gpu"]
        self.engine: str = meta["engine"]
        self.op: str = meta["op"]
        self.cats: tuple[str, ...] = tuple(meta["cats"])
        self.axes: tuple[str, ...] = tuple(meta["axes"])
        self.variants: list[tuple[str, ...]] = [tuple(v) for v in meta["variants"]]
        self.prefer: dict[str, list[str]] = meta.get("prefer", {})
        self.provenance: list[dict] = meta["sources"]
        self.axis_values = [np.asarray(a, dtype=np.float64) for a in axis_values]
        self._logv = [np.log(a) for a in self.axis_values]
        self._build(np.asarray(variant, dtype=np.int64), np.asarray(idx, dtype=np.int64),
                    np.asarray(code, dtype=np.int64))

    # ------------------------------------------------------------------ index
    def _build(self, variant: np.ndarray, idx: np.ndarray, code: np.ndarray) -> None:
        n, d = idx.shape
        if d != len(self.axes):
            raise ValueError(f"{self.op}: {d} index columns for {len(self.axes)} axes")
        order = np.lexsort(tuple(idx[:, j] for j in range(d - 1, -1, -1)) + (variant,))
        variant, idx, code = variant[order], idx[order], code[order]
        self.n_points = n
        self.point_variant, self.point_idx = variant, idx
        self._parent: list[np.ndarray] = []
        self._key: list[np.ndarray] = []
        self._vidx: list[np.ndarray] = []
        node = variant
        change = np.r_[True, variant[1:] != variant[:-1]] if n else np.zeros(0, bool)
        for j in range(d):
            if n:
                change = change | np.r_[True, idx[1:, j] != idx[:-1, j]]
            rows = np.flatnonzero(change)
            parent = node[rows]
            vidx = idx[rows, j]
            self._parent.append(parent)
            self._vidx.append(vidx)
            self._key.append(parent * len(self.axis_values[j]) + vidx)
            node = np.cumsum(change) - 1
        if n and not change.all():
            raise ValueError(f"{self.op}: duplicate points in surface")
        self._leaf = code.astype(np.float64) / CODE_SCALE

    # --------------------------------------------------------------- variants
    def variant_rows(self) -> list[dict[str, str]]:
        return [dict(zip(self.cats, v)) for v in self.variants]

    def points_per_variant(self) -> np.ndarray:
        if not hasattr(self, "_counts"):
            self._counts = np.bincount(self.point_variant, minlength=len(self.variants))
        return self._counts

    def resolve_variant(self, **filters) -> int:
        """Index of the variant matching *filters* (None values are ignored); the rest defaults."""
        unknown = set(filters) - set(self.cats)
        if unknown:
            raise TypeError(f"{self.op}: unknown variant keys {sorted(unknown)}; keys are {self.cats}")
        want = {k: str(v) for k, v in filters.items() if v is not None}
        cands = [i for i, v in enumerate(self.variants)
                 if all(v[self.cats.index(k)] == val for k, val in want.items())]
        if not cands:
            have = {c: sorted({v[i] for v in self.variants}) for i, c in enumerate(self.cats)}
            raise KernelDataMissing(
                f"no {self.op} surface for {self.gpu}/{self.engine} with {want}; available: {have}")
        return self.resolve_among(cands)

    def resolve_among(self, cands) -> int:
        """Of the variant indices ``cands``, the one the op's stated preferences pick, then the most points."""
        counts = self.points_per_variant()

        def rank(i: int):
            v = self.variants[i]
            pref = []
            for j, c in enumerate(self.cats):
                order = self.prefer.get(c, [])
                pref.append(order.index(v[j]) if v[j] in order else len(order))
            return (pref, -int(counts[i]), v)

        return min(cands, key=rank)

    # ----------------------------------------------------------------- lookup
    def lookup_ids(self, variant_ids: np.ndarray, coords: np.ndarray):
        """Core lookup: ln(seconds), in-range mask and failing axis (-1 if none) per query.

        ``variant_ids`` is (n,), ``coords`` is (n, n_axes) in the axes' own units.
        """
        coords = np.asarray(coords, dtype=np.float64)
        nq = coords.shape[0]
        fail = np.full(nq, -1, dtype=np.int64)
        q = np.arange(nq)
        node = np.asarray(variant_ids, dtype=np.int64)
        w = np.ones(nq)
        bad_cell = ~np.isfinite(coords) | (coords <= 0)
        bad = bad_cell.any(axis=1)
        fail[bad] = np.argmax(bad_cell[bad], axis=1)
        keep = ~bad
        q, node, w = q[keep], node[keep], w[keep]
        for j in range(len(self.axes)):
            vals, logv, key, parent = self.axis_values[j], self._logv[j], self._key[j], self._parent[j]
            m = len(vals)
            x = coords[q, j]
            pos_v = np.searchsorted(vals, x, side="left")
            exact_v = (pos_v < m) & (vals[np.minimum(pos_v, m - 1)] == x)
            pos = np.searchsorted(key, node * m + pos_v, side="left")
            nk = len(key)
            has_hi = (pos < nk) & (parent[np.minimum(pos, nk - 1)] == node)
            hi = np.minimum(pos, nk - 1)
            lo = np.maximum(pos - 1, 0)
            has_lo = (pos > 0) & (parent[lo] == node)
            exact = has_hi & exact_v & (self._vidx[j][hi] == pos_v)
            inter = ~exact & has_hi & has_lo
            miss = ~(exact | inter)
            if miss.any():
                mq = q[miss]
                first = fail[mq] < 0
                fail[mq[first]] = j
            lx = np.log(x[inter])
            l0 = logv[self._vidx[j][lo[inter]]]
            l1 = logv[self._vidx[j][hi[inter]]]
            t = (lx - l0) / (l1 - l0)
            wi = w[inter]
            q = np.concatenate([q[exact], q[inter], q[inter]])
            node = np.concatenate([hi[exact], lo[inter], hi[inter]])
            w = np.concatenate([w[exact], wi * (1.0 - t), wi * t])
            # drop branches of queries that already failed somewhere
            live = fail[q] < 0
            q, node, w = q[live], node[live], w[live]
        y = np.bincount(q, weights=w * self._leaf[node], minlength=nq).astype(np.float64)
        ok = fail < 0
        y[~ok] = np.nan
        return y, ok, fail

    def lookup(self, variant: dict | None = None, **axes) -> Lookup:
        """Seconds for arrays of shapes (broadcast together), for one variant (dict of filters)."""
        missing = [a for a in self.axes if a not in axes]
        extra = [a for a in axes if a not in self.axes]
        if missing or extra:
            raise TypeError(f"{self.op} axes are {self.axes}; missing {missing}, unexpected {extra}")
        vid = self.resolve_variant(**(variant or {}))
        arrays = np.broadcast_arrays(*[np.asarray(axes[a], dtype=np.float64) for a in self.axes])
        shape = arrays[0].shape
        coords = np.stack([a.ravel() for a in arrays], axis=1) if arrays else np.zeros((1, 0))
        y, ok, fail = self.lookup_ids(np.full(coords.shape[0], vid), coords)
        return Lookup(np.exp(y).reshape(shape), ok.reshape(shape),
                      dict(zip(self.cats, self.variants[vid])), self, fail.reshape(shape))

    def axis_range(self, variant: dict | None = None) -> dict[str, tuple[float, float]]:
        """Overall (min, max) of each axis over the points of one variant (not per node)."""
        vid = self.resolve_variant(**(variant or {}))
        sel = self.point_idx[self.point_variant == vid]
        return {a: (float(self.axis_values[j][sel[:, j].min()]), float(self.axis_values[j][sel[:, j].max()]))
                for j, a in enumerate(self.axes)}

    def points(self, variant: dict | None = None) -> dict[str, np.ndarray]:
        """The retained surface points of one variant: axis values and seconds."""
        vid = self.resolve_variant(**(variant or {}))
        sel = self.point_variant == vid
        out = {a: self.axis_values[j][self.point_idx[sel, j]] for j, a in enumerate(self.axes)}
        out["seconds"] = np.exp(self._leaf[sel])
        return out

    def __repr__(self) -> str:
        return (f"KernelTable({self.gpu}/{self.engine}/{self.op}: {len(self.variants)} variants, "
                f"axes {self.axes}, {self.n_points} points)")


# ---------------------------------------------------------------------- files
def read_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def table_from_arrays(arrays: dict[str, np.ndarray]) -> KernelTable:
    meta = json.loads(bytes(arrays["meta"]).decode("utf-8"))
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"kernel surface format {meta.get('format')} (expected {FORMAT_VERSION})")
    axis_values = [arrays[f"axis_{j}"] for j in range(len(meta["axes"]))]
    idx = np.stack([arrays[f"idx_{j}"] for j in range(len(meta["axes"]))], axis=1)
    planes = arrays["dcode"].astype(np.uint16)  # (2, n): low and high bytes of int16 differences
    code = np.cumsum((planes[0] | (planes[1] << 8)).view(np.int16).astype(np.int64))
    return KernelTable(meta, axis_values, arrays["variant"], idx, code)


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> int:
    """Write arrays as a deterministic .npz (fixed member order and timestamps); returns bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue(), compresslevel=9)
    data = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return len(data)


@functools.lru_cache(maxsize=None)
def _index(root: str) -> tuple[dict, ...]:
    path = Path(root) / "INDEX.csv"
    if not path.is_file():
        return ()
    with path.open(newline="") as fh:
        return tuple(csv.DictReader(fh))


def index(root: Path | None = None) -> list[dict]:
    """Rows of data/kernels/INDEX.csv: one per committed (gpu, engine, op) surface."""
    return [dict(r) for r in _index(str(root or data_dir()))]


@functools.lru_cache(maxsize=None)
def _load(root: str, rel: str) -> KernelTable:
    return table_from_arrays(read_npz(Path(root) / rel))


def load(gpu: str, engine: str, op: str, root: Path | None = None) -> KernelTable:
    """The committed surface for (gpu, engine, op); raises KernelDataMissing when there is none."""
    root = root or data_dir()
    for row in _index(str(root)):
        if row["gpu"] == gpu and row["engine"] == engine and row["op"] == op:
            return _load(str(root), row["file"])
    have = sorted({(r["gpu"], r["engine"]) for r in _index(str(root)) if r["op"] == op})
    raise KernelDataMissing(f"no committed {op} surface for gpu={gpu!r} engine={engine!r}; have {have}")


def clear_caches() -> None:
    _index.cache_clear()
    _load.cache_clear()
