"""Voila configuration of the aisize app.

Read because ``aisize.app.serve.build_command`` passes
``--Voila.config_file_paths=<this folder>`` (so no voila.py or voila.json from
the working directory or ~/.jupyter is read). The headers are set here, not on
the command line: traitlets reads a nested dict from the command line only in
a deprecated form, and voila turns that DeprecationWarning back on at import.

Besides the headers, this file patches voila 0.5's handlers (no hook of voila's
runs for preheated kernels, hence wrappers):

- the page sets the ``_xsrf`` cookie (so a closed tab's shutdown beacon passes);
- past ``GuardedKernelManager.max_sessions`` the page is a "busy, try again" 503;
- the Host header must be an IP address, localhost or an allowed host name;
- a malformed ``/voila/templates/...`` path is a 404, not a 500 with a traceback;
- the kernel websocket sends without Nagle's delay (TCP_NODELAY);
- content-named labextension files are cached by the browser for good (voila asks for ``no-cache``).

A page-config hook names the chart bundle, so the page fetches and compiles it while voila's own
code loads, not after the widget state arrives (see the template).
"""

import html
import ipaddress
import os
import re

from jupyter_server.base.handlers import FileFindHandler, JupyterHandler
from tornado.httputil import split_host_and_port
from tornado.web import HTTPError
from voila.handler import VoilaHandler
from voila.tornado.kernel_websocket_handler import VoilaKernelWebsocketHandler
from voila.static_file_handler import TemplateStaticFileHandler

from aisize.app import chart_bundle
from aisize.app.serve import HEADERS

c = get_config()  # noqa: F821 -- provided by traitlets when it runs this file
c.Voila.tornado_settings = {"headers": dict(HEADERS)}


def _name_chart_bundle(page_config: dict, **_) -> dict:
    """The page config with ``aisizeChartBundle``: the served chart bundle's path below
    ``<base>voila/labextensions/`` (what the kernels' chart widgets import), when the server serves one."""
    served = os.environ.get(chart_bundle.ENV)
    return {**page_config, "aisizeChartBundle": served} if served else page_config


c.VoilaConfiguration.page_config_hook = _name_chart_bundle

RETRY_SECONDS = 30
_KERNEL_ID = re.compile(r'"kernelId":\s*"([0-9a-f-]{36})"')
BUSY_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{retry}">
<title>aisize: busy</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto;">
<h1>The aisize workbook is busy</h1>
<p>All {sessions} sessions of this server are in use. Try again in a minute: this page retries
by itself in {retry} seconds.</p></body></html>
"""

# When a tab closes, voila's page asks the server to shut its kernel down with the
# `_xsrf` cookie's value, but voila 0.5 never sets that cookie: the request is refused
# (403) and the closed tab's kernel (~250 MiB) lives on until culled. Tornado sets the
# cookie the first time a handler reads `xsrf_token`, so read it before rendering.
_render = VoilaHandler.get_generator


async def _render_guarded(self, *args, **kwargs):
    self.xsrf_token  # noqa: B018 -- read for its side effect: Set-Cookie _xsrf
    manager = self.kernel_manager
    if not hasattr(manager, "admit"):  # not the aisize kernel manager: plain voila
        async for chunk in _render(self, *args, **kwargs):
            yield chunk
        return
    if not manager.admit():
        self.set_status(503)
        self.set_header("Retry-After", str(RETRY_SECONDS))
        self.set_header("Cache-Control", "no-store")
        yield BUSY_PAGE.format(retry=RETRY_SECONDS, sessions=html.escape(str(manager.max_sessions)))
        return
    kernel_id = None
    try:
        async for chunk in _render(self, *args, **kwargs):
            if kernel_id is None and (found := _KERNEL_ID.search(chunk)):
                kernel_id = found[1]
            yield chunk
    finally:
        manager.served(kernel_id)


VoilaHandler.get_generator = _render_guarded

# DNS rebinding: a page on evil.example whose name now resolves to this machine is
# same-origin with the app; only its Host header gives it away. Voila turns jupyter
# server's own check off (allow_remote_access), and that check refuses LAN addresses.
_check_host = JupyterHandler.check_host


def _host_allowed(self) -> bool:
    allowed = getattr(self.settings.get("kernel_manager"), "allowed_hosts", None)
    if allowed is None:
        return _check_host(self)
    host = split_host_and_port(self.request.host.lower())[0].strip("[]")
    try:
        ipaddress.ip_address(host)
        return True  # an address, not a name a rebinding page could use
    except ValueError:
        pass
    if host == "localhost" or host in allowed:
        return True
    self.log.warning("Refused a request for host %r (not in allowed_hosts)", host[:100])
    return False


JupyterHandler.check_host = _host_allowed

# /voila/templates/../../etc/passwd: voila asserts the path's shape and answers 500.
_parse_url_path = TemplateStaticFileHandler.parse_url_path
_get_absolute_path = TemplateStaticFileHandler.get_absolute_path.__func__


def _parse_or_404(self, path):
    try:
        return _parse_url_path(self, path)
    except (AssertionError, ValueError):
        raise HTTPError(404) from None


def _absolute_or_404(cls, root, path):
    try:
        return _get_absolute_path(cls, root, path)
    except (AssertionError, ValueError):
        raise HTTPError(404) from None


TemplateStaticFileHandler.parse_url_path = _parse_or_404
TemplateStaticFileHandler.get_absolute_path = classmethod(_absolute_or_404)

# Nagle's algorithm: jupyter_server never sets TCP_NODELAY on the kernel websocket, so after the
# "busy" status each reply waits for the browser's delayed ACK (40 ms on Linux) before it leaves.
_open_kernel_ws = VoilaKernelWebsocketHandler.open


async def _open_nodelay(self, *args, **kwargs):
    self.set_nodelay(True)
    return await _open_kernel_ws(self, *args, **kwargs)


VoilaKernelWebsocketHandler.open = _open_nodelay

# Voila serves its labextensions with "Cache-Control: no-cache", so each page open revalidates the
# twenty-odd widget-manager and chart scripts it already holds, one request each, while the page waits
# to start. Their names carry a hash of their content (webpack's [contenthash]: 568.1e2faa2ba0bbe59c4780.js,
# remoteEntry.5cbb9d2323598fbda535.js), and the chart bundle's the versions that built it (a new version
# is a new name), so a cached copy can never be stale: the browser may keep them for good.
_CONTENT_NAMED = re.compile(r"/voila/labextensions/(?:.+\.[0-9a-f]{8,}\.js|%s/[^/]+\.js)$" % chart_bundle.FOLDER)
_set_static_headers = FileFindHandler.set_headers


def _set_headers_immutable(self) -> None:
    _set_static_headers(self)
    if _CONTENT_NAMED.search(self.request.path):
        self.set_header("Cache-Control", "public, max-age=31536000, immutable")


FileFindHandler.set_headers = _set_headers_immutable
