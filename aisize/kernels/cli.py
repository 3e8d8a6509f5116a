"""``aisize kernels``: import NVIDIA's measured kernel timings, list what is committed.

    aisize kernels import [--out data/kernels] [--gpus h200-sxm,b200] [--engines trtllm,nccl]
    aisize kernels list [--dir data/kernels] [--gpu G] [--engine E] [--op OP]

``import`` needs the optional extra (``pip install 'aisize[kernels]'``: aiconfigurator-core with
pandas/pyarrow); ``list`` reads the committed files with numpy only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# numpy and the tables load only when a subcommand runs: ``aisize``'s parser must stay light.


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _cmd_import(args) -> int:
    from aisize.kernels import tables

    try:
        from aisize.kernels import importer
        importer.package_root()
    except ImportError as exc:
        print(f"aisize kernels import needs the optional extra: pip install 'aisize[kernels]' ({exc})",
              file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else tables.data_dir()
    log = (lambda s: None) if args.quiet else print
    try:
        rows = importer.import_all(out, gpus=_split(args.gpus), engines=_split(args.engines), log=log)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    tables.clear_caches()
    print(f"imported {len(rows)} surfaces into {out} ({importer.total_bytes(out)} bytes, "
          f"budget {importer.BUDGET_BYTES})")
    return 0


def _dtype_key(cats: tuple[str, ...]) -> list[int]:
    return [i for i, c in enumerate(cats) if c in ("dtype", "collective")]


def list_rows(root: Path, gpu=None, engine=None, op=None) -> list[dict]:
    """One row per committed (gpu, engine, op, dtype): engine version, version of the data used (an
    op missing at the engine version comes from an earlier one), variants, points, bytes (the dtype's
    share of its file)."""
    from aisize.kernels import tables

    out = []
    for row in tables.index(root):
        if (gpu and row["gpu"] != gpu) or (engine and row["engine"] != engine) or (op and row["op"] != op):
            continue
        t = tables.load(row["gpu"], row["engine"], row["op"], root)
        counts = t.points_per_variant()
        keys = _dtype_key(t.cats)
        groups: dict[str, list[int]] = {}
        for i, v in enumerate(t.variants):
            groups.setdefault("/".join(v[j] for j in keys) or "-", []).append(i)
        total = max(int(counts.sum()), 1)
        for dtype, ids in sorted(groups.items()):
            pts = int(counts[ids].sum())
            src = "+".join(sorted({p["source_version"] for p in t.provenance}))
            out.append(dict(gpu=row["gpu"], engine=row["engine"], version=row["version"], data=src,
                            op=row["op"], dtype=dtype, variants=len(ids), points=pts,
                            bytes=round(int(row["bytes"]) * pts / total)))
    return out


def _cmd_list(args) -> int:
    from aisize.kernels import tables

    root = Path(args.dir) if args.dir else tables.data_dir()
    rows = list_rows(root, args.gpu, args.engine, args.op)
    if not rows:
        print(f"no committed kernel surfaces under {root}")
        return 1
    cols = ("gpu", "engine", "version", "data", "op", "dtype", "variants", "points", "bytes")
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    print("  ".join(c.ljust(width[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(width[c]) for c in cols))
    files = sum(int(r["bytes"]) for r in tables.index(root))
    print(f"{len(rows)} rows; {len(tables.index(root))} files, {files} bytes of surfaces")
    return 0


def configure_parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``import`` and ``list`` subcommands to *p* (``aisize kernels`` or standalone)."""
    sub = p.add_subparsers(dest="kernels_cmd", metavar="{import,list}", required=True)
    imp = sub.add_parser("import", help="distill aiconfigurator-core's measured tables into data/kernels")
    imp.add_argument("--out", help="output directory (default: the committed data/kernels)")
    imp.add_argument("--gpus", help="comma-separated accelerator ids or package system names")
    imp.add_argument("--engines", help="comma-separated engines (trtllm, vllm, sglang, nccl)")
    imp.add_argument("--quiet", action="store_true", help="no per-table lines")
    imp.set_defaults(func=_cmd_import)
    ls = sub.add_parser("list", help="what is committed: GPU, engine, version, op, dtype, points, bytes")
    ls.add_argument("--dir", help="surfaces directory (default data/kernels)")
    ls.add_argument("--gpu")
    ls.add_argument("--engine")
    ls.add_argument("--op")
    ls.set_defaults(func=_cmd_list)
    return p


def parser() -> argparse.ArgumentParser:
    return configure_parser(argparse.ArgumentParser(prog="aisize kernels", description=__doc__.split("\n\n")[0]))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
