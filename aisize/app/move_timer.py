"""A benchmark's timer inside the live kernel: where a widget message's busy-to-idle time goes.

Off unless the kernel's environment names a folder in ``AISIZE_MOVE_TIMER`` (``benchmarks/bench_move_split.py
--kernel-timer`` sets it for the server it starts); the app never reads it otherwise. Then each ``comm_msg`` the
kernel handles (a slider move's update, say) appends one JSON line to ``<folder>/moves-<pid>.jsonl``, written after
the kernel's "idle" has gone so the writing is not timed: ms of wall time (``perf_counter``) from the kernel's
"busy" to its "idle", of the handler (ipywidgets' ``set_state``: the echo, the callbacks, the outputs' messages) and of
the plan (``aisize.plan.plan`` as the app's state calls it), with the thread's CPU (``thread_time``) and the process's
(``process_time``: also the IOPub and other threads) over the same spans, the thread's wait for a CPU while runnable
(Linux's ``/proc/thread-self/schedstat``), the messages' sends (``session.send``: serialization, signing, hand-off to
the IOPub thread) and the garbage collector's pauses (``gc.callbacks``) by generation. Wall over CPU is time the
kernel waited for the cores (the run queue: the machine's load) or for the GIL, a lock or a socket.
Where ``AISIZE_MOVE_PROFILE`` is also set, each such message's busy-to-idle span runs under ``cProfile`` (timing the
thread's CPU; ``wall``: wall time) and its statistics go to ``<folder>/profile-<pid>-<n>.prof`` (the record's ``profile``): slower moves, for where, not how long.
"""

from __future__ import annotations

import gc
import json
import os
import time
from pathlib import Path

ENV = "AISIZE_MOVE_TIMER"
PROFILE_ENV = "AISIZE_MOVE_PROFILE"
SCHEDSTAT = Path("/proc/thread-self/schedstat")  # Linux: this thread's ns on a CPU, ns waiting for one, slices


def _runqueue_ms() -> float:
    """ms this thread has waited, runnable, for a CPU (0 where the kernel does not say)."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


def install_from_env() -> bool:
    """Install the timer in the running IPython kernel when ``AISIZE_MOVE_TIMER`` names a folder; True if installed."""
    folder = os.environ.get(ENV)
    if not folder:
        return False
    if not Path(folder).is_dir():  # said here, not as a failed write after every move
        raise ValueError(f"{ENV}={folder!r}: must name an existing folder for the move timer's records "
                         "(or be unset: the timer off)")
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None or "comm_msg" not in kernel.shell_handlers:
        return False
    _Timer(kernel, Path(folder) / f"moves-{os.getpid()}.jsonl", os.environ.get(PROFILE_ENV, "")).install()
    return True


class _Timer:
    def __init__(self, kernel, path: Path, profile: str = ""):
        self.kernel, self.path, self.profile = kernel, path, profile
        self.record: dict | None = None
        self.profiler = None
        self.moves = 0
        self.gc_start = 0.0

    def install(self) -> None:
        import aisize.app.state as state_module
        from aisize.app import ahead

        kernel = self.kernel
        from ipywidgets.widgets.widget import _instances  # Widget.widgets, without its deprecation warning

        publish, handler, plan = kernel._publish_status, kernel.shell_handlers["comm_msg"], state_module.plan
        send = kernel.session.send

        def timed_publish(status, *args, **kwargs):
            if status == "busy":
                self.record = {"wall": time.perf_counter(), "cpu": time.thread_time(),
                               "process_cpu": time.process_time(), "runqueue": _runqueue_ms(),
                               "plan_wall": 0.0, "plan_cpu": 0.0, "handler_wall": 0.0, "handler_cpu": 0.0,
                               "send_wall": 0.0, "send_cpu": 0.0, "sends": 0, "gc_ms": [0.0, 0.0, 0.0],
                               "gc_n": [0, 0, 0], "comm_msg": False, "what": "",
                               "ahead_used": ahead.TOTALS["used"], "ahead_planned": ahead.TOTALS["planned"]}
                if self.profile:
                    import cProfile

                    # the thread's CPU by default; AISIZE_MOVE_PROFILE=wall: wall time (waits for the GIL, the cores)
                    self.profiler = cProfile.Profile(time.perf_counter if self.profile == "wall" else time.thread_time)
                    self.profiler.enable()
            result = publish(status, *args, **kwargs)
            if status == "idle" and self.record is not None:
                r, self.record = self.record, None
                profiler, self.profiler = self.profiler, None
                if profiler is not None:
                    profiler.disable()
                r["wall"] = (time.perf_counter() - r["wall"]) * 1e3
                r["cpu"] = (time.thread_time() - r["cpu"]) * 1e3
                r["process_cpu"] = (time.process_time() - r["process_cpu"]) * 1e3
                r["runqueue"] = _runqueue_ms() - r["runqueue"]
                r["ahead_used"] = ahead.TOTALS["used"] - r["ahead_used"]  # 1: the move showed a plan made ahead
                r["ahead_planned"] = ahead.TOTALS["planned"] - r["ahead_planned"]  # planned ahead within the span
                if r.pop("comm_msg"):
                    if profiler is not None:
                        self.moves += 1
                        r["profile"] = str(self.path.with_name(f"profile-{os.getpid()}-{self.moves}.prof"))
                        profiler.dump_stats(r["profile"])
                    with open(self.path, "a", encoding="utf-8") as out:
                        out.write(json.dumps(r) + "\n")
            return result

        def timed_handler(stream, idents, msg, *args, **kwargs):
            if self.record is not None:  # which widget the message is for, and what it set
                data = msg.get("content", {}).get("data", {})
                widget = _instances.get(msg.get("content", {}).get("comm_id"))
                self.record["what"] = (f"{getattr(widget, 'description', '') or type(widget).__name__}: "
                                       f"{data.get('method')} {sorted(data.get('state', {}))}")
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return handler(stream, idents, msg, *args, **kwargs)
            finally:
                if self.record is not None:
                    self.record["comm_msg"] = True
                    self.record["handler_wall"] += (time.perf_counter() - wall) * 1e3
                    self.record["handler_cpu"] += (time.thread_time() - cpu) * 1e3

        def timed(fn, name, counted=False):
            """``fn`` adding its wall and thread CPU ms to the move's ``{name}_wall`` and ``{name}_cpu``."""
            def call(*args, **kwargs):
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    return fn(*args, **kwargs)
                finally:
                    if self.record is not None:
                        self.record[f"{name}_wall"] += (time.perf_counter() - wall) * 1e3
                        self.record[f"{name}_cpu"] += (time.thread_time() - cpu) * 1e3
                        if counted:
                            self.record[f"{name}s"] += 1
            return call

        timed_plan = timed(plan, "plan")
        # the messages' serialization, signing and hand-off to the IOPub thread
        timed_send = timed(send, "send", counted=True)

        def on_gc(phase, info):
            if phase == "start":
                self.gc_start = time.perf_counter()
            elif self.record is not None:
                self.record["gc_ms"][info["generation"]] += (time.perf_counter() - self.gc_start) * 1e3
                self.record["gc_n"][info["generation"]] += 1

        kernel.session.send = timed_send
        kernel._publish_status = timed_publish
        kernel.shell_handlers["comm_msg"] = timed_handler
        state_module.plan = timed_plan
        gc.callbacks.append(on_gc)
