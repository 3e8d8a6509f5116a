"""Launch the aisize Voila app: one locked-down, offline server.

The command line built here

- renders with the ``aisize`` template (``jupyter/voila/templates/aisize``),
  voila's ``lab`` template without its CDN links (the FontAwesome the widgets'
  icons use comes with voila's own style bundle and web fonts);
- sends a Content-Security-Policy header that lets the page load only from
  its own origin (plus inline and blob: code, which widgets and anywidget
  need), set in ``jupyter/voila.py``, the only voila config file read;
- binds to loopback unless told otherwise, opens no browser, shows no tracebacks;
- serves no file from disk (``/voila/files/...`` answers 403);
- keeps ``pool_size`` kernels preheated (the notebook already executed) and
  culls kernels idle for ``cull_idle_seconds``;
- serves at most ``max_sessions`` pages at once ("busy, try again" past that),
  shuts down a served kernel whose page has not connected within
  ``connect_timeout_seconds``, and answers only to IP addresses, localhost and
  ``allowed_hosts`` (:mod:`aisize.app.guard`, enforced in ``jupyter/voila.py``).

Voila itself answers 403/404 to ``/api/contents`` and ``/api/kernels`` and
drops ``execute_request`` messages from the browser; widget messages still
arrive, so widget code treats every value as untrusted input.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from aisize import checks
from aisize.app import chart_bundle
from aisize.cache import warm_validation_in_background

# Root added to JUPYTER_PATH: voila finds templates only under
# <jupyter path>/voila/templates/<name>, so the template lives in that layout.
JUPYTER_DATA_DIR = Path(__file__).resolve().parent / "jupyter"
TEMPLATE = "aisize"

# What the page may load: only its own origin. 'unsafe-inline' and
# 'unsafe-eval' are needed by voila's bootstrap and the widget manager, blob:
# by anywidget (Altair's JupyterChart imports its bundled vega from a blob URL),
# data: by inline images and fonts. connect-src 'self' covers ws:// to the
# same host and port (CSP level 3).
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval' blob:",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])
HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY,
           "Referrer-Policy": "no-referrer",
           "X-Content-Type-Options": "nosniff"}


def default_notebook() -> Path:
    """The app notebook: the checkout's ``notebooks/app.ipynb``, else the copy
    packaged inside an installed wheel (``aisize/_notebooks/app.ipynb``)."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "notebooks" / "app.ipynb"
    return checkout if checkout.is_file() else package / "_notebooks" / "app.ipynb"


def server_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the voila process: ``base`` (default ``os.environ``)
    with the aisize template root first on ``JUPYTER_PATH``."""
    env = dict(os.environ if base is None else base)
    parts = [str(JUPYTER_DATA_DIR)] + [p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    env["JUPYTER_PATH"] = os.pathsep.join(parts)
    env[chart_bundle.ENV] = chart_bundle.bundle_name()  # kernels import the chart code the server serves
    return env


GUARD = "aisize.app.guard.GuardedKernelManager"
MAX_SESSIONS = 16  # what one server held on 2 cores (docs/team-server.md, benchmarks/bench_load.py)
# hold a pool refill back this long after a page takes the pool's kernel (voila: 1 s), so that the refill
# does not share the cores with the page's own start; bench_app.py times page opens
POOL_REFILL_DELAY_SECONDS = 6.0


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def build_command(notebook: str | os.PathLike | None = None, port: int = 8866, *,
                  host: str = "127.0.0.1", pool_size: int = 1,
                  cull_idle_seconds: int = 600, cull_interval_seconds: int = 60,
                  max_sessions: int = MAX_SESSIONS, connect_timeout_seconds: int = 60,
                  allowed_hosts: tuple[str, ...] = (), base_url: str = "/",
                  refill_delay_seconds: float = POOL_REFILL_DELAY_SECONDS,
                  disconnect_grace_seconds: int = 60,
                  open_browser: bool = False, python: str | None = None) -> list[str]:
    """The voila command line serving ``notebook`` (run it with :func:`server_env`).

    Parameters
    ----------
    notebook : path of the notebook [file]; default :func:`default_notebook`
    port : TCP port [count], 1..65535
    host : address to bind; loopback by default, "0.0.0.0" to serve a network
    pool_size : preheated kernels kept ready [count], >= 0 (0 disables preheating)
    cull_idle_seconds : shut down a kernel idle and unconnected this long [s], >= 1
    cull_interval_seconds : how often to look for idle kernels [s], >= 1
    max_sessions : pages served at once, not counting the pool [count], 1..1024
    connect_timeout_seconds : shut a served kernel down if its page has not connected by then [s], >= 1
    allowed_hosts : host names the server answers to besides IP addresses and localhost (and ``host``
        when it is a name), e.g. the name users type behind a proxy
    base_url : path prefix the app is served under (a JupyterHub user's server: /user/NAME/)
    refill_delay_seconds : start refilling the preheated pool this long after a page takes its kernel [s],
        0..3600; a page admitted meanwhile starts the refill at once (:mod:`aisize.app.guard`)
    disconnect_grace_seconds : shut a served kernel down this long after its page's last websocket closed
        without the page closing (a killed tab) [s], >= 1; a page that reconnects meanwhile keeps it
    open_browser : let voila open a browser tab
    python : interpreter running voila; default the current one
    """
    port = int(checks.integer("port", port, low=1, high=65535))
    pool_size = int(checks.integer("pool_size", pool_size, low=0, high=64))
    cull_idle = int(checks.integer("cull_idle_seconds", cull_idle_seconds, low=1, high=10**7))
    cull_every = int(checks.integer("cull_interval_seconds", cull_interval_seconds, low=1, high=10**7))
    sessions = int(checks.integer("max_sessions", max_sessions, low=1, high=1024))
    connect = int(checks.integer("connect_timeout_seconds", connect_timeout_seconds, low=1, high=10**5))
    refill = float(checks.number("refill_delay_seconds", refill_delay_seconds, low=0.0, high=3600.0))
    grace = int(checks.integer("disconnect_grace_seconds", disconnect_grace_seconds, low=1, high=10**5))
    if not isinstance(host, str) or not host or any(c.isspace() for c in host):
        raise ValueError(f"host={host!r} must be a non-empty address without spaces")
    names = [h.lower() for h in allowed_hosts] + ([] if _is_address(host) or host == "" else [host.lower()])
    bad = [h for h in names if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", h)]
    if bad:
        raise ValueError(f"allowed_hosts={bad!r} is not allowed: host names are letters, digits, dots and dashes")
    if not isinstance(base_url, str) or not re.fullmatch(r"/([\w.~-]+/)*", base_url) \
            or any(part in (".", "..") for part in base_url.split("/")):
        raise ValueError(f"base_url={base_url!r} is not allowed: a path such as /user/alice/")
    notebook = Path(notebook) if notebook is not None else default_notebook()
    if not notebook.is_file():
        raise ValueError(f"notebook={str(notebook)!r} is not a file")
    command = [
        python or sys.executable, "-m", "voila", str(notebook),
        f"--port={port}",
        f"--Voila.ip={host}",
        f"--template={TEMPLATE}",
        "--theme=light",
        f"--preheat_kernel={pool_size > 0}",
        f"--pool_size={pool_size}",
        # refill the pool once the page that took its kernel has drawn, not while it loads: the refill runs
        # the notebook (seconds of CPU), which voila's default 1 s delay puts under the page's own start.
        # The guard holds the refill back, and starts it at once if another page comes (aisize.app.guard)
        "--VoilaKernelManager.fill_delay=0",
        f"--GuardedKernelManager.refill_delay_seconds={refill}",
        "--show_tracebacks=False",
        "--strip_sources=True",
        f"--MappingKernelManager.cull_idle_timeout={cull_idle}",
        f"--MappingKernelManager.cull_interval={cull_every}",
        f"--VoilaConfiguration.multi_kernel_manager_class={GUARD}",
        f"--GuardedKernelManager.max_sessions={sessions}",
        f"--GuardedKernelManager.connect_timeout_seconds={connect}",
        f"--GuardedKernelManager.disconnect_grace_seconds={grace}",
        f"--Voila.base_url={base_url}",
        # serves, built once, <base>/voila/labextensions/aisize-charts/jupyter-chart-....js
        # (aisize.app.chart_bundle)
        f"--VoilaConfiguration.extra_labextensions_path={chart_bundle.bundle_file().parents[1]}",
        # no file from disk under /voila/files/
        "--VoilaConfiguration.file_denylist=.*",
        # read only jupyter/voila.py, which sets Voila.tornado_settings to
        # {"headers": HEADERS}; no voila.py/.json from the working directory or ~/.jupyter
        f"--Voila.config_file_paths={JUPYTER_DATA_DIR}",
    ]
    command += [f"--GuardedKernelManager.allowed_hosts={name}" for name in sorted(set(names))]
    if os.name == "posix":
        # kernels talk to the server over unix sockets in a private folder,
        # not over loopback TCP ports other local users could reach
        command.append("--KernelManager.transport=ipc")
    if not open_browser:
        command.append("--no-browser")
    return command


def url(port: int = 8866, host: str = "127.0.0.1") -> str:
    """The address the app answers on."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/"


def run(port: int = 8866, host: str = "127.0.0.1", notebook: str | None = None,
        open_browser: bool = False, **options) -> int:
    """Print the app's URL and replace this process with the voila server.

    ``options`` go to :func:`build_command`. Returns only if voila cannot be
    started (exit status 1 after printing why).
    """
    command = build_command(notebook, port, host=host, open_browser=open_browser, **options)
    print(f"aisize app: {url(port, host)}  (Ctrl-C stops it)", flush=True)
    warm_validation_in_background()
    try:
        os.execve(command[0], command, server_env())
    except OSError as error:
        print(f"aisize app: cannot start voila: {error}", file=sys.stderr)
    return 1


@dataclass
class Server:
    """A voila server started by :func:`start`; ``stop()`` ends it."""

    url: str
    port: int
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        """What the server has written so far (stdout and stderr)."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start(log_path: str | os.PathLike, notebook: str | os.PathLike | None = None,
          port: int | None = None, *, timeout_seconds: float = 90.0, **options) -> Server:
    """Start the app in the background and wait until it answers.

    For tests and benchmarks; ``options`` go to :func:`build_command`. The
    server's output goes to ``log_path``. Raises ``RuntimeError`` (with the
    log's end) if it exits or does not answer within ``timeout_seconds`` [s].
    """
    port = free_port() if port is None else port
    log_path = Path(log_path)
    command = build_command(notebook, port, **options)
    with open(log_path, "wb") as out:
        process = subprocess.Popen(command, env=server_env(), stdout=out,
                                   stderr=subprocess.STDOUT, cwd=log_path.parent)
    server = Server(url(port, options.get("host", "127.0.0.1")), port, process, log_path)
    deadline = time.monotonic() + timeout_seconds
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(server.url + "voila/static/voila.js", timeout=5) as reply:
                reply.read()
            return server
        except urllib.error.HTTPError:
            return server  # answering, even if with an error status
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"the app did not start; its log ends:\n{server.log()[-3000:]}")
