"""One person's memory on the team server, all their processes together (issue 46.6).

Each process of a user's server may hold at most ``Spawner.mem_limit`` of data (``RLIMIT_DATA``), but a
person runs several at once: the server, each tab's kernel, a report's kernel and Chromium; one tab making
an HTML+PDF report peaked at 2.1 GiB with a 1 GiB limit per process. :class:`MemoryWatch` runs in the
user's server and sums the resident memory of the server and everything under it; past the person's
limit it ends the largest process under the server (a kernel, a report's kernel or Chromium), whose page
then says its kernel died, and logs why. A limit a process reaches between two looks is still held by
``RLIMIT_DATA``. Where the hub can make cgroups, a cgroup's ``memory.max`` is the firmer tool; this
needs no privileges.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass

ENV = "AISIZE_USER_MEMORY_BYTES"  # set by the spawner: the person's limit over all their processes [bytes]
CHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Process:
    pid: int
    rss_bytes: int
    name: str


def over_limit(server: Process, children: list[Process], limit_bytes: int) -> Process | None:
    """The process to end when ``server`` and ``children`` hold more than ``limit_bytes``, else None.

    The largest child: it is what grew (a report's Chromium, a kernel holding a huge plan), and ending it
    frees the most. The server itself is never chosen: it holds every other tab of the person.
    """
    total = server.rss_bytes + sum(c.rss_bytes for c in children)
    if total <= limit_bytes or not children:
        return None
    return max(children, key=lambda c: c.rss_bytes)


class MemoryWatch:
    """Every ``CHECK_SECONDS``, end the largest process under this one while the tree is over ``limit_bytes``."""

    def __init__(self, limit_bytes: int, log: logging.Logger | None = None, pid: int | None = None):
        if limit_bytes < 1:
            raise ValueError(f"limit_bytes={limit_bytes!r} must be positive")
        self.limit_bytes, self.pid = int(limit_bytes), pid or os.getpid()
        self.log = log or logging.getLogger(__name__)
        self.ended: list[Process] = []

    def snapshot(self) -> tuple[Process, list[Process]]:
        import psutil

        me = psutil.Process(self.pid)
        children = []
        for child in me.children(recursive=True):
            try:
                children.append(Process(child.pid, child.memory_info().rss, child.name()))
            except psutil.Error:  # ended meanwhile
                continue
        return Process(me.pid, me.memory_info().rss, me.name()), children

    def check(self) -> Process | None:
        """Look once; end (SIGKILL) and return the process chosen, if any."""
        server, children = self.snapshot()
        victim = over_limit(server, children, self.limit_bytes)
        if victim is None:
            return None
        total = server.rss_bytes + sum(c.rss_bytes for c in children)
        self.log.warning("Ended %s (pid %d, %.0f MiB): this person's processes held %.0f MiB, over their limit "
                         "of %.0f MiB", victim.name, victim.pid, victim.rss_bytes / 2**20, total / 2**20,
                         self.limit_bytes / 2**20)
        try:
            os.kill(victim.pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        self.ended.append(victim)
        return victim


def limit_from_env(env: dict[str, str] | None = None) -> int | None:
    """The person's limit from the spawner's environment, or None when none is set."""
    text = (env if env is not None else os.environ).get(ENV, "")
    if not text:
        return None
    value = int(text)
    if value < 1:
        raise ValueError(f"{ENV}={text!r} must be a positive number of bytes")
    return value
