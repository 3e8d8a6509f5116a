"""Reproducible import of NVIDIA's measured kernel timings (the ``aiconfigurator-core`` package).

``aiconfigurator-core`` (Apache-2.0) ships silicon measurements as parquet tables under
``aiconfigurator_core/systems/data/<system>/<family>/<engine>/<version>/<op>_perf.parquet``. For each
GPU and engine this module takes the version the package itself queries by default (the
``current`` slot of ``systems/query_versions.yaml``; an op file missing there is taken from the
newest earlier version, as the package backfills), NCCL at the system's ``misc.nccl_version``, and
distills every op table (:data:`OPS`) into one compact surface (:mod:`aisize.kernels.fitting`)
written under ``data/kernels/<gpu>/<engine>/<op>.npz`` with its provenance.

The package is an optional extra (``pip install 'aisize[kernels]'``): it is imported only here,
only when an import is run. Reading the committed surfaces needs numpy alone.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from aisize.kernels import fitting
from aisize.kernels.tables import FORMAT_VERSION, SOURCE_LICENSE, table_from_arrays, write_npz

PACKAGE = "aiconfigurator-core"
#: total size budget of data/kernels (every file); the import fails beyond it.
BUDGET_BYTES = 5_000_000
#: relative tolerances (in ln seconds) of the innermost-axis knot removal and of each outer axis.
TOL_INNER = 0.025
TOL_OUTER = 0.025
#: looser tolerances for the smooth, large tables (attention, MLA, MoE).
TOL_SMOOTH = 0.05
#: GEMM: half-octave knots in m (the sweeps resolve wave quantization) with a looser tolerance.
TOL_GEMM = 0.06

#: package system name -> aisize accelerator id (data/accelerators.csv).
GPUS = {
    "a100_sxm": "a100-sxm-80gb",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
    "l40s": "l40s",
    "rtx_pro_6000_server": "rtx-pro-6000-server",
}
ENGINES = ("trtllm", "vllm", "sglang")


@dataclass(frozen=True)
class OpDef:
    """How one op's source table(s) map onto a surface."""

    op: str
    family: str
    files: tuple[str, ...]
    cats: tuple[str, ...]
    axes: tuple[str, ...]
    frame: Callable  # (pandas frame, file name) -> frame with cats, axes and "seconds"
    engines: tuple[str, ...] = ENGINES
    prefer: tuple[tuple[str, tuple[str, ...]], ...] = ()
    tol_inner: float = TOL_INNER
    tol_outer: float = TOL_OUTER
    #: knots of the innermost-axis fit per octave: 1 (powers of two) or 2 (also 3 * 2**k).
    knots_per_octave: int = 1


def _base(df, unit: float, value: str = "latency", **cols):
    import pandas as pd

    out = pd.DataFrame({name: (src(df) if callable(src) else df[src]) for name, src in cols.items()})
    out["seconds"] = df[value].to_numpy(dtype=float) * unit
    return out


def _col(name, default=None):
    def get(df):
        return df[name] if name in df else np.full(len(df), default)
    return get


def m_align(m) -> np.ndarray:
    """GEMM m class: "aligned" (m <= 16 or a multiple of 16) or "unaligned" (the m = 16 j + 1 probes)."""
    m = np.asarray(m, dtype=np.float64)
    aligned = (m <= 16) | (np.mod(m, 16) == 0)
    return np.where(aligned, "aligned", "unaligned")


def _gemm(df, _):
    return _base(df, 1e-3, kernel="kernel_source", dtype="gemm_dtype", m_align=lambda d: m_align(d["m"]),
                 n="n", k="k", m="m")


def _attention(generation: bool):
    def frame(df, _):
        if "beam_width" in df:
            df = df[df["beam_width"] == 1]
        if not generation:
            df = df[df["step"] == 0]
        return _base(df, 1e-3, kernel="kernel_source", dtype="attn_dtype", kv_dtype="kv_cache_dtype",
                     window=_col("window_size", 0), head_dim="head_dim",
                     num_kv_heads="num_key_value_heads", num_heads="num_heads", batch="batch_size",
                     seq=(lambda d: d["isl"] + d["step"]) if generation else "isl")
    return frame


def _mla(generation: bool):
    def frame(df, _):
        if not generation:
            df = df[df["step"] == 0]
        return _base(df, 1e-3, kernel="kernel_source", dtype="mla_dtype", kv_dtype="kv_cache_dtype",
                     num_heads="num_heads", batch="batch_size",
                     seq=(lambda d: d["isl"] + d["step"]) if generation else "isl")
    return frame


def _moe(df, _):
    return _base(df, 1e-3, kernel="kernel_source", dtype="moe_dtype", distribution="distribution",
                 hidden="hidden_size", inter="inter_size", topk="topk", num_experts="num_experts",
                 tp="moe_tp_size", ep="moe_ep_size", tokens="num_tokens")


def _allreduce(df, _):
    return _base(df, 1e-3, kernel="kernel_source", dtype="allreduce_dtype", num_gpus="num_gpus",
                 elements="message_size")


def _nccl(df, _):
    return _base(df, 1e-3, collective="op_name", dtype="nccl_dtype", num_gpus="num_gpus",
                 elements="message_size")


_A2A_AXES = dict(hidden="hidden_size", topk="topk", num_experts="num_experts", ep="ep_size",
                 tokens="num_tokens")


def _a2a(df, name):
    import pandas as pd

    if name == "moe_a2a_perf.parquet":
        df = df[df["node_num"] == 1]
        return _base(df, 1e-6, backend="comm_backend", phase="phase", dtype="comm_dtype",
                     sms=lambda d: d["sms"].astype(str), **_A2A_AXES)
    # SGLang DeepEP tables: one row holds both phases; single-node collections on 8 GPUs.
    df = df.assign(ep_size=8 * df["node_num"])
    frames = []
    for phase in ("dispatch", "combine"):
        if name == "wideep_deepep_normal_perf.parquet":
            value = df[f"{phase}_transmit_us"] + df[f"{phase}_notify_us"]
            backend, sms = "deepep_normal", df[f"{phase}_sms"].astype(str)
        else:
            value = df[f"{phase}_avg_t_us"]
            backend, sms = "deepep_ll", np.full(len(df), "0")
        d = df.assign(_v=value)
        frames.append(_base(d, 1e-6, value="_v", backend=lambda x, b=backend: np.full(len(x), b),
                            phase=lambda x, p=phase: np.full(len(x), p), dtype=lambda x: np.full(len(x), "default"),
                            sms=lambda x, s=sms: s, hidden="hidden_size", topk="num_topk",
                            num_experts="num_experts", ep="ep_size", tokens="num_token"))
    return pd.concat(frames, ignore_index=True)


_ATT_CATS = ("kernel", "dtype", "kv_dtype", "window")
_ATT_AXES = ("head_dim", "num_kv_heads", "num_heads", "batch", "seq")
_BF16 = (("dtype", ("bfloat16",)), ("kv_dtype", ("bfloat16",)), ("window", ("0",)))
OPS: tuple[OpDef, ...] = (
    OpDef("gemm", "gemm", ("gemm_perf.parquet",), ("kernel", "dtype", "m_align"), ("n", "k", "m"), _gemm,
          prefer=(("m_align", ("aligned",)),), tol_inner=TOL_GEMM, tol_outer=TOL_GEMM, knots_per_octave=2),
    OpDef("context_attention", "attention", ("context_attention_perf.parquet",), _ATT_CATS, _ATT_AXES,
          _attention(False), prefer=_BF16, tol_inner=TOL_SMOOTH, tol_outer=TOL_SMOOTH),
    OpDef("generation_attention", "attention", ("generation_attention_perf.parquet",), _ATT_CATS,
          _ATT_AXES, _attention(True), prefer=_BF16, tol_inner=TOL_SMOOTH, tol_outer=TOL_SMOOTH),
    OpDef("context_mla", "mla", ("context_mla_perf.parquet",), ("kernel", "dtype", "kv_dtype"),
          ("num_heads", "batch", "seq"), _mla(False), prefer=_BF16[:2], tol_inner=TOL_SMOOTH,
          tol_outer=TOL_SMOOTH),
    OpDef("generation_mla", "mla", ("generation_mla_perf.parquet",), ("kernel", "dtype", "kv_dtype"),
          ("num_heads", "batch", "seq"), _mla(True), prefer=_BF16[:2], tol_inner=TOL_SMOOTH,
          tol_outer=TOL_SMOOTH),
    OpDef("moe", "moe", ("moe_perf.parquet",), ("kernel", "dtype", "distribution"),
          ("hidden", "inter", "topk", "num_experts", "tp", "ep", "tokens"), _moe,
          prefer=(("distribution", ("balanced",)),), tol_inner=TOL_SMOOTH, tol_outer=TOL_SMOOTH),
    OpDef("custom_allreduce", "comm", ("custom_allreduce_perf.parquet",), ("kernel", "dtype"),
          ("num_gpus", "elements"), _allreduce,
          prefer=(("kernel", ("TRTLLM", "vLLM_custom_graph", "SGLang_CustomAllReduce_graph")),)),
    OpDef("moe_a2a", "comm", ("moe_a2a_perf.parquet", "wideep_deepep_normal_perf.parquet",
                              "wideep_deepep_ll_perf.parquet"),
          ("backend", "phase", "dtype", "sms"), tuple(_A2A_AXES), _a2a,
          prefer=(("sms", ("20", "0")), ("dtype", ("bfloat16", "default")))),
    OpDef("nccl", "comm", ("nccl_perf.parquet",), ("collective", "dtype"), ("num_gpus", "elements"),
          _nccl, engines=("nccl",), prefer=(("dtype", ("half",)),)),
)
OPS_BY_NAME = {o.op: o for o in OPS}


# --------------------------------------------------------------------------- source discovery
def package_root() -> Path:
    """The installed aiconfigurator_core package directory (ImportError when not installed)."""
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).resolve().parent


def package_version() -> str:
    from importlib.metadata import version

    return version(PACKAGE)


def package_license() -> str:
    from importlib.metadata import metadata

    md = metadata(PACKAGE)
    return md.get("License-Expression") or md.get("License") or ""


def _vkey(v: str):
    from packaging.version import Version

    return Version(v)


def current_versions(root: Path) -> dict[tuple[str, str], str]:
    """(system, engine) -> the version the package queries by default (its ``current`` slot)."""
    import yaml

    doc = yaml.safe_load((root / "systems" / "query_versions.yaml").read_text())
    out = {}
    for system in GPUS:
        for engine in ENGINES:
            slot = (doc.get("overrides", {}).get(system, {}) or {}).get(engine) or doc["defaults"][engine]
            out[(system, engine)] = slot["current"]
    return out


def find_sources(root: Path, system: str, engine: str, version: str, opdef: OpDef) -> list[tuple[str, Path]]:
    """(version used, path) per source file of an op; backfilled from the newest earlier version."""
    base = root / "systems" / "data" / system / opdef.family / engine
    found = []
    for name in opdef.files:
        versions = [p.name for p in base.iterdir() if (p / name).is_file()] if base.is_dir() else []
        versions = [v for v in versions if _vkey(v) <= _vkey(version)] if engine != "nccl" else \
            [v for v in versions if v == version]
        if versions:
            best = max(versions, key=_vkey)
            found.append((best, base / best / name))
    return found


def nccl_version(root: Path, system: str) -> str | None:
    import yaml

    spec = yaml.safe_load((root / "systems" / f"{system}.yaml").read_text())
    return (spec.get("misc") or {}).get("nccl_version")


def plan(root: Path, gpus=None, engines=None) -> list[dict]:
    """Every (gpu, engine, op) table to import, with its sources."""
    cur = current_versions(root)
    jobs = []
    for system, gpu in GPUS.items():
        if gpus and gpu not in gpus and system not in gpus:
            continue
        pairs = [(e, cur[(system, e)]) for e in ENGINES]
        nv = nccl_version(root, system)
        if nv:
            pairs.append(("nccl", str(nv)))
        for engine, version in pairs:
            if engines and engine not in engines:
                continue
            for opdef in OPS:
                if engine not in opdef.engines:
                    continue
                srcs = find_sources(root, system, engine, version, opdef)
                if srcs:
                    jobs.append(dict(gpu=gpu, system=system, engine=engine, version=version,
                                     op=opdef.op, sources=srcs))
    return jobs


# --------------------------------------------------------------------------- distillation
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_frame(opdef: OpDef, sources: list[tuple[str, Path]]):
    """Standardized measured points of an op (first row wins on duplicate keys, as in the package).

    Returns (frame, per-source row counts, duplicates dropped, invalid rows dropped).
    """
    import pandas as pd

    frames, rows = [], []
    for _, path in sources:
        raw = pd.read_parquet(path)
        rows.append(len(raw))
        frames.append(opdef.frame(raw, path.name))
    df = pd.concat(frames, ignore_index=True)
    for c in opdef.cats:
        df[c] = df[c].astype(str)
    for a in opdef.axes:
        df[a] = df[a].astype(np.float64)
    good = np.isfinite(df["seconds"]) & (df["seconds"] > 0) & (df[list(opdef.axes)] > 0).all(axis=1)
    invalid = int((~good).sum())
    df = df[good]
    dup = df.duplicated(list(opdef.cats) + list(opdef.axes), keep="first")
    return df[~dup].reset_index(drop=True), rows, int(dup.sum()), invalid


def distill(opdef: OpDef, df):
    """Fit and prune one op's measured points; returns the arrays of a surface file (no meta)."""
    cats, axes = list(opdef.cats), list(opdef.axes)
    vt = df[cats].drop_duplicates().sort_values(cats)
    variants = [tuple(r) for r in vt.itertuples(index=False)]
    vid = {v: i for i, v in enumerate(variants)}
    var = np.array([vid[tuple(r)] for r in df[cats].itertuples(index=False)], dtype=np.int64)
    src_vals = [np.unique(df[a].to_numpy()) for a in axes]
    d = len(axes)
    knots = 2.0 ** np.arange(0, 40)
    if opdef.knots_per_octave == 2:
        knots = np.unique(np.r_[knots, 3 * knots])
    # union with knots on the innermost axis so knot x values are indexable
    inner_vals = np.unique(np.r_[src_vals[-1], knots[(knots >= src_vals[-1][0]) & (knots <= src_vals[-1][-1])]])
    axis_values = src_vals[:-1] + [inner_vals]
    src_idx = np.stack([np.searchsorted(axis_values[j], df[a].to_numpy()) for j, a in enumerate(axes)], axis=1)
    y = np.log(df["seconds"].to_numpy())
    order = np.lexsort(tuple(src_idx[:, j] for j in range(d - 1, -1, -1)) + (var,))
    var, src_idx, y = var[order], src_idx[order], y[order]
    # 1. innermost axis: glitches out, least-squares fit on (half-)octave knots, knot removal
    outer = np.column_stack([var, src_idx[:, :-1]])
    cid = np.r_[0, np.cumsum(np.any(outer[1:] != outer[:-1], axis=1))]
    x = np.log(axis_values[-1][src_idx[:, -1]])
    spikes = fitting.isolated_spikes(cid, x, y)
    kc, kx, ky = fitting.fit_curves(cid[~spikes], x[~spikes], y[~spikes], np.log(knots))
    keep = fitting.simplify_curves(kc, kx, ky, opdef.tol_inner)
    kc, kx, ky = kc[keep], kx[keep], ky[keep]
    first = np.r_[0, np.flatnonzero(cid[1:] != cid[:-1]) + 1]
    t_var = var[first][kc]
    t_idx = np.column_stack([src_idx[first][kc, :-1],
                             np.searchsorted(np.log(axis_values[-1]), kx)])
    code = fitting.quantize(ky)
    # 2. outer axes, innermost first
    for level in range(d - 2, -1, -1):
        table = fitting.table_for(tuple(axes), axis_values, t_var, t_idx, code)
        mask = fitting.prune_level(table, level, var, src_idx, opdef.tol_outer)
        t_var, t_idx = table.point_variant[mask], table.point_idx[mask]
        code = np.round(table._leaf[mask] * fitting.CODE_SCALE).astype(np.int64)
    # compact: keep only axis values in use, small integer types, codes as deltas
    arrays = {}
    for j in range(d):
        used = np.unique(t_idx[:, j])
        arrays[f"axis_{j}"] = axis_values[j][used]
        col = np.searchsorted(used, t_idx[:, j])
        arrays[f"idx_{j}"] = col.astype(np.uint8 if len(used) <= 256 else np.uint16)
    arrays["variant"] = t_var.astype(np.uint8 if len(variants) <= 256 else np.uint16)
    delta = np.diff(code, prepend=0)
    if np.abs(delta).max(initial=0) > 32767:
        raise ValueError(f"{opdef.op}: code step out of int16 range")
    arrays["dcode"] = delta.astype("<i2").view(np.uint8).reshape(-1, 2).T.copy()
    return arrays, variants, int(spikes.sum())


def build_table(job: dict, root: Path, pkg_version: str, license_: str):
    """(arrays with meta, provenance rows) for one planned table."""
    opdef = OPS_BY_NAME[job["op"]]
    df, rows, dups, invalid = read_frame(opdef, job["sources"])
    arrays, variants, spikes = distill(opdef, df)
    sources = []
    for (ver, path), n in zip(job["sources"], rows):
        sources.append(dict(package=PACKAGE, package_version=pkg_version,
                            source_path=str(path.relative_to(root.parent)), source_version=ver,
                            license=license_, sha256=sha256(path), rows=n))
    meta = dict(format=FORMAT_VERSION, gpu=job["gpu"], engine=job["engine"], version=job["version"],
                op=job["op"], system=job["system"], cats=list(opdef.cats), axes=list(opdef.axes),
                variants=[list(v) for v in variants], prefer={k: list(v) for k, v in opdef.prefer},
                units="seconds", source_points=int(len(df)), duplicates_dropped=dups, spikes_ignored=spikes,
                invalid_dropped=invalid, tol_inner=opdef.tol_inner, tol_outer=opdef.tol_outer, sources=sources)
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    return arrays, meta


INDEX_FIELDS = ("gpu", "engine", "version", "op", "file", "variants", "source_points", "points", "bytes")
PROVENANCE_FIELDS = ("gpu", "engine", "op", "file", "package", "package_version", "source_path",
                     "source_version", "license", "sha256", "rows")


def _write_csv(path: Path, fields, rows) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r[k] for k in fields})
    path.write_text(buf.getvalue())


def import_all(out_dir: Path, gpus=None, engines=None, log=print) -> list[dict]:
    """Import every table (or the selected GPUs / engines) into ``out_dir``; returns INDEX rows.

    A partial import rewrites only the selected tables and keeps the other rows of INDEX.csv and
    PROVENANCE.csv. Fails when the directory ends up over :data:`BUDGET_BYTES`.
    """
    root = package_root()
    pkg_version, license_ = package_version(), package_license()
    if license_ != SOURCE_LICENSE:
        raise RuntimeError(f"{PACKAGE} {pkg_version} declares licence {license_!r}, expected {SOURCE_LICENSE}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = plan(root, gpus, engines)
    if not jobs:
        raise RuntimeError(f"nothing to import for gpus={gpus} engines={engines}")
    done = {(j["gpu"], j["engine"], j["op"]) for j in jobs}
    index_rows, prov_rows = _existing(out_dir, done)
    for job in jobs:
        arrays, meta = build_table(job, root, pkg_version, license_)
        rel = f"{job['gpu']}/{job['engine']}/{job['op']}.npz"
        size = write_npz(out_dir / rel, arrays)
        table = table_from_arrays(arrays)
        row = dict(gpu=job["gpu"], engine=job["engine"], version=job["version"], op=job["op"], file=rel,
                   variants=len(table.variants), source_points=meta["source_points"],
                   points=table.n_points, bytes=size)
        index_rows.append(row)
        for s in meta["sources"]:
            prov_rows.append(dict(gpu=job["gpu"], engine=job["engine"], op=job["op"], file=rel, **s))
        log(f"{rel}: {meta['source_points']} points -> {table.n_points} ({size} bytes)")
    key = lambda r: (r["gpu"], r["engine"], r["op"], r.get("source_path", ""))  # noqa: E731
    _write_csv(out_dir / "INDEX.csv", INDEX_FIELDS, sorted(index_rows, key=key))
    _write_csv(out_dir / "PROVENANCE.csv", PROVENANCE_FIELDS, sorted(prov_rows, key=key))
    _write_license(out_dir)
    total = total_bytes(out_dir)
    if total > BUDGET_BYTES:
        raise RuntimeError(f"data/kernels is {total} bytes, over the {BUDGET_BYTES}-byte budget")
    log(f"{len(jobs)} tables, data/kernels total {total} bytes (budget {BUDGET_BYTES})")
    return sorted(index_rows, key=key)


def _existing(out_dir: Path, replaced: set) -> tuple[list[dict], list[dict]]:
    out = []
    for name in ("INDEX.csv", "PROVENANCE.csv"):
        path = out_dir / name
        rows = list(csv.DictReader(path.open(newline=""))) if path.is_file() else []
        out.append([r for r in rows if (r["gpu"], r["engine"], r["op"]) not in replaced])
    return out[0], out[1]


def _write_license(out_dir: Path) -> None:
    """A copy of the Apache-2.0 text next to the data (Apache-2.0 section 4(a))."""
    shutil.copyfile(Path(__file__).with_name("LICENSE-Apache-2.0.txt"), out_dir / "LICENSE-Apache-2.0.txt")


def total_bytes(out_dir: Path) -> int:
    return sum(p.stat().st_size for p in Path(out_dir).rglob("*") if p.is_file())


def source_points(meta: dict, root: Path | None = None):
    """The standardized measured points behind a committed surface (needs the package installed)."""
    root = root or package_root()
    opdef = OPS_BY_NAME[meta["op"]]
    srcs = [(s["source_version"], root.parent / s["source_path"]) for s in meta["sources"]]
    df, _, _, _ = read_frame(opdef, srcs)
    return df


def reproduction_errors(table, root: Path | None = None, sample: int | None = None, seed: int = 0):
    """|surface / measured - 1| at the measured points behind a surface (optionally a sample).

    Returns (errors, frame of the points used); errors are NaN where a point is out of range.
    """
    df = source_points(table.meta, root)
    if sample is not None and len(df) > sample:
        df = df.sample(n=sample, random_state=np.random.RandomState(seed)).sort_index()
    pos = {v: i for i, v in enumerate(table.variants)}
    var = np.array([pos[tuple(r)] for r in df[list(table.cats)].itertuples(index=False)], dtype=np.int64)
    y, ok, _ = table.lookup_ids(var, df[list(table.axes)].to_numpy(dtype=np.float64))
    err = np.abs(np.expm1(y - np.log(df["seconds"].to_numpy())))
    return err, df
