"""aisize's cache folder: what is built or computed once per version and kept between processes (the
app's offline chart code, :mod:`aisize.app.chart_bundle`; the validation tables,
:mod:`aisize.validation.store`)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$AISIZE_CACHE``, else ``$XDG_CACHE_HOME/aisize``, else ``~/.cache/aisize``."""
    if os.environ.get("AISIZE_CACHE"):
        return Path(os.environ["AISIZE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aisize"
