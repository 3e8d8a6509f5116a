"""Vega-Lite specs to SVG text, in a helper process when one runs.

vl-convert holds Python's GIL while it works, and its JavaScript engine takes about 0.45 s to start
(measured on the 2-core dev machine): in the report kernel that start stalled every other step.
:func:`start` begins the engine in a helper process instead, at the top of the report notebook, so it
starts on the other core while the kernel imports aisize; :func:`to_svg` then sends each spec there.
Without a helper (never started, or it died) the conversion runs in this process, as before.

The helper reads one spec per line on its stdin and answers one JSON object per line, ``{"svg": ...}``
or ``{"error": ...}``, in order. It exits when its stdin closes, so it never outlives the process that
started it. :func:`submit` sends a spec and returns at once, so the helper draws on the other core while the
report builds its next tables and charts; :func:`result` then waits for the drawing (:func:`to_svg` does
both). This module imports only the standard library: the notebook imports it before anything heavy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import deque

_WARM_SPEC = {"data": {"values": [{"x": 0}]}, "mark": "point",
              "encoding": {"x": {"field": "x", "type": "quantitative"}}}
_HELPER = f"""
import json, sys
import vl_convert
vl_convert.vegalite_to_svg({_WARM_SPEC!r})  # start the engine (and its fonts) before the first spec
for line in sys.stdin:
    try:
        out = {{"svg": vl_convert.vegalite_to_svg(json.loads(line))}}
    except Exception as error:  # the message, less the JavaScript stack ("at ..." lines)
        text = " ".join(t.strip() for t in str(error).splitlines() if not t.strip().startswith("at "))
        out = {{"error": f"{{type(error).__name__}}: {{text}}"}}
    sys.stdout.write(json.dumps(out) + "\\n")
    sys.stdout.flush()
"""

_lock = threading.Lock()
_helper: subprocess.Popen | None = None


class Drawing:
    """A spec given to :func:`submit`; ``answer`` is the helper's, once read (None: not read, or no helper)."""

    __slots__ = ("spec", "line_bytes", "answer")

    def __init__(self, spec: dict, line_bytes: int):
        self.spec = spec
        self.line_bytes = line_bytes
        self.answer: dict | None = None


_sent: deque[Drawing] = deque()  # sent to the helper, in order, their answers not read yet
# Specs whose answers are unread may still wait in the helper's stdin. While it waits for us to read an
# answer it reads no spec, so more than a pipe's buffer (64 KiB on Linux) of them would block the next
# write for good: past this many bytes, answers are read first.
IN_FLIGHT_BYTES = 32 * 1024


def start() -> None:
    """Start the helper process (once; a no-op while one runs). A helper that cannot start leaves
    conversions in this process."""
    global _helper
    with _lock:
        if _helper is not None and _helper.poll() is None:
            return
        _close()  # a helper that died: its pipes
        try:
            _helper = subprocess.Popen([sys.executable, "-c", _HELPER], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                       encoding="utf-8")
        except OSError:
            _helper = None


def stop() -> None:
    """Close the helper's stdin (it exits) and forget it."""
    with _lock:
        _close()


def _close() -> None:
    global _helper
    _sent.clear()  # their answers will never come: they are drawn in this process when asked for
    if _helper is not None:
        try:
            _helper.stdin.close()
            _helper.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            _helper.kill()
            _helper.wait()
        _helper.stdout.close()
        _helper = None


def submit(spec: dict) -> Drawing:
    """Send a Vega-Lite ``spec`` (a dict, as Altair's ``to_dict`` gives) to the helper and return at once;
    :func:`result` gives its SVG. Without a helper it is drawn when :func:`result` asks for it."""
    line = json.dumps(spec) + "\n"  # ASCII: one byte a character
    drawing = Drawing(spec, len(line))
    with _lock:
        while _sent and sum(d.line_bytes for d in _sent) + len(line) > IN_FLIGHT_BYTES:
            _read_answer()
        if _helper is not None:
            try:
                _helper.stdin.write(line)
                _helper.stdin.flush()
                _sent.append(drawing)
            except OSError:  # a broken pipe: the helper died
                _close()
    return drawing


def _read_answer() -> None:
    """The oldest sent spec's answer (under the lock); a helper that gives none is closed."""
    first = _sent.popleft()
    try:
        first.answer = json.loads(_helper.stdout.readline())
    except (OSError, ValueError):  # no line: the helper died
        _close()


def settle(drawing: Drawing) -> None:
    """Read the helper's answers up to ``drawing``'s (each kept with its spec), so that the next answer
    read is a later spec's."""
    with _lock:
        while drawing.answer is None and drawing in _sent:
            _read_answer()


def result(drawing: Drawing) -> str:
    """The SVG text of a :func:`submit`-ted spec, waiting for the helper if it is still drawing. Raises
    ValueError naming vl-convert's complaint for a spec it cannot draw."""
    settle(drawing)
    answer = drawing.answer
    if answer is None:  # no helper, or it died before answering
        import vl_convert

        return vl_convert.vegalite_to_svg(drawing.spec)
    if "error" in answer:
        raise ValueError(f"vl-convert could not draw the chart: {answer['error']}")
    return answer["svg"]


def to_svg(spec: dict) -> str:
    """The SVG text of a Vega-Lite ``spec``, drawn now (:func:`submit` and :func:`result`)."""
    return result(submit(spec))
