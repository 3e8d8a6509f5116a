"""The one gate for every file a scenario names (a model's config.json, a serving calibration, a load profile).

A scenario from an upload, the app or any dict names no file at all: a path there could name anything the
server can read (``/dev/zero`` grew a kernel to 1.8 GiB; a FIFO blocked it; a readable CSV was copied into
the user's scenario). Only a scenario file given to the command line (:func:`aisize.scenario.io.load` sets
:data:`READ_MODEL_FILES`) may name files, and each is then read as a regular file only (opened without
blocking, checked on the open file: never a device, FIFO, socket or folder) and at most a byte cap. Every
failure to read gives one message, whatever the path names, so that nothing about the file leaks.

A field that may hold a path is annotated with a :class:`ScenarioPath` (``Annotated[str, ..., MARKER]``) and
read only through ``MARKER.read(value)``; tests/test_scenario_paths.py finds every such field in the schema.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from aisize import checks

__all__ = ["READ_MODEL_FILES", "SCENARIO_FOLDER", "ScenarioPath", "named_file", "read_named_file",
           "MAX_CONFIG_BYTES", "MAX_CALIBRATION_BYTES", "MAX_CSV_BYTES"]

# A named file's content is embedded in the scenario, which must still load (io.MAX_FILE_BYTES is 1 MB):
MAX_CONFIG_BYTES = 1_000_000  # a config.json is a few kB
MAX_CALIBRATION_BYTES = 1_000_000  # a calibration is a page of numbers (serving.calibration.MAX_FILE_BYTES)
MAX_CSV_BYTES = 1_000_000  # a load profile has at most 10,000 rows of ~20 bytes
MAX_SHOWN = 200  # characters of a path quoted in a message

# Files are read only for a scenario file given to the command line (io.load sets this).
READ_MODEL_FILES: ContextVar[bool] = ContextVar("aisize_read_model_files", default=False)
# The folder of that scenario file: a relative path it names is looked for there first (io.load sets this).
SCENARIO_FOLDER: ContextVar[Path | None] = ContextVar("aisize_scenario_folder", default=None)


def named_file(path: str) -> Path:
    """A file a scenario file names: a relative path from the scenario file's folder where it is there (a
    report's kernel runs elsewhere), else from the working directory."""
    p = Path(path).expanduser()
    folder = SCENARIO_FOLDER.get()
    if folder is not None and not p.is_absolute() and os.path.exists(folder / p):
        return folder / p
    return p


def read_named_file(path: str, *, field: str, max_bytes: int, inside: str | None = None, note: str = "") -> str:
    """The text of the file ``path`` names: a regular file of at most ``max_bytes``, else ValueError.

    ``inside``: a folder may be named instead, meaning its file of that name (a model's ``config.json``).
    Missing, unreadable, a device, a FIFO, a folder, too large: one message naming ``field`` (``note``
    appended), never the cause (no OS error text), so that a refusal says nothing about what is on the server.
    """
    shown = str(path)[:MAX_SHOWN]
    try:
        p = named_file(path)
        if inside is not None and os.path.isdir(p):
            p = p / inside
        raw = checks.read_file(field, p, max_bytes)
    except (OSError, ValueError, RuntimeError):  # RuntimeError: "~nobody/x" names no home folder
        raise ValueError(f"{field}={shown!r} cannot be read: missing, unreadable, not a regular file, or larger "
                         f"than allowed (a named file must be a regular file of at most {max_bytes:,} bytes)"
                         + (f"; {note}" if note else "")) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{field}={shown!r} is not UTF-8 text") from None


@dataclass(frozen=True)
class ScenarioPath:
    """Marks a scenario field whose value may name a file, and reads it through the gate.

    ``field``: the field's name, as messages say it; ``max_bytes``: its cap; ``instead``: what a scenario
    from the app or a dict gives instead of a path (the content embedded); ``inside`` and ``note``: see
    :func:`read_named_file`.
    """

    field: str
    max_bytes: int
    instead: str
    inside: str | None = None
    note: str = ""

    def read(self, path: str) -> str:
        """The named file's text; ValueError for a scenario not given to the command line, whatever it names."""
        if not READ_MODEL_FILES.get():  # the same words whatever the path names: nothing about it leaks
            raise ValueError(f"{self.field}: a path is read only from a scenario file given to the command "
                             f"line: {self.instead}")
        return read_named_file(path, field=self.field, max_bytes=self.max_bytes, inside=self.inside,
                               note=self.note)
