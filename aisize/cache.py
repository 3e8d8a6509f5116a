"""aisize's cache folder: what is built or computed once per version and kept between processes (the
app's offline chart code, :mod:`aisize.app.chart_bundle`; the validation tables,
:mod:`aisize.validation.store`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ENV = "AISIZE_CACHE"
VALIDATION_ENV = "AISIZE_VALIDATION_CACHE"  # the validation tables' folder, when not in the cache folder


def cache_dir(environ=None) -> Path:
    """``$AISIZE_CACHE``, else ``$XDG_CACHE_HOME/aisize``, else ``~/.cache/aisize`` (read from ``environ``,
    default this process's environment)."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV):
        return Path(environ[ENV])
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "aisize"


def warm_validation_in_background(environ=None) -> subprocess.Popen:
    """Start filling the validation tables' store (:func:`aisize.validation.store.warm`; about 5 s of CPU,
    none when it holds them) in a process of its own at the lowest CPU priority. A server starting calls it,
    so that its first Accuracy tab (2 s of tables otherwise) and first report read them. ``environ`` is the
    process's environment (default: this one's)."""
    return subprocess.Popen([sys.executable, "-c", "from aisize.validation.store import warm; warm()"],
                            env=dict(os.environ if environ is None else environ), preexec_fn=lambda: os.nice(19),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
