"""The ``aisize`` command line: argument parsing and dispatch, nothing else.

Every subcommand turns a bad input into a one-line message on stderr and exit
status 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from aisize import __version__
from aisize.calibrate.cli import configure_parser as calibrate_parser
from aisize.kernels.cli import configure_parser as kernels_parser

EXIT_USAGE = 2


def _cmd_presets(args) -> int:
    from aisize.scenario import DEFAULT_PRESET, preset, preset_names

    from aisize import format as F

    # one line per preset, its name first (scripts and ../shared/tools/check_consistency.py read the first
    # word of each line): the scenario's title, cut to the width; `aisize preset NAME` shows the rest
    for name in preset_names():
        marker = " (default)" if name == DEFAULT_PRESET else ""
        line = f"{name}{marker}: {preset(name).name}"
        print(line if len(line) <= F.WIDTH else line[:F.WIDTH - 1] + "…")
    return 0


def _cmd_preset(args) -> int:
    from aisize.scenario import dumps, preset

    sys.stdout.write(dumps(preset(args.name), fmt=args.format))
    return 0


def _cmd_size(args) -> int:
    from aisize.present.export import to_json, write_csv, write_excel
    from aisize.plan import plan as make_plan
    from aisize.present.summary import summary_text
    from aisize.scenario import load

    p = make_plan(load(args.scenario))
    try:
        if args.json:
            sys.stdout.write(to_json(p))
        elif args.csv:
            for path in write_csv(p, args.csv):
                print(path)
        elif args.excel:
            print(write_excel(p, args.excel))
        else:
            sys.stdout.write(summary_text(p))
    except OSError as exc:
        raise ValueError(f"cannot write the output: {exc}") from None
    return 0


def _cmd_fleet(args) -> int:
    from aisize.plan import plan as make_plan
    from aisize.present.fleet_summary import fleet_text
    from aisize.scenario import load

    from aisize import format as F

    sys.stdout.write(F.fit_lines(fleet_text(make_plan(load(args.scenario)), simulate=args.simulate)))
    return 0


def _cmd_sweep(args) -> int:
    from aisize.plan import defuse, sweep
    from aisize.present.summary import parse_vary
    from aisize.scenario import load

    from aisize.present.sweep import sweep_text

    path, values = parse_vary(args.vary)
    table = sweep(load(args.scenario), path, values)
    if args.csv:
        try:
            defuse(table).to_csv(args.csv, index=False)
        except OSError as exc:
            raise ValueError(f"cannot write {args.csv}: {exc}") from None
        print(args.csv)
    else:
        sys.stdout.write(sweep_text(table, path))
    return 0


def _cmd_compare(args) -> int:
    from aisize.plan import defuse
    from aisize.plan import plan as make_plan
    from aisize.present.comparison import compare_text, comparison_dict, comparison_table
    from aisize.scenario import load

    a, b = make_plan(load(args.a)), make_plan(load(args.b))
    if args.report:
        from aisize.report.compare import render_comparison

        for path in render_comparison(args.a, args.b, out_dir=args.report, fmt=args.format):
            print(path)
        return 0
    try:
        if args.json:
            import json

            sys.stdout.write(json.dumps(comparison_dict(a, b), indent=2, allow_nan=False) + "\n")
        elif args.csv:
            defuse(comparison_table(a, b)).to_csv(args.csv, index=False)
            print(args.csv)
        else:
            from aisize import format as F

            sys.stdout.write(F.fit_lines(compare_text(a, b)))
    except OSError as exc:
        raise ValueError(f"cannot write the output: {exc}") from None
    return 0


_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _cmd_model(args) -> int:
    from pathlib import Path

    from aisize import format as F
    from aisize import models
    from aisize.models.hf_config import read_config
    from aisize.models.summary import model_text

    if Path(args.model).exists():
        config, _ = read_config(args.model)
        record = models.from_hf_config(args.model)
        dtype = _TORCH_DTYPES.get(config.get("torch_dtype") or config.get("dtype"))
        sys.stdout.write(F.fit_lines(model_text(record, safetensors_bytes=models.safetensors_total_bytes(args.model),
                                                checkpoint_dtype=dtype)))
    else:
        sys.stdout.write(F.fit_lines(model_text(models.resolve(args.model))))
    return 0


def _cmd_app(args) -> int:
    from aisize.app.serve import run

    return run(port=args.port, host=args.host, max_sessions=args.max_sessions,
               allowed_hosts=tuple(args.allow_host))


def _cmd_team(args) -> int:
    from aisize.app.team import run

    return run(ip=args.ip, port=args.port, state_dir=args.state, admin=args.admin,
               allowed_hosts=tuple(args.allow_host), trusted_proxies=tuple(args.trusted_proxy))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aisize",
        description="Size AI training and inference clusters: GPUs, servers, host RAM, "
                    "network, storage and queueing.")
    parser.add_argument("--version", action="version", version=f"aisize {__version__}")
    parser.add_argument("--catalog", metavar="DIR", action="append", default=[],
                        help="a folder of CSVs named like ours whose rows add to or replace the built-in "
                             "catalog (repeatable; also $AISIZE_CATALOG)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("presets", help="list the built-in scenarios")
    p.set_defaults(func=_cmd_presets)

    p = sub.add_parser("preset", help="write a built-in scenario to stdout")
    p.add_argument("name", help="preset name (see `aisize presets`)")
    p.add_argument("--format", choices=("yaml", "json"), default="yaml")
    p.set_defaults(func=_cmd_preset)

    p = sub.add_parser("size", help="plan a scenario file: GPUs, servers, network, storage, findings")
    p.add_argument("scenario", help="scenario file (.yaml or .json; see `aisize preset NAME`)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the whole plan as JSON on stdout")
    out.add_argument("--csv", metavar="DIR", help="write bom.csv, workloads.csv, storage.csv, findings.csv")
    out.add_argument("--excel", metavar="FILE", help="write an Excel workbook (one sheet per table)")
    p.set_defaults(func=_cmd_size)

    p = sub.add_parser("fleet", help="a scenario's serving fleet through the day: replicas, cost, troughs, "
                                     "tenants, spares, heterogeneous pools, power")
    p.add_argument("scenario", help="scenario file (.yaml or .json; e.g. `aisize preset fleet-over-the-day`)")
    p.add_argument("--simulate", action="store_true",
                   help="also simulate each service's day request by request (simpy) beside the model")
    p.set_defaults(func=_cmd_fleet)

    p = sub.add_parser("sweep", help="vary one input of a scenario and tabulate the plan's key outputs")
    p.add_argument("scenario", help="scenario file (.yaml or .json)")
    p.add_argument("--vary", required=True, metavar="PATH=LO:HI:N | PATH=a,b,c",
                   help="dotted input path and values, e.g. workloads.0.target_days=1:8:4 or "
                        "hardware.scale_out_link=eth-10g,eth-40g")
    p.add_argument("--csv", metavar="FILE", help="write the table as CSV instead of printing it")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("compare", help="plan two scenarios and put them side by side, differences marked")
    p.add_argument("a", metavar="A", help="first scenario file (.yaml or .json)")
    p.add_argument("b", metavar="B", help="second scenario file")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the comparison as JSON on stdout")
    out.add_argument("--csv", metavar="FILE", help="write the comparison as CSV")
    out.add_argument("--report", metavar="DIR", help="render a comparison report (HTML and/or PDF) into DIR")
    p.add_argument("--format", choices=("html", "pdf", "both"), default="html",
                   help="report format with --report (default html)")
    p.set_defaults(func=_cmd_compare)

    from aisize.report.cli import add_report_parser
    from aisize.validation import cli as validation_cli

    add_report_parser(sub)

    p = sub.add_parser("validate", help="compare aisize's estimates with published figures")
    validation_cli.configure_parser(p)
    p.set_defaults(func=validation_cli.run)

    calibrate_parser(sub.add_parser("calibrate", help="refit the serving calibration on your own benchmark runs"))
    kernels_parser(sub.add_parser("kernels", help="NVIDIA's measured kernel timings: import (aisize[kernels]) or "
                                                  "list them"))
    p = sub.add_parser("model", help="describe a model: architecture, parameters, weight and KV bytes")
    p.add_argument("model", help="a config.json, a folder holding one (with model.safetensors.index.json, "
                                 "its total_size is shown), or a catalog model id")
    p.set_defaults(func=_cmd_model)

    p = sub.add_parser("app", help="serve the interactive workbook (Voila) on this machine")
    p.add_argument("--port", type=int, default=8866)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    p.add_argument("--max-sessions", type=int, default=16,
                   help="pages served at once, ~250 MiB each; past that visitors see 'busy, try again' (default 16)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a host name users reach the app by (e.g. behind a proxy); repeat for more. "
                        "IP addresses and localhost are always accepted")
    p.set_defaults(func=_cmd_app)

    p = sub.add_parser("team", help="serve the workbook to a team: JupyterHub with logins, one server per user",
                       description="Run JupyterHub with deploy/jupyterhub_config.py: people sign up, the admin "
                                   "approves them at /hub/authorize, each gets their own workbook. Needs "
                                   "pip install 'aisize[team]' and configurable-http-proxy from npm (make team).")
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default loopback; 0.0.0.0 for a network)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--state", default="aisize-team", metavar="DIR",
                   help="folder for the hub's database, cookie secret and users' folders (default ./aisize-team)")
    p.add_argument("--admin", default="admin",
                   help="the admin user name (default admin). The hub creates this account at its first start and "
                        "writes its first password to DIR/admin-password; never sign up with it: a name that "
                        "signed up and was never the admin is refused")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a host name people reach the hub by; repeat for more (IP addresses and localhost always work)")
    p.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                   help="the address of a proxy in front of the hub (e.g. TLS) whose X-Forwarded-For entry is "
                        "passed over to find the client; repeat for more. Without it, forwarding headers a "
                        "client sends are never trusted")
    p.set_defaults(func=_cmd_team)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        if args.catalog:
            from aisize import catalog

            for folder in args.catalog:
                catalog.use_overlay(folder)
        return args.func(args)
    except ValueError as exc:  # ScenarioError, CatalogError and input checks are ValueErrors
        print(f"aisize {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def console() -> int:
    """The ``aisize`` command (a process of its own): :func:`main`, then the objects its imports made are
    frozen out of the cycle collector, so the interpreter's teardown does not sweep them all (0.25 s after a
    report); the OS takes them back. (:func:`main` itself leaves a calling process's collector alone.)"""
    try:
        return main()
    except BrokenPipeError:  # the reader went away (`aisize presets | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        gc.freeze()


if __name__ == "__main__":
    sys.exit(console())
