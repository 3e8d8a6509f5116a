"""The team server: JupyterHub logs people in and gives each their own aisize app server.

``aisize team`` (``make team``) runs JupyterHub with ``deploy/jupyterhub_config.py``:
a login page (NativeAuthenticator: people sign up, an admin approves them), then each
user's own server behind configurable-http-proxy, culled when idle. Each user's
server is :func:`aisize.app.serve.build_command`'s locked-down Voila (no Jupyter
server, no code execution from the browser, no file access), mounted at
``/user/NAME/`` and guarded by the hub's OAuth: only its owner (or an admin) gets in.

``aisize.app.team_hub.AppSpawner`` starts it as the hub's own system user (no system accounts are
needed: people are users of the hub, not of the machine), in a folder of its own;
``python -m aisize.app.team`` is the command it runs, reading where to listen from
the environment JupyterHub sets (``JUPYTERHUB_SERVICE_URL``, ``JUPYTERHUB_SERVICE_PREFIX``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from aisize import cache
from aisize.app import chart_bundle, serve

HUB_IDENTITY = "aisize.app.team_hub.HubIdentityProvider"
HUB_AUTHORIZER = "jupyterhub.singleuser.extension.JupyterHubAuthorizer"
HUB_KERNELS = "aisize.app.team_hub.ActivityKernelManager"  # reports kernel activity to the idle culler
ADMIN_PASSWORD_FILE = "admin-password"  # in the state folder: the admin account's first password
PROXY = "configurable-http-proxy"
USER_POOL_SIZE = 1  # one preheated kernel per user: a reload opens in seconds, for ~230 MiB more per person
USER_MAX_SESSIONS = 4  # tabs one user may have open at once
# voila's own refill delay: a user's first open is followed by reloads (bench_team.py), which wait for the refill
# the app server holds back for 6 s (a reload 5.0 to 5.2 s against 3.7 to 4.1 s, 2026-11-27)
USER_REFILL_DELAY_SECONDS = 1.0


def package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def hub_config_path() -> Path:
    """``deploy/jupyterhub_config.py`` of the checkout, else the copy packaged in the wheel."""
    checkout = package_root().parent / "deploy" / "jupyterhub_config.py"
    return checkout if checkout.is_file() else package_root() / "_deploy" / "jupyterhub_config.py"


def find_proxy() -> str | None:
    """configurable-http-proxy: ``$AISIZE_PROXY``, the copy ``make team`` installs in the venv, or PATH."""
    candidates = [os.environ.get("AISIZE_PROXY"),
                  str(Path(sys.prefix) / "node" / "node_modules" / ".bin" / PROXY), shutil.which(PROXY)]
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def user_server_command(argv: list[str], env: dict[str, str]) -> list[str]:
    """The voila command of one user's server, from the spawner's arguments and JupyterHub's environment."""
    parser = argparse.ArgumentParser(prog="python -m aisize.app.team")
    parser.add_argument("--pool-size", type=int, default=USER_POOL_SIZE)
    parser.add_argument("--max-sessions", type=int, default=USER_MAX_SESSIONS)
    parser.add_argument("--allow-host", action="append", default=[])
    parser.add_argument("--activity-interval", type=float, default=60.0, help="seconds between activity reports")
    args = parser.parse_args(argv)
    missing = [k for k in ("JUPYTERHUB_SERVICE_URL", "JUPYTERHUB_SERVICE_PREFIX", "JUPYTERHUB_API_TOKEN")
               if not env.get(k)]
    if missing:
        raise ValueError(f"{', '.join(missing)} not set: this command is started by JupyterHub's spawner")
    where = urlsplit(env["JUPYTERHUB_SERVICE_URL"])
    command = serve.build_command(port=where.port, host=where.hostname or "127.0.0.1",
                                  base_url=env["JUPYTERHUB_SERVICE_PREFIX"], pool_size=args.pool_size,
                                  max_sessions=args.max_sessions, allowed_hosts=tuple(args.allow_host),
                                  refill_delay_seconds=USER_REFILL_DELAY_SECONDS)
    kernels = f"--VoilaConfiguration.multi_kernel_manager_class={HUB_KERNELS}"  # the guarded one, reporting
    command = [kernels if a.startswith(kernels.split("=")[0] + "=") else a for a in command]
    return command + [f"--Voila.identity_provider_class={HUB_IDENTITY}",
                      f"--Voila.authorizer_class={HUB_AUTHORIZER}",
                      f"--ActivityKernelManager.activity_interval_seconds={args.activity_interval}"]


def main(argv: list[str] | None = None) -> int:
    """Replace this process with the user's voila server (what :class:`AppSpawner` runs)."""
    try:
        command = user_server_command(sys.argv[1:] if argv is None else argv, dict(os.environ))
    except ValueError as error:
        print(f"aisize team server: {error}", file=sys.stderr)
        return 2
    os.execve(command[0], command, serve.server_env())
    return 1  # not reached


def hub_environment(state_dir: Path, *, admin: str, allowed_hosts: tuple[str, ...] = (),
                    trusted_proxies: tuple[str, ...] = ()) -> dict[str, str]:
    """What ``deploy/jupyterhub_config.py`` reads: the state folder, the admin, the proxy, host names."""
    env = serve.server_env()
    env.setdefault(cache.ENV, str(Path(state_dir) / "cache"))  # one cache for the team (team_cache)
    env.update(AISIZE_TEAM_STATE=str(state_dir), AISIZE_TEAM_ADMIN=admin,
               AISIZE_TEAM_HOSTS=",".join(allowed_hosts), AISIZE_TEAM_PYTHON=sys.executable,
               AISIZE_TEAM_TRUSTED_PROXIES=",".join(trusted_proxies))
    proxy = find_proxy()
    if proxy:
        env["AISIZE_PROXY"] = proxy
    return env


def admin_conflict(state_dir: Path, admin: str) -> str | None:
    """Why the hub in ``state_dir`` must not start with ``admin`` as its admin, or None.

    ``admin`` may name an account the hub created as admin, or no account yet; an account that signed up
    and was never the admin (pending or approved) would get the admin role with the password its author
    chose. The hub's authenticator refuses it too; this says so before the hub starts.
    """
    from aisize.app.team_limits import admin_conflict_message

    database = Path(state_dir) / "jupyterhub.sqlite"
    if not database.is_file():
        return None
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        try:
            signed_up = db.execute("SELECT 1 FROM users_info WHERE username = ?", (admin,)).fetchone()
            was_admin = db.execute("SELECT admin FROM users WHERE name = ?", (admin,)).fetchone()
        except sqlite3.Error:  # a hub that never finished its first start: no accounts yet
            return None
    if signed_up and not (was_admin and was_admin[0]):
        return admin_conflict_message(admin)
    return None


def team_cache(env: dict[str, str]) -> Path:
    """Build the chart code in the team's cache folder (``env``'s ``AISIZE_CACHE``) before anyone logs in.

    Each person's server runs with their own HOME; with a cache of their own, each built the 0.9 MB chart
    bundle (about 2 s) at their first open, and computed the validation tables again. The team shares one
    cache instead: what is in it is a function of aisize's version (the bundle) or keyed by a hash of
    everything it is computed from (the tables), and people's servers run no code sent from a browser."""
    return chart_bundle.bundle_file(env)


def hub_command(*, ip: str, port: int, config: Path | None = None) -> list[str]:
    """JupyterHub on ``ip:port``; its own API and the proxy's API on free loopback ports."""
    return [sys.executable, "-m", "jupyterhub", "-f", str(config or hub_config_path()),
            f"--JupyterHub.bind_url=http://{ip}:{port}/",
            f"--JupyterHub.hub_bind_url=http://127.0.0.1:{serve.free_port()}",
            f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{serve.free_port()}"]


def run(*, ip: str = "127.0.0.1", port: int = 8000, state_dir: str = "aisize-team", admin: str = "admin",
        allowed_hosts: tuple[str, ...] = (), trusted_proxies: tuple[str, ...] = ()) -> int:
    """``aisize team``: check what the hub needs, print the URL, and replace this process with JupyterHub."""
    try:
        import jupyterhub  # noqa: F401
        import nativeauthenticator  # noqa: F401
    except ImportError:
        print("aisize team: needs JupyterHub: pip install 'aisize[team]' (make team does it)", file=sys.stderr)
        return 1
    from aisize.app.team_limits import username_problem

    problem = username_problem(admin, reserved_ok=True)
    if problem:
        print(f"aisize team: --admin {admin!r} is not allowed: {problem}", file=sys.stderr)
        return 2
    if find_proxy() is None:
        print(f"aisize team: needs {PROXY} from npm: npm install --prefix {Path(sys.prefix) / 'node'} "
              f"{PROXY} (make team does it), or set AISIZE_PROXY", file=sys.stderr)
        return 1
    bad_proxies = [a for a in trusted_proxies if _address(a) is None]
    if bad_proxies:
        print(f"aisize team: --trusted-proxy {bad_proxies[0]!r} is not an IP address", file=sys.stderr)
        return 2
    state = Path(state_dir).resolve()
    conflict = admin_conflict(state, admin)
    if conflict:
        print(f"aisize team: --admin {admin!r} refused: {conflict}", file=sys.stderr)
        return 2
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)  # the hub's database, cookie secret and users' folders
    shown = "127.0.0.1" if ip in ("0.0.0.0", "") else ip
    print(f"aisize team: http://{shown}:{port}/  (admin user '{admin}': its first password is in "
          f"{state / ADMIN_PASSWORD_FILE}; state in {state}; Ctrl-C stops it)", flush=True)
    command = hub_command(ip=ip, port=port)
    env = hub_environment(state, admin=admin, allowed_hosts=allowed_hosts, trusted_proxies=trusted_proxies)
    team_cache(env)
    cache.warm_validation_in_background(env)
    os.chdir(state)
    os.execve(command[0], command, env)
    return 1  # not reached


def _address(text: str) -> str | None:
    import ipaddress

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


@dataclass
class Hub:
    """A hub started by :func:`start_hub`; ``stop()`` ends it and everything it started."""

    url: str
    process: subprocess.Popen
    log_path: Path
    state_dir: Path
    seen: set = field(default_factory=set)  # pids of every process seen under the hub

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def admin_password(self) -> str:
        """The admin account's first password, which the hub wrote when it created the account."""
        return (self.state_dir / ADMIN_PASSWORD_FILE).read_text(encoding="utf-8").splitlines()[1]

    def processes(self) -> list:
        """The hub's descendants now (proxy, idle culler, users' servers, their kernels); remembered."""
        import psutil

        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        self.seen |= {(c.pid, c.create_time()) for c in children}
        return children

    def stop(self, timeout_seconds: float = 60.0) -> list[str]:
        """Stop the hub (it stops its proxy, services and users' servers); returns what had to be killed."""
        import psutil

        self.processes()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_seconds)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        deadline = time.monotonic() + 15
        left = []
        for pid, created in sorted(self.seen):
            try:
                proc = psutil.Process(pid)
                if proc.create_time() != created:
                    continue  # the pid was reused by a process the hub did not start
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except psutil.NoSuchProcess:
                continue
            except psutil.TimeoutExpired:
                left.append(" ".join(proc.cmdline())[:120])
                proc.kill()
        return left


def start_hub(state_dir: Path, log_path: Path, *, port: int | None = None, admin: str = "admin",
              config: Path | None = None, timeout_seconds: float = 90.0) -> Hub:
    """Start the team hub on loopback in the background and wait until its login page answers.

    For tests and benchmarks. Raises ``RuntimeError`` with the log's end if it does not come up.
    """
    port = port or serve.free_port()
    state_dir.mkdir(parents=True, exist_ok=True)
    env = hub_environment(state_dir, admin=admin)
    team_cache(env)
    with open(log_path, "wb") as out:
        process = subprocess.Popen(hub_command(ip="127.0.0.1", port=port, config=config),
                                   env=env, cwd=state_dir, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}/", process, log_path, state_dir)
    deadline = time.monotonic() + timeout_seconds
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(hub.url + "hub/login", timeout=5) as reply:
                reply.read()
            hub.processes()
            return hub
        except (OSError, urllib.error.HTTPError):
            time.sleep(0.5)
    hub.stop()
    raise RuntimeError(f"the hub did not start; its log ends:\n{hub.log()[-3000:]}")


if __name__ == "__main__":
    sys.exit(main())
