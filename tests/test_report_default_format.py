"""`aisize report` without --format writes what the machine can (issue 49): HTML and PDF where Chromium is
installed, else HTML alone, saying why; asking for a PDF without Chromium is an error naming what it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AISIZE = str(Path(sys.executable).with_name("aisize"))


def test_without_chromium_the_default_report_is_html_and_says_so(tmp_path):
    env = {**os.environ, "AISIZE_CHROMIUM": "/nonexistent"}
    done = subprocess.run([AISIZE, "report", "--preset", "io-blender", "--out", str(tmp_path), "--sections",
                           "summary"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HTML only: a PDF needs Chromium" in done.stderr
    assert sorted(p.suffix for p in tmp_path.iterdir() if p.is_file() and p.suffix in (".html", ".pdf")) == [".html"]
    both = subprocess.run([AISIZE, "report", "--preset", "io-blender", "--out", str(tmp_path), "--format", "both"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert both.returncode == 2 and "PDF needs Chromium" in both.stderr and "Traceback" not in both.stderr
