"""Where a served slider move's time goes: the kernel's callback, against the same move in this process.

Starts a real ipykernel (as voila does), builds the app in it (``notebooks/app.ipynb``'s cell), and moves one
Inference slider ``--moves`` steps right by sending the comm ``update`` message the browser sends. For each move
it prints the kernel's busy to idle (from the kernel's own message timestamps), the widget callback's wall and
thread CPU time inside the kernel, and, alternating move by move so that both see the same load, the same move
of an app built in this process (wall and thread CPU). When the kernel's thread CPU matches this process's, the
served kernel adds no work of its own (messaging, serialization) and a longer wall time is waiting for a core.
``--profile PATH`` writes the kernel's cProfile of the moves (``pstats`` format).

    .venv/bin/python benchmarks/bench_kernel_move.py [--slider "Request rate [requests/s]"] [--moves 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from jupyter_client.manager import start_new_kernel

from aisize.app import build_app
from bench_sliders import sliders, step

PROBE = """
import time as _t
import sys as _sys
_sys.path.insert(0, {here!r})
from bench_sliders import sliders as _sliders
_s = [x for x in _sliders(app["Inference"].view) if x.description == {slider!r}][0]
_times, _call = [], _s.comm._msg_callback
def _timed(msg):
    t, c = _t.perf_counter(), _t.thread_time()
    _call(msg)
    _times.append(((_t.perf_counter() - t) * 1e3, (_t.thread_time() - c) * 1e3))
_s.comm.on_msg(_timed)
print(_s.model_id)
"""


def run(client, code: str) -> str:
    """Execute ``code`` in the kernel; its printed text (raises on an error)."""
    msg_id, out = client.execute(code), []
    while True:
        m = client.get_iopub_msg(timeout=300)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            out.append(m["content"]["text"])
        elif m["msg_type"] == "error":
            raise RuntimeError("\n".join(m["content"]["traceback"]))
        elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return "".join(out)


def p(values, q):
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slider", default="Request rate [requests/s]", help="an Inference slider's label")
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--profile", help="write the kernel's cProfile of the moves here")
    args = parser.parse_args()
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        run(client, "from aisize.app import build_app\napp = build_app()\napp.open_tab('Inference')")
        model_id = run(client, PROBE.format(slider=args.slider, here=os.path.dirname(os.path.abspath(__file__)))).strip()
        mine = next(s for s in sliders(build_app(display=False).open_tab("Inference").view)
                    if s.description == args.slider)
        if args.profile:
            run(client, "import cProfile\n_pr = cProfile.Profile()\n_pr.enable()")
        kernel, here = [], []
        for _ in range(args.moves):
            value = step(mine)
            msg = client.session.msg("comm_msg", {"comm_id": model_id, "data": {
                "method": "update", "state": {"value": value}, "buffer_paths": []}})
            client.shell_channel.send(msg)
            busy = None
            while True:
                m = client.get_iopub_msg(timeout=300)
                if m["parent_header"].get("msg_id") != msg["header"]["msg_id"] or m["msg_type"] != "status":
                    continue
                if m["content"]["execution_state"] == "busy":
                    busy = m["header"]["date"].timestamp()
                else:
                    kernel.append((m["header"]["date"].timestamp() - busy) * 1e3)
                    break
            t, c = time.perf_counter(), time.thread_time()
            mine.value = value
            here.append(((time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3))
        if args.profile:
            run(client, f"_pr.disable()\n_pr.dump_stats({args.profile!r})")
        inside = eval(run(client, "print(_times)"))  # noqa: S307 (our own kernel's list of float pairs)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    rows = [("kernel busy to idle", kernel), ("kernel callback, wall", [w for w, _ in inside]),
            ("kernel callback, thread CPU", [c for _, c in inside]), ("this process, wall", [w for w, _ in here]),
            ("this process, thread CPU", [c for _, c in here])]
    print(f"{args.slider}: {args.moves} moves, ms p50 (p95)")
    for name, values in rows:
        print(f"  {name:<28} {statistics.median(values):6.1f} ({p(values, 0.95):6.1f})")
    print("load average (1, 5, 15 min) " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
