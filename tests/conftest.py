"""Suite-wide hooks: deterministic hypothesis profile, and a loud account of every skipped test.

What a machine lacks (Chromium, poppler-utils, PyTorch, the team server's JupyterHub and
configurable-http-proxy) is named in the header, and the summary lists each skipped test under
its reason, so a run that skipped something cannot pass for a full one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections import defaultdict

import fuzz_profiles

PROFILE = fuzz_profiles.load()
MAX_LISTED = 12  # test ids shown per skip reason; the count is always shown


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # ValueError: sys.modules[module] is None
        return True


def missing_pieces() -> list[str]:
    """What this machine lacks for some tests, each with how to get it."""
    from aisize.report.pdf import chromium_path

    out = []
    if chromium_path() is None:
        out.append("Chromium (browser and PDF tests): apt-get install chromium, or unset AISIZE_CHROMIUM")
    if not shutil.which("pdftotext"):
        out.append("poppler-utils (PDF text checks): apt-get install poppler-utils")
    if _missing("torch"):
        out.append("PyTorch (cross-check): pip install -e '.[torch]'")
    if _missing("jupyterhub"):
        out.append("JupyterHub (team server test): pip install -e '.[team]'")
    from aisize.app.team import find_proxy

    if find_proxy() is None:
        out.append("configurable-http-proxy (team server test): make test installs it with npm")
    return out


def pytest_configure(config):
    """Validation tables go to a folder of this run (not the user's ~/.cache); the report and app kernels
    the tests start inherit it, so the run computes each table once."""
    if "AISIZE_VALIDATION_CACHE" not in os.environ:
        config._aisize_validation_cache = tempfile.mkdtemp(prefix="aisize-test-validation-")
        os.environ["AISIZE_VALIDATION_CACHE"] = config._aisize_validation_cache


# One worker more than the cores: with one per core, a fifth of the cores' time sat idle (2 cores,
# 2026-12-05: 16 CPU-minutes in a 10 min 17 s run) while a worker waited -- the idle culler's timeout
# waited out (tests/team/test_team_idle.py, 121 s of sleep), hubs, kernels and Chromium starting. The
# extra worker runs other files meanwhile. PYTEST_XDIST_AUTO_NUM_WORKERS still sets the count by hand.
EXTRA_WORKERS = 1


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (what ``make test`` runs): the usable cores plus :data:`EXTRA_WORKERS`."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + EXTRA_WORKERS


def pytest_unconfigure(config):
    made = getattr(config, "_aisize_validation_cache", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


# The slowest files (seconds per file, summed from `--junitxml`, measured 2026-12-05 09:19 with
# `-n auto --dist loadfile`: three workers on 2 cores beside other jobs, so each figure is inflated; the
# order is what counts), longest first. pytest-xdist gives a worker whole files in the order they are
# collected (pyproject's --no-loadscope-reorder stops it re-sorting them by test count, which put
# the 121 s single-test idle-culler file last and left the other worker idle for two minutes), so
# handing out the longest files first keeps the workers busy to the end. Every other file follows
# in collection order; a file missing here only costs balance, never a test. (test_serving_simulation.py,
# 26 s, left the list at 10:55: the same change took it and test_serving_ttft_tail_sim.py from 23 to 11 s of CPU.)
SLOWEST_FIRST = [
    "tests/test_readme.py",  # 144 s
    "tests/team/test_team_idle.py",  # 130 s, mostly the culler's 45 s timeout waited out
    "tests/test_report.py",  # 115 s
    "tests/test_format.py",  # 99 s
    "tests/test_every_surface.py",  # 93 s
    "tests/browser/test_app_limits.py",  # 79 s
    "tests/team/test_team_hub.py",  # 76 s
    "tests/test_plan_limits.py",  # 73 s
    # 336 s before the simulation's decode-only look-ahead (10:55): alone 443 s -> 68 s wall, 115 s -> 25 s CPU
    "tests/test_serving_reuse_simulation.py",  # about 70 s (336 x 25 / 115)
    "tests/browser/test_app_browser.py",  # 73 s
    "tests/browser/test_app_security.py",  # 69 s
    "tests/test_incremental_plan.py",  # 51 s
    "tests/test_kernels.py",  # 42 s
    "tests/test_report_content.py",  # 27 s
    "tests/test_queueing_simulation.py",  # 27 s
    "tests/team/test_team_security.py",  # 27 s
    "tests/test_slider_speed.py",  # 25 s
    "tests/test_queueing_jobs.py",  # 25 s
]


def pytest_collection_modifyitems(session, config, items):
    """Longest files first (see SLOWEST_FIRST); a stable sort, so each file keeps its own order."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_report_header(config):
    lines = [f"hypothesis profile: {PROFILE} (HYPOTHESIS_PROFILE=nightly for deep fuzzing)"]
    lines += [f"!!! MISSING {piece} -> its tests SKIP !!!" for piece in missing_pieces()]
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    by_reason: dict[str, list[str]] = defaultdict(list)
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        by_reason[reason.removeprefix("Skipped: ")].append(report.nodeid)
    if not by_reason:
        return
    total = sum(len(ids) for ids in by_reason.values())
    terminalreporter.write_sep("!", f"{total} TESTS SKIPPED: this run is not the full suite", red=True, bold=True)
    for reason, ids in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        terminalreporter.write_line(f"SKIPPED {len(ids)}: {reason}", red=True, bold=True)
        for nodeid in ids[:MAX_LISTED]:
            terminalreporter.write_line(f"    {nodeid}")
        if len(ids) > MAX_LISTED:
            terminalreporter.write_line(f"    ... and {len(ids) - MAX_LISTED} more")
