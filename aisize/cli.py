"""The ``aisize`` command line: argument parsing and dispatch, nothing else.

Every subcommand turns a bad input into a one-line message on stderr and exit
status 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import sys

from aisize import __version__

EXIT_USAGE = 2


def _cmd_presets(args) -> int:
    from aisize.scenario import DEFAULT_PRESET, preset, preset_names

    for name in preset_names():
        marker = " (default)" if name == DEFAULT_PRESET else ""
        print(f"{name}{marker}: {preset(name).description.splitlines()[0] if preset(name).description else ''}")
    return 0


def _cmd_preset(args) -> int:
    from aisize.scenario import dumps, preset

    sys.stdout.write(dumps(preset(args.name), fmt=args.format))
    return 0


def _cmd_app(args) -> int:
    from aisize.app.serve import run

    return run(port=args.port, host=args.host)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aisize",
        description="Size AI training and inference clusters: GPUs, servers, host RAM, "
                    "network, storage and queueing.")
    parser.add_argument("--version", action="version", version=f"aisize {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("presets", help="list the built-in scenarios")
    p.set_defaults(func=_cmd_presets)

    p = sub.add_parser("preset", help="write a built-in scenario to stdout")
    p.add_argument("name", help="preset name (see `aisize presets`)")
    p.add_argument("--format", choices=("yaml", "json"), default="yaml")
    p.set_defaults(func=_cmd_preset)

    p = sub.add_parser("app", help="serve the interactive workbook (Voila) on this machine")
    p.add_argument("--port", type=int, default=8866)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    p.set_defaults(func=_cmd_app)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except ValueError as exc:  # ScenarioError, CatalogError and input checks are ValueErrors
        print(f"aisize {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
