"""The JupyterHub pieces of the team server (imported by the hub and by users' servers, never by the app).

- :class:`AppSpawner`: each user's server is the aisize app (``python -m aisize.app.team``), run as
  the hub's own system user in a folder of its own: people are users of the hub, not of the machine.
  The server runs no Jupyter server and executes no code sent from the browser, so users sharing a
  system account cannot reach each other through it.
  Each of its processes (the server, each tab's kernel, a report's kernel and Chromium) may hold at
  most ``mem_limit`` of data (``RLIMIT_DATA``): a runaway read or allocation fails with MemoryError in
  that process instead of taking the machine. Only names of the hub's policy are started.
- :class:`HubIdentityProvider`: JupyterHub's OAuth identity provider for Voila's standalone server,
  with its login callback mounted under the user's prefix (Voila does not prefix its handlers).
- :class:`ActivityKernelManager`: the user's server tells the hub when its kernels last did something
  (ran code for a widget message, started, stopped), and :class:`ActivityBlindProxy` stops the hub
  from counting bytes through the proxy as activity: an open but untouched tab keeps its websocket
  alive with a ping every 30 s, which kept its server from ever being culled.
- :func:`trust_forwarding_from_proxy_only`: the hub's idea of a client's address (its per-address limits,
  its log) comes from the proxy's own ``X-Forwarded-For`` entry, never from headers a client wrote.
"""

from __future__ import annotations

import json
import os
import resource
import sys

import tornado.httpserver

from jupyter_server.utils import url_path_join
from jupyterhub.proxy import ConfigurableHTTPProxy
from jupyterhub.singleuser.extension import JupyterHubIdentityProvider
from jupyterhub.spawner import LocalProcessSpawner
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.ioloop import PeriodicCallback
from traitlets import Float, Integer, Unicode, default

from aisize.app import memory_watch
from aisize.app.guard import GuardedKernelManager
from aisize.app.team_limits import client_address, username_problem
from aisize.cache import ENV as CACHE_ENV
from aisize.cache import VALIDATION_ENV as VALIDATION_CACHE_ENV


class AppSpawner(LocalProcessSpawner):
    """Each user's server is the aisize app, run as the hub's system user in ``home_dir_template``."""

    home_dir_template = Unicode("{state}/users/{username}", config=True,
                                help="each user's working folder; {state} and {username} are filled in")
    person_mem_limit = Integer(0, min=0, config=True,
                                help="resident memory of all of one person's processes together [bytes]; 0: none. "
                                     "Past it the largest process under their server is ended (memory_watch)")

    @default("cmd")
    def _default_cmd(self):
        return [os.environ.get("AISIZE_TEAM_PYTHON") or sys.executable, "-m", "aisize.app.team"]

    @property
    def home_dir(self) -> str:
        state = os.environ.get("AISIZE_TEAM_STATE") or os.getcwd()
        return self.home_dir_template.format(state=state, username=self.user.name)

    async def start(self):
        problem = username_problem(self.user.name, reserved_ok=self.user.admin)
        if problem:  # an account from before the name policy: refused now, not after a two-minute wait
            raise web.HTTPError(403, f"no server for {self.user.name[:40]!r}: {problem}; ask the admin")
        return await super().start()

    def make_preexec_fn(self, name):
        home, limit = self.home_dir, self.mem_limit

        def preexec():  # no setuid, unlike LocalProcessSpawner: hub users are not system users
            os.makedirs(home, 0o700, exist_ok=True)
            os.chdir(home)
            if limit:  # inherited by every process the server starts
                resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

        return preexec

    def user_env(self, env):
        env.update(USER=self.user.name, HOME=self.home_dir)
        if self.person_mem_limit:
            env[memory_watch.ENV] = str(self.person_mem_limit)
        # the team's cache, not one per person (team.team_cache); the admin's choice of planning the next slider
        # step ahead (aisize.app.ahead; off, a move plans once, not up to twice: a team short of cores), which
        # JupyterHub would drop (it keeps only Spawner.env_keep's names). Imported here: the module imports
        # ipywidgets, which the hub and the people's servers (they import this module) otherwise never load.
        from aisize.app.ahead import ENV as PLAN_AHEAD_ENV
        for name in (CACHE_ENV, VALIDATION_CACHE_ENV, PLAN_AHEAD_ENV):
            if os.environ.get(name):
                env[name] = os.environ[name]
        return env

    def move_certs(self, paths):
        return paths


class HubIdentityProvider(JupyterHubIdentityProvider):
    """Who is asking, from the hub's OAuth cookie; only the server's owner (or an admin) passes."""

    def __init__(self, **kwargs):
        kwargs.pop("token", None)  # Voila passes token=""; the hub's token is a property here
        super().__init__(**kwargs)

    def get_handlers(self):
        prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
        return [(url_path_join(prefix, path), *rest) for path, *rest in super().get_handlers()]


class ActivityBlindProxy(ConfigurableHTTPProxy):
    """configurable-http-proxy without its per-route ``last_activity``: traffic is not activity.

    The hub copies each route's last activity into the server's, and an open tab's websocket carries
    a ping every 30 s; users' servers report their real activity themselves (:class:`ActivityKernelManager`).
    """

    async def get_all_routes(self, client=None):
        routes = await super().get_all_routes(client)
        for route in routes.values():
            if "user" in route.get("data", {}):
                route["data"].pop("last_activity", None)
        return routes


class ActivityKernelManager(GuardedKernelManager):
    """The user's server's kernel manager: every ``activity_interval_seconds`` it tells the hub the last time
    a kernel did something, if that changed (the hub's idle culler stops servers idle past its timeout)."""

    activity_interval_seconds = Float(60.0, min=1.0, config=True, help="how often activity is reported [s]")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._reported = None
        self._reporter: PeriodicCallback | None = None
        self._memory: PeriodicCallback | None = None

    def initialize_culler(self):
        super().initialize_culler()
        if self._reporter is None and os.environ.get("JUPYTERHUB_ACTIVITY_URL"):
            self._reporter = PeriodicCallback(self.report_activity, self.activity_interval_seconds * 1000)
            self._reporter.start()
        limit = memory_watch.limit_from_env()
        if self._memory is None and limit:  # the person's processes together (memory_watch)
            watch = memory_watch.MemoryWatch(limit, self.log)
            self._memory = PeriodicCallback(watch.check, memory_watch.CHECK_SECONDS * 1000)
            self._memory.start()

    async def report_activity(self) -> bool:
        """POST the kernels' last activity to the hub if it is newer than the last report; True if sent."""
        last = self.last_kernel_activity
        if last is None or (self._reported is not None and last <= self._reported):
            return False
        stamp = last.isoformat().replace("+00:00", "Z")
        body = {"last_activity": stamp,
                "servers": {os.environ.get("JUPYTERHUB_SERVER_NAME", ""): {"last_activity": stamp}}}
        request = HTTPRequest(os.environ["JUPYTERHUB_ACTIVITY_URL"], method="POST", body=json.dumps(body),
                              headers={"Authorization": f"token {os.environ.get('JUPYTERHUB_API_TOKEN', '')}",
                                       "Content-Type": "application/json"}, request_timeout=30)
        try:
            await AsyncHTTPClient().fetch(request)
        except (HTTPClientError, OSError) as error:
            self.log.warning("Could not report activity to the hub: %s", error)
            return False
        self._reported = last
        return True


PROXY_PEERS = frozenset({"127.0.0.1", "::1"})  # where configurable-http-proxy reaches the hub from (its bind)


def trust_forwarding_from_proxy_only(proxies: frozenset[str] = PROXY_PEERS) -> None:
    """Make Tornado read a request's client address as :func:`~aisize.app.team_limits.client_address` does.

    JupyterHub serves with ``xheaders=True``, and Tornado then takes ``X-Real-Ip`` from any request as the
    client's address. configurable-http-proxy passes that header through from the client untouched, so a
    client could name any address on each request and no per-address limit held (issue 46). There is no
    setting for this, so the one method that applies the headers is replaced, in the hub's process only
    (``deploy/jupyterhub_config.py`` calls this). ``X-Forwarded-Proto``: the last entry, from the proxy.
    """
    context = getattr(tornado.httpserver, "_HTTPRequestContext", None)
    if context is None or not hasattr(context, "_apply_xheaders"):  # fail closed on a Tornado that moved it
        raise RuntimeError(f"tornado {tornado.version}: no _HTTPRequestContext._apply_xheaders to replace; "
                           "the team server cannot tell clients' addresses apart safely")

    def _apply_xheaders(self, headers) -> None:
        peer = self._orig_remote_ip
        self.remote_ip = client_address(peer, headers.get_list("X-Forwarded-For"), proxies=proxies,
                                        trusted_hops=frozenset(self.trusted_downstream or ()))
        if peer in proxies:
            proto = headers.get("X-Forwarded-Proto", "").split(",")[-1].strip()
            if proto in ("http", "https"):
                self.protocol = proto

    context._apply_xheaders = _apply_xheaders
