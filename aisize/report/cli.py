"""``aisize report``: the argument spec and handler, wired into :mod:`aisize.cli` in one line::

    from aisize.report.cli import add_report_parser
    add_report_parser(sub)

Progress goes to stderr, one line per step with its time; the written paths go
to stdout. Exit status 0 on success, 2 for bad input (nothing was executed), 1
when a step failed (the message names the step and, for execution, the cell).
"""

from __future__ import annotations

import argparse
import sys

EXIT_FAILED = 1
EXIT_USAGE = 2


def add_report_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``report`` subcommand to an ``argparse`` subparsers object."""
    from aisize.report import FORMATS
    from aisize.scenario import DEFAULT_PRESET

    p = subparsers.add_parser(
        "report", help="render a scenario's report to HTML and/or PDF (headless, offline)",
        description="Execute the report notebook for a scenario file or a built-in preset and "
                    "write an HTML page and a PDF into --out: what a customer gets (the executed notebook "
                    "with --keep-notebook, aisize's accuracy appendix with --accuracy-appendix).")
    source = p.add_mutually_exclusive_group()
    source.add_argument("scenario", nargs="?", metavar="SCENARIO",
                        help="a .yaml/.yml/.json scenario file")
    source.add_argument("--preset", metavar="NAME",
                        help=f"a built-in scenario (see `aisize presets`; default {DEFAULT_PRESET})")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="what to write (default: both where Chromium is installed, else html, said on stderr; "
                        "pdf and both need Chromium)")
    p.add_argument("--out", default=".", metavar="DIR", help="output folder (default: current)")
    p.add_argument("--title", help="report title")
    p.add_argument("--customer", help="customer name for the title page and footer")
    p.add_argument("--sections", metavar="A,B",
                   help="comma-separated sections (default: all but the accuracy appendix)")
    p.add_argument("--accuracy-appendix", action="store_true",
                   help="add the appendix of aisize's estimates against published figures (off by default: "
                        "it is aisize's validation record, not the customer's plan)")
    p.add_argument("--keep-notebook", action="store_true",
                   help="also keep the executed notebook (.ipynb) beside the HTML and PDF")
    p.add_argument("--name", help="file name stem of the outputs (default: from the input)")
    p.set_defaults(func=cmd_report)
    return p


def _progress(step: str, seconds: float) -> None:
    print(f"aisize report: {step:<8} {seconds:6.1f} s", file=sys.stderr, flush=True)


def cmd_report(args) -> int:
    """Run ``aisize report`` for parsed ``args``; returns the exit status."""
    from aisize.report import ParameterError, ReportError, render

    sections = args.sections.split(",") if args.sections else None
    fmt = args.format
    if fmt is None:  # the default says what it needs: a PDF only where a browser can print it
        from aisize.report.pdf import chromium_path

        fmt = "both" if chromium_path() is not None else "html"
        if fmt == "html":
            print("aisize report: HTML only: a PDF needs Chromium (Debian's chromium package, or set "
                  "AISIZE_CHROMIUM); --format pdf or both asks for one", file=sys.stderr)
    try:
        result = render(scenario_path=args.scenario, preset=args.preset, fmt=fmt,
                        out_dir=args.out, title=args.title, customer=args.customer,
                        sections=sections, name=args.name, progress=_progress,
                        keep_notebook=args.keep_notebook, accuracy_appendix=args.accuracy_appendix)
    except ParameterError as exc:
        print(f"aisize report: error: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except ReportError as exc:
        print(f"aisize report: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    _progress("total", result.seconds)
    for path in (result.html_path, result.pdf_path, result.notebook_path):
        if path is not None:
            print(path)
    return 0
