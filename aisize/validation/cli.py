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


def configure_parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--family``, ``--json``, ``--csv FILE``, ``--cases FILE`` and ``--gpus N`` to ``p``."""
    p.add_argument("--family", choices=FAMILIES, default=None, help="only this family of cases")
    p.add_argument("--json", action="store_true", help="print the cases and summary as JSON")
    p.add_argument("--csv", metavar="FILE", default=None, help="also write the full table to FILE")
    p.add_argument("--cases", metavar="FILE", default=None, help="a cases CSV (default: the packaged one)")
    p.add_argument("--gpus", type=int, default=None, help="show the MFU range for runs of about N GPUs")
    p.add_argument("--cross-validate", nargs="+", choices=("model", "gpu"), default=None, metavar="BY",
                   help="instead of the table: the serving calibration's scores on the public runs in sample and "
                        "held out (leave one model out: 'model', leave one GPU out: 'gpu'; minutes each)")
    p.add_argument("--cv-evaluations", type=int, default=5, help="solver budget per refit (with --cross-validate)")
    p.set_defaults(func=run)
    return p


CV_SETS = ("serving_throughput", "serving_load", "serving_disagg")  # the sets the calibration is fitted on


def cross_validation_lines(by_list, evaluations: int, calibration=None, progress=None) -> list[str]:
    """Lines of in-sample and held-out scores for each grouping (``aisize.calibrate.cross_validate``)."""
    from aisize import catalog
    from aisize.calibrate import cross_validate, read_table
    from aisize.calibrate.fitting import summary
    from aisize.serving import CALIBRATION

    cal = calibration or CALIBRATION
    runs = [r for s in CV_SETS for r in read_table(catalog.data_dir() / "validation" / f"{s}.csv")]

    def line(name, preds):
        s = summary(list(preds))
        return (f"  {name:10s} {s['within']:3d} of {s['runs']} runs within 15 % on tokens/s per GPU (median |err| "
                f"{100 * s['median_abs_error']:.1f} %); TPOT {s['tpot_within']} of {s['tpot_runs']} (median |err| "
                f"{100 * s['tpot_median_abs_error']:.1f} %)")

    out = [f"serving calibration {cal.name}",
           f"  sources: {cal.gemm_source} GEMMs, {cal.moe_source} MoE, {cal.moe_layer_source} MoE-layer time, "
           f"{cal.attention_source} attention,",
           f"           {cal.allreduce_source} all-reduce, {cal.gather_source} attention-DP gather, "
           f"{cal.elementwise_source} elementwise",
           f"  on {', '.join(CV_SETS)}"]
    for by in by_list:
        cv = cross_validate(runs, cal, by=by, max_evaluations=evaluations, progress=progress)
        out += [f"leave one {by} out ({len(cv.groups)} groups, each refitted with {evaluations} solver steps "
                f"without its runs):", line("in sample", cv.in_sample), line("held out", cv.held_out)]
    return out


def _text_table(frame) -> str:
    """The table as aligned text within the terminal's width, headers with units and numbers as
    :mod:`aisize.format` shows them."""
    from aisize import format as F

    return F.text_table(frame)


def _figures(part, *, sources: list[str], tolerance: bool, note: bool):
    """One family's rows as shown: published and predicted with their unit in engineering notation (314.0 ZFLOP,
    not 313,999,999,999,999,995,805,696 FLOP), the error, the verdict, and the source by its number."""
    import pandas as pd

    from aisize import format as F

    cols = {"case": part["case"].tolist(),
            "published": [F.engineering(v, u) for v, u in zip(part["published"], part["unit"])],
            "predicted": [F.engineering(v, u) for v, u in zip(part["predicted"], part["unit"])],
            "error [%]": [F.points(e) if e == e else "" for e in part["error_pct"]]}
    if tolerance:
        cols["tolerance [%]"] = [F.points(t) for t in part["tolerance_pct"]]
    cols["verdict"] = part["verdict"].tolist()
    if note:
        cols["note"] = [str(x or "") for x in part["implied"].fillna("")]
    refs = []
    for src in part["source"].fillna("").astype(str):
        if src and src not in sources:
            sources.append(src)
        refs.append(f"[{sources.index(src) + 1}]" if src else "")
    cols["source"] = refs
    return pd.DataFrame(cols)


def _sources(sources: list[str]) -> str:
    from aisize import format as F

    return F.fit_lines("\n".join(f"  [{i}] {s}" for i, s in enumerate(sources, 1)))


VERDICTS = ("Verdicts: ok is within the case's tolerance and within {ok:g} %; \"within the N % band of a rough "
            "check\" is within a tolerance wider than {ok:g} % (a time-to-train check that accepts any goodput "
            "from 0.4 to 1) but more than {ok:g} % off; outside is beyond the case's tolerance. Published and "
            "predicted figures are in their published unit, to four significant figures.")


def run(args: argparse.Namespace) -> int:
    """Print the validation table and per-family summary; 0 when every case has its expected status."""
    from aisize import format as F
    from aisize.validation.ranges import mfu_range
    from aisize.validation.report import summary, validate

    if getattr(args, "cross_validate", None):
        for line in cross_validation_lines(args.cross_validate, args.cv_evaluations,
                                           progress=lambda g, k, n: print(f"  holding out {g} ({k + 1}/{n})",
                                                                          file=sys.stderr, flush=True)):
            print(line)
        return 0
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
        from aisize.validation.report import OK_PCT

        print(F.fit_lines(VERDICTS.format(ok=OK_PCT)))
        print()
        families = [("", table[~table["family"].str.startswith(("training", "serving"))], True, True),
                    ("training family: published vs predicted", table[table["family"] == "training"], True, False)]
        families += [(f"{fam} family: published vs predicted", table[table["family"] == fam], True, False)
                     for fam in table["family"].unique() if str(fam).startswith("serving")]
        for title, part, tolerance, note in families:
            if not len(part):
                continue
            sources: list[str] = []
            if title:
                print(title)
            print(_text_table(_figures(part, sources=sources, tolerance=tolerance, note=note)))
            print("Sources:")
            print(_sources(sources))
            print()
        print(_text_table(summ.rename(columns={"ok": f"ok (|error| at most {OK_PCT:g} %)",
                                               "rough": "within a rough band", "outside": "outside tolerance"})))
        print()
        print(f"MFU range ({r.rule}): low {F.pct(r.low)}, expected {F.pct(r.expected)}, high {F.pct(r.high)}")
    unexpected = table[table["status"] != table["expected_status"]]
    for case in unexpected["case"]:
        print(f"aisize validate: case {case!r} does not have its expected status", file=sys.stderr)
    return 1 if len(unexpected) else 0
