"""Vega-Lite specs to SVG text, in a helper process when one runs.

vl-convert holds Python's GIL while it works, and its JavaScript engine takes about 0.45 s to start
(measured on the 2-core dev machine): in the report kernel that start stalled every other step.
:func:`start` begins the engine in a helper process instead, at the top of the report notebook, so it
starts on the other core while the kernel imports aisize; :func:`to_svg` then sends each spec there.
Without a helper (never started, or it died) the conversion runs in this process, as before.

The helper reads one spec per line on its stdin and answers one JSON object per line, ``{"svg": ...}``
or ``{"error": ...}``. It exits when its stdin closes, so it never outlives the process that started it.
This module imports only the standard library: the notebook imports it before anything heavy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

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
    if _helper is not None:
        try:
            _helper.stdin.close()
            _helper.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            _helper.kill()
            _helper.wait()
        _helper.stdout.close()
        _helper = None


def _ask(spec: dict) -> dict | None:
    """The helper's answer for ``spec``, or None when it is not there (gone, or never started)."""
    if _helper is None:
        return None
    try:
        _helper.stdin.write(json.dumps(spec) + "\n")
        _helper.stdin.flush()
        return json.loads(_helper.stdout.readline())
    except (OSError, ValueError):  # a broken pipe, or no line: the helper died
        _close()
        return None


def to_svg(spec: dict) -> str:
    """The SVG text of a Vega-Lite ``spec`` (a dict, as Altair's ``to_dict`` gives). Raises ValueError
    naming vl-convert's complaint for a spec it cannot draw."""
    with _lock:
        answer = _ask(spec)
    if answer is None:
        import vl_convert

        return vl_convert.vegalite_to_svg(spec)
    if "error" in answer:
        raise ValueError(f"vl-convert could not draw the chart: {answer['error']}")
    return answer["svg"]
