"""The app server's kernel manager: a cap on sessions, and culling of pages that never connected.

Every page load starts (or takes from the preheated pool) a Python kernel of about 250 MiB. Without a
limit, anyone who can reach the server can exhaust its memory with plain page loads: 24 loads that
never open the page's websocket left 31 kernels (8.2 GiB) until the 10-minute idle cull. So:

- at most ``max_sessions`` kernels serve pages at once (the preheated pool not counted); past that
  the server answers "busy, try again" (``jupyter/voila.py`` asks :meth:`admit` before rendering);
- a kernel whose page has not connected its websocket within ``connect_timeout_seconds`` of being
  served is shut down (a real page connects within seconds; a script that only GETs never does);
- a kernel whose page connected and then lost every websocket (a tab killed, a laptop closed: no
  unload ever asked for a shutdown) is shut down ``disconnect_grace_seconds`` later, unless the page
  reconnects meanwhile (voila reconnects after a network blip): its session is free again;
- a refill of the preheated pool (voila asks for one when a page has taken the pool's kernel) starts
  ``refill_delay_seconds`` later, so that it (it runs the notebook: seconds of CPU) does not slow that
  page's own start; and at once when another page is admitted meanwhile (that page takes the pending
  kernel: it must not wait out the delay). The first fill, before any page, starts at once;
- ``allowed_hosts`` are the host names the server answers to, besides IP addresses and localhost
  (``jupyter/voila.py`` checks the Host header: a DNS-rebinding page's name is not among them).

Kernels idle and unconnected for ``MappingKernelManager.cull_idle_timeout`` are still culled as before.
"""

from __future__ import annotations

import asyncio
import time

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.ioloop import PeriodicCallback
from traitlets import Float, Integer, List, Unicode

PREHEAT = "VOILA_PREHEAT"  # voila.utils.ENV_VARIABLE.VOILA_PREHEAT: in the env of the kernels it pools
CHECK_SECONDS = 5.0  # how often served kernels are checked for a connection


class GuardedKernelManager(AsyncMappingKernelManager):
    """Voila's kernel manager (it is the base of voila's pooled manager) with the limits above."""

    max_sessions = Integer(16, min=1, config=True, help="kernels serving pages at once; more are refused")
    connect_timeout_seconds = Float(60.0, min=1.0, config=True,
                                    help="shut a served kernel down if its page has not connected by then [s]")
    allowed_hosts = List(Unicode(), config=True, help="host names accepted besides IP addresses and localhost")
    refill_delay_seconds = Float(0.0, min=0.0, config=True,
                                 help="hold a pool refill back this long, unless a page is admitted [s]")
    disconnect_grace_seconds = Float(60.0, min=1.0, config=True,
                                     help="shut a served kernel down this long after its last websocket closed [s]")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._served: dict[str, float] = {}  # kernel id -> when its page was served (monotonic s)
        self._connected: set[str] = set()
        self._left: dict[str, float] = {}  # kernel id -> when its page's last websocket closed (monotonic s)
        self._opening = 0  # pages admitted whose kernel is not served yet
        self._watch: PeriodicCallback | None = None
        self._admitted_any = False  # a page has been admitted: pool kernels started from now on are refills
        self._page_admitted = asyncio.Event()  # set, then replaced, when a page is admitted

    def sessions(self) -> int:
        """Kernels serving pages now, plus pages being opened."""
        return sum(1 for k in self._served if k in self) + self._opening

    def admit(self) -> bool:
        """Reserve a session for a page about to render; False when the server is full."""
        if self.sessions() >= self.max_sessions:
            return False
        self._opening += 1
        self._admitted_any = True
        self._page_admitted.set()  # wakes a refill held back by the delay: this page may be waiting for it
        self._page_admitted = asyncio.Event()
        return True

    def served(self, kernel_id: str | None) -> None:
        """The admitted page went out with ``kernel_id`` (None: it failed before a kernel was served)."""
        self._opening = max(0, self._opening - 1)
        if kernel_id:
            self._served.setdefault(kernel_id, time.monotonic())

    def notify_connect(self, kernel_id):
        self._connected.add(kernel_id)
        self._left.pop(kernel_id, None)
        return super().notify_connect(kernel_id)

    def notify_disconnect(self, kernel_id):
        result = super().notify_disconnect(kernel_id)
        if kernel_id in self._served and self._kernel_connections.get(kernel_id, 0) <= 0:
            self._left[kernel_id] = time.monotonic()
        return result

    async def start_kernel(self, **kwargs):
        refill = (kwargs.get("env") or {}).get(PREHEAT) == "True" and self._admitted_any
        if refill and self.refill_delay_seconds > 0:  # voila asks right after a page took the pool's kernel
            try:
                await asyncio.wait_for(self._page_admitted.wait(), self.refill_delay_seconds)
                self.log.info("Pool refill started at once: a page was admitted")
            except asyncio.TimeoutError:
                pass
        return await super().start_kernel(**kwargs)

    def initialize_culler(self):
        super().initialize_culler()
        if self._watch is None:
            self._watch = PeriodicCallback(self._cull_unconnected, CHECK_SECONDS * 1000)
            self._watch.start()

    async def _cull_unconnected(self) -> None:
        now = time.monotonic()
        for kernel_id, since in list(self._served.items()):
            if kernel_id not in self:
                self._forget(kernel_id)
            elif kernel_id not in self._connected and now - since > self.connect_timeout_seconds:
                await self._cull(kernel_id, f"its page did not connect within {self.connect_timeout_seconds:.0f} s")
            elif kernel_id in self._left and now - self._left[kernel_id] > self.disconnect_grace_seconds:
                await self._cull(kernel_id, f"its page left without closing and did not come back within "
                                            f"{self.disconnect_grace_seconds:.0f} s")

    async def _cull(self, kernel_id: str, why: str) -> None:
        self.log.warning("Culling kernel %s: %s", kernel_id, why)
        self._forget(kernel_id)
        try:
            await self.shutdown_kernel(kernel_id)
        except KeyError:  # shut down meanwhile (tab closed, idle cull)
            pass

    def _forget(self, kernel_id: str) -> None:
        self._served.pop(kernel_id, None)
        self._connected.discard(kernel_id)
        self._left.pop(kernel_id, None)

    async def shutdown_kernel(self, kernel_id, *args, **kwargs):
        self._forget(kernel_id)
        return await super().shutdown_kernel(kernel_id, *args, **kwargs)
