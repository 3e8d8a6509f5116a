"""What a page does after a slider move, as Chromium records it: the websocket frames and mutations the page logs
(:data:`WATCH`), Chrome's main-thread counters and trace, and the Vega view's calls (V8's precise coverage). Used by
``bench_move_split.py --browser``."""

from __future__ import annotations

import statistics
import time

# The page's record of its websocket frames ([performance.now(), kind, bytes]) and of its mutations (the last one's
# time): kinds are "sent" (the page's update), "busy"/"idle" (the kernel's status), "echo", "chart", "figures",
# "download" and "update" (any other widget update), by the frame's text.
WATCH = r"""(() => {
  window.frames_ = []; window.lastMutation = 0;
  const kind = x => {
    const s = /"execution_state":\s*"(busy|idle)"/.exec(x);
    if (s) return s[1];
    if (!/"comm_msg"/.test(x)) return null;
    if (/"method":\s*"echo_update"/.test(x)) return 'echo';
    if (/"_py_to_js_updates"|"_params"|"spec"/.test(x)) return 'chart';
    if (/aisize-download/.test(x)) return 'download';
    if (/data-key=/.test(x)) return 'figures';
    return 'update';
  };
  const text = d => typeof d === 'string' ? Promise.resolve(d)
    : d instanceof Blob ? d.text() : Promise.resolve(new TextDecoder().decode(d));
  const size = d => typeof d === 'string' ? d.length : (d.byteLength ?? d.size);
  const Socket = window.WebSocket;
  window.WebSocket = function (...args) {
    const socket = new Socket(...args);
    socket.addEventListener('message', event => {
      const t = performance.now(), d = event.data;
      text(d).then(x => {
        const k = kind(x), sent = /"date":\s*"([^"]+)"/.exec(x);  // the header's: when the kernel sent it
        if (k) window.frames_.push([t, k, size(d), sent ? Date.parse(sent[1]) - performance.timeOrigin : null]);
      });
    });
    const send = socket.send.bind(socket);
    socket.send = d => { window.frames_.push([performance.now(), 'sent', size(d), null]); return send(d); };
    return socket;
  };
  window.WebSocket.prototype = Socket.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  new MutationObserver(() => { window.lastMutation = performance.now(); }).observe(document,
    {subtree: true, childList: true, characterData: true, attributes: true});
})();"""
ARM = """() => { window.frames_ = []; window.keydown = null;
  document.addEventListener('keydown', () => { window.keydown = performance.mark('aisize-keydown').startTime; },
                            {once: true, capture: true}); }"""
QUIET_MS = 300.0
COUNTERS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def _counters(cdp) -> dict[str, float]:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {name: got[name] * 1e3 for name in COUNTERS}


def _browser_move(page, cdp) -> dict[str, float] | None:
    """One ArrowRight on the focused slider: when each step of it happened (ms from the keydown; "sent" by the
    kernel's own clock, "in" when the page received it) and the main thread's time over it."""
    before = _counters(cdp)
    page.evaluate(ARM)
    page.keyboard.press("ArrowRight")
    deadline = time.monotonic() + 10
    while True:
        page.wait_for_timeout(50)
        t0, frames, last, now = page.evaluate(
            "[window.keydown, window.frames_, window.lastMutation, performance.now()]")
        if t0 is not None and any(f[1] == "idle" for f in frames) and now - last > QUIET_MS:
            break
        if time.monotonic() > deadline:
            return None
    after = _counters(cdp)
    outputs = [f for f in frames if f[1] in ("chart", "figures", "download", "update")]
    if not outputs:
        return None
    busy = next(f for f in frames if f[1] == "busy")
    idle = next(f for f in frames if f[1] == "idle")
    out = {"page: update sent": next(f[0] for f in frames if f[1] == "sent") - t0,
           "kernel: busy sent": busy[3] - t0, "page: busy in": busy[0] - t0,
           "kernel: first output sent": outputs[0][3] - t0, "page: first output in": outputs[0][0] - t0,
           "kernel: last output sent": outputs[-1][3] - t0, "page: last output in": outputs[-1][0] - t0,
           "kernel: idle sent": idle[3] - t0, "page: idle in": idle[0] - t0,
           "page: last change": last - t0,
           "page: last change after last output in": last - outputs[-1][0],
           "received bytes": float(sum(f[2] for f in frames if f[1] != "sent")),
           "messages sent by the page (the move's and any after)": float(sum(f[1] == "sent" for f in frames)),
           "output messages received": float(len(outputs))}
    out.update({f"main thread (counters): {name.replace('Duration', '')}": after[name] - before[name]
                for name in COUNTERS})
    out["window"] = (t0, last)
    return out


# the renderer main thread's traced events summed over a move, by what they are (a nested event counts in its row too)
PAINT = "  paint (pre-paint, paint, layerize, commit)"
TRACED = {"RunTask": "tasks (all of the main thread's work)", "v8.callFunction": "  script (JavaScript calls)",
          "ParseHTML": "  HTML parsing", "UpdateLayoutTree": "  style", "Layout": "  layout", "PrePaint": PAINT,
          "Paint": PAINT, "Layerize": PAINT, "Commit": PAINT, "MinorGC": "  garbage collection",
          "MajorGC": "  garbage collection"}
CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink.user_timing", "v8"]


def traced(trace: bytes, windows: list[tuple[float, float]]) -> dict[str, list[float]]:
    """ms of the renderer main thread's events (:data:`TRACED`) in each window (performance.now() ms), clipped."""
    import json

    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    main = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name"
            and e.get("args", {}).get("name") == "CrRendererMain"}
    # the page's performance.now() and the trace's clock: the keydown marks, one per window, in order
    marks = sorted(e["ts"] / 1e3 for e in events if e.get("name") == "aisize-keydown")
    if len(marks) < len(windows):
        raise RuntimeError(f"{len(marks)} keydown marks traced for {len(windows)} moves")
    offset = statistics.median(m - w[0] for m, w in zip(marks[-len(windows):], windows))
    spans = [(a + offset, b + offset) for a, b in windows]
    out = {what: [0.0] * len(spans) for what in dict.fromkeys(TRACED.values())}
    for e in events:
        what = TRACED.get(e.get("name"))
        if what is None or e.get("ph") != "X" or (e["pid"], e["tid"]) not in main:
            continue
        start, end = e["ts"] / 1e3, (e["ts"] + e.get("dur", 0)) / 1e3
        for k, (a, b) in enumerate(spans):
            if end > a and start < b:
                out[what][k] += min(end, b) - max(start, a)
    return out


# what the page shows, to compare two trees' pages after the same moves: every drawn chart's SVG, the page's text,
# the tables' HTML and the download links' targets as written (the scenario's YAML is not in the text; a chart
# menu's "#" as written, not resolved against the server's port)
SHOWN = """() => JSON.stringify({charts: [...document.querySelectorAll('.vega-embed svg')].map(e => e.outerHTML),
  text: document.body.innerText, tables: [...document.querySelectorAll('table')].map(e => e.outerHTML),
  links: [...document.querySelectorAll('a[download]')].map(e => e.getAttribute('href'))})"""


# the chart code's functions whose calls say how often a move ran the Vega view (runAsync) and drew it (render)
VEGA_CALLS = ("runAsync", "render")


def vega_calls(coverage: dict) -> dict[str, int]:
    """Calls of :data:`VEGA_CALLS` in the chart bundle, from a CDP ``Profiler.takePreciseCoverage`` reply."""
    counts = dict.fromkeys(VEGA_CALLS, 0)
    for script in coverage["result"]:
        if "jupyter-chart" in script["url"]:
            for function in script["functions"]:
                if function["functionName"] in counts:
                    counts[function["functionName"]] += function["ranges"][0]["count"]
    return counts
