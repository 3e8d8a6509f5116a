"""``aisize validate``: the validation table and the per-family summary on the terminal.

:func:`configure_parser` adds the options to an argparse (sub)parser and
:func:`run` prints; the main CLI wires them as the ``validate`` subcommand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aisize.validation.families import FAMILIES

TABLE_COLUMNS = ("case", "published", "predicted", "unit", "error_pct", "tolerance_pct", "status", "implied")
TRAINING_COLUMNS = ("case", "published", "predicted", "unit", "error_pct", "status", "source")
SOURCE_CHARS = 70  # the training table's source column, cut on the terminal (--csv keeps it whole)


def configure_parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--family``, ``--json``, ``--csv FILE``, ``--cases FILE`` and ``--gpus N`` to ``p``."""
    p.add_argument("--family", choices=FAMILIES, default=None, help="only this family of cases")
    p.add_argument("--json", action="store_true", help="print the cases and summary as JSON")
    p.add_argument("--csv", metavar="FILE", default=None, help="also write the full table to FILE")
    p.add_argument("--cases", metavar="FILE", default=None, help="a cases CSV (default: the packaged one)")
    p.add_argument("--gpus", type=int, default=None, help="show the MFU range for runs of about N GPUs")
    p.set_defaults(func=run)
    return p


def _text_table(frame) -> str:
    """The table as aligned text, headers with units and numbers as :mod:`aisize.format` shows them."""
    from aisize import format as F

    shown = F.table(frame)
    cols = list(shown.columns)
    cells = [list(row) for row in shown.itertuples(index=False)]
    widths = [max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the validation table and per-family summary; 0 when every case has its expected status."""
    from aisize import format as F
    from aisize.validation.ranges import mfu_range
    from aisize.validation.report import summary, validate

    table = validate(args.family, path=args.cases)
    summ = summary(table)
    r = mfu_range(args.gpus)
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False)
    if args.json:
        out = {"cases": json.loads(table.to_json(orient="records")),
               "summary": json.loads(summ.to_json(orient="records")),
               "mfu_range": {"low": r.low, "expected": r.expected, "high": r.high, "rule": r.rule,
                             "cases": list(r.cases)}}
        print(json.dumps(out, indent=2))
    else:
        print(_text_table(table[~table["family"].isin(("training", "serving"))][list(TABLE_COLUMNS)]))
        print()
        for fam in ("training", "serving"):
            part = table[table["family"] == fam][list(TRAINING_COLUMNS)]
            if len(part):
                print(f"{fam} family: published vs predicted vs error vs source")
                print(_text_table(part.assign(source=part["source"].str.slice(0, SOURCE_CHARS))))
                print()
        print(_text_table(summ))
        print()
        print(f"MFU range ({r.rule}): low {F.pct(r.low)}, expected {F.pct(r.expected)}, high {F.pct(r.high)}")
    unexpected = table[table["status"] != table["expected_status"]]
    for case in unexpected["case"]:
        print(f"aisize validate: case {case!r} does not have its expected status", file=sys.stderr)
    return 1 if len(unexpected) else 0
