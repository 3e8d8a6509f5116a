"""The next slider step planned ahead, in the real page (aisize.app.ahead; issue 51 item 2).

A plan ahead helps only where the value the kernel predicts for the next key step is, to the bit, the one Chromium's
slider sends (noUiSlider's arithmetic, then ``Math.pow`` on a log slider). The page's kernel logs each move with the
move timer (``AISIZE_MOVE_TIMER``), which records whether the move showed a plan made ahead: after the first step of
each slider, every further step the same way must.
"""

from __future__ import annotations

import json
import time

import pytest

from aisize.app import serve
from test_app_browser import assert_clean, control, open_app, open_tab

pytestmark = pytest.mark.browser

# (tab, slider label): a float slider, log sliders (a float value and one rounded to whole tokens), an int slider
SLIDERS = (("Training", "MFU, all jobs [ratio]"), ("Inference", "Request rate [requests/s]"),
           ("Inference", "Prompt [tokens]"), ("Inference", "Prompt length CV"),
           ("Data path", "Checkpoints kept [count]"))
STEPS = 3


@pytest.fixture(scope="module")
def timed_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("moves")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AISIZE_MOVE_TIMER", str(folder))  # the page's kernels inherit it
        app = serve.start(tmp_path_factory.mktemp("app") / "voila.log")
    yield app, folder
    app.stop()


def _moves(folder) -> list[dict]:
    """The slider moves the page's kernel logged (value updates), in order."""
    lines = [line for path in folder.glob("moves-*.jsonl") for line in path.read_text().splitlines()]
    return [r for r in map(json.loads, lines) if "update ['value']" in r["what"]]


def _wait_for(folder, count: int, timeout_s: float = 30.0) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        moves = _moves(folder)
        if len(moves) >= count:
            return moves
        time.sleep(0.05)
    raise AssertionError(f"the kernel logged {len(_moves(folder))} moves, want {count}")


def test_each_further_key_step_shows_the_plan_made_ahead(timed_app, page, requests_made):
    app, folder = timed_app
    open_app(page, app.url)
    done = 0
    for tab, label in SLIDERS:
        open_tab(page, tab)
        handle = control(page, label, ".noUi-handle")
        handle.wait_for(timeout=60_000)
        handle.focus()
        for _ in range(STEPS):
            page.keyboard.press("ArrowRight")
            done += 1
            _wait_for(folder, done)
            page.wait_for_timeout(300)  # the user's pause: the next step is planned meanwhile
    moves = _wait_for(folder, done)
    by_slider: dict = {}
    for r in moves:
        by_slider.setdefault(r["what"].split(": update")[0], []).append(r["ahead_used"])
    assert by_slider == {label: [0] + [1] * (STEPS - 1) for _, label in SLIDERS}
    assert_clean(page, requests_made)
