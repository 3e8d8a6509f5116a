"""Validation tables kept on disk between processes, keyed by everything they are computed from.

Every report kernel, app kernel and ``aisize validate`` starts with no table in memory, and putting every
published run through the estimates takes about 3 s on one core (the disaggregated closed loops most of
it). The tables depend only on aisize's source, its data and catalog overlay files, the serving
calibration and the numeric libraries' versions: the key hashes all of them, so a table written by other
code or data is never read. Tables are JSON (pandas' ``table`` orient keeps each column's dtype), never
pickle. A folder that cannot be written (or an unreadable file) costs only the computation. A table's
files of other code or data are removed once unwritten for 30 days.

The appendix's charts, the same for every report of a version, are kept here too, as SVG text keyed by
their spec (:func:`remembered_text`). The folder is :func:`folder`.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pandas as pd

from aisize.cache import VALIDATION_ENV, cache_dir

CACHE_ENV = VALIDATION_ENV
_SUFFIXES = (".py", ".csv", ".json", ".yaml", ".yml")
PRUNE_AFTER_S = 30 * 86400.0  # a table file of other code or data unwritten this long is removed


def folder(environ=None) -> Path:
    """Where tables are kept: ``$AISIZE_VALIDATION_CACHE``, else ``validation/`` in aisize's cache folder
    (:func:`aisize.cache.cache_dir`); read from ``environ`` (default: this process's environment)."""
    environ = os.environ if environ is None else environ
    given = environ.get(CACHE_ENV)
    return Path(given).expanduser() if given else cache_dir(environ) / "validation"


def _hash_tree(h, root: Path) -> None:
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*")):
        if path.suffix in _SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())


@lru_cache(maxsize=1)
def _code_hash() -> str:
    import numpy
    import scipy

    from aisize import __version__

    h = hashlib.sha256(f"{__version__} {sys.version} {numpy.__version__} {pd.__version__} "
                       f"{scipy.__version__}".encode())
    _hash_tree(h, Path(__file__).resolve().parents[1])
    return h.hexdigest()


def fingerprint() -> str:
    """A key of aisize's code and of its data folder and catalog overlays as they are now."""
    from aisize import catalog

    h = hashlib.sha256(_code_hash().encode())
    for root in (catalog.data_dir(), *catalog.overlay_dirs()):
        h.update(str(root).encode())
        _hash_tree(h, Path(root))
    return h.hexdigest()


def _path(where: Path, base: str, name: str, key: str, suffix: str = ".json") -> Path:
    return where / f"{name}-{hashlib.sha256(f'{base} {name} {key}'.encode()).hexdigest()[:32]}{suffix}"


def remembered(name: str, compute: Callable[[], pd.DataFrame], *, key: str = "") -> pd.DataFrame:
    """``compute()``, read from the store when it holds this table for the current code, data and ``key``
    (e.g. the calibration's repr); else computed and written there."""
    where = folder()
    path = _path(where, fingerprint(), name, key)
    try:
        return pd.read_json(io.StringIO(path.read_text(encoding="utf-8")), orient="table")
    except (OSError, ValueError, KeyError):
        pass
    frame = compute()
    _write(where, name, path, frame.to_json(orient="table", index=False))
    return frame


def remembered_text(name: str, compute: Callable[[], str], *, key: str,
                    valid: Callable[[str], bool] = lambda text: True) -> str:
    """``compute()``, a text wholly determined by ``key`` (a chart's SVG by its spec and the converter's
    version), read from the store when it holds it and the text read passes ``valid``; else computed and
    written there."""
    where = folder()
    path = _path(where, "", name, key, ".txt")
    try:
        text = path.read_text(encoding="utf-8")
        if valid(text):
            return text
    except (OSError, ValueError):
        pass
    text = compute()
    _write(where, name, path, text)
    return text


def _write(where: Path, name: str, path: Path, text: str) -> None:
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)  # readers see the whole file or none
        _prune(where, name, path)
    except OSError:
        pass


def _prune(where: Path, name: str, kept: Path) -> None:
    """Remove this name's files of other code, data or keys not written for :data:`PRUNE_AFTER_S` (each
    new version of aisize writes new ones; a file still in use is only computed again)."""
    old = time.time() - PRUNE_AFTER_S
    for other in where.glob(f"{name}-*{kept.suffix}"):
        if other != kept and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{32}}", other.stem) \
                and other.stat().st_mtime < old:
            other.unlink(missing_ok=True)


def _tables() -> list[tuple[str, str]]:
    """(name, key) of every table :func:`aisize.validation.validate` reads."""
    from aisize.serving import CALIBRATION
    from aisize.validation.serving import SETS

    return [("training", "")] + [(family, repr(CALIBRATION)) for family in SETS]


def complete(environ=None) -> bool:
    """Whether the store (of ``environ``, default this process's) holds every table for this code and data."""
    where, base = folder(environ), fingerprint()
    return all(_path(where, base, name, key).is_file() for name, key in _tables())


def warm() -> None:
    """Compute every table into the store unless it holds them (what
    :func:`aisize.cache.warm_validation_in_background` runs)."""
    if not complete():
        from aisize.validation import validate

        validate()
