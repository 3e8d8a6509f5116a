"""The team server's parts on their own (issue 22): rules, limits, hashing, the spawner's memory limit,
activity reports. Fast; the live hub is in test_team_security.py and test_team_hub.py."""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import json
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from aisize.app.team_limits import SlidingWindow, client_address, password_bytes, skeleton, username_problem

needs_hub = pytest.mark.skipif(importlib.util.find_spec("jupyterhub") is None
                               or importlib.util.find_spec("nativeauthenticator") is None,
                               reason="JupyterHub is not installed (pip install -e '.[team]')")


@pytest.mark.parametrize("name, ok", [
    ("alice", True), ("bob.smith", True), ("r2-d2_x", True), ("a" * 32, True), ("0day", True),
    ("a" * 33, False), ("Alice", False), ("carol@example.com", False), ("josé", False), ("a+b", False),
    ("\u0430dmin", False), ("ad\u200bmin", False), ("x\ty", False), ("-x", False), (".x", False), ("", False),
    ("admin", False), ("root", False), ("hub", False),
])
def test_the_name_rule(name, ok):
    assert (username_problem(name) is None) == ok


@pytest.mark.parametrize("name", ["adm1n", "admin.", "admin_", "a-dmin", "admin2", "ADM1N".lower(), "r00t", "r.o.o.t",
                                  "administrat0r", "adminteam"])
def test_names_that_read_like_a_reserved_one_are_reserved(name):  # issue 46.6: all were accepted beside admin
    assert "reserved" in username_problem(name)


def test_a_skeleton_is_how_a_name_reads():
    assert skeleton("a1ice") == skeleton("alice") == skeleton("a.l.i.c.e") == skeleton("al1ce")
    assert skeleton("bob") != skeleton("rob")


PROXIES = frozenset({"127.0.0.1"})


@pytest.mark.parametrize("peer, forwarded, trusted, client", [
    ("127.0.0.1", ["127.0.0.7"], (), "127.0.0.7"),  # the proxy's own entry
    ("127.0.0.1", ["203.0.113.9, 127.0.0.7"], (), "127.0.0.7"),  # what the client wrote is ignored
    ("127.0.0.1", ["203.0.113.9", "127.0.0.7"], (), "127.0.0.7"),  # the header given twice
    ("127.0.0.7", ["203.0.113.9"], (), "127.0.0.7"),  # straight to the hub, not from the proxy: no forwarding
    ("127.0.0.1", [], (), "127.0.0.1"),  # the proxy's own calls, the idle culler
    ("127.0.0.1", ["198.51.100.4, 10.0.0.2"], ("10.0.0.2",), "198.51.100.4"),  # past a trusted TLS proxy
    ("127.0.0.1", ["junk, 10.0.0.2"], ("10.0.0.2",), "10.0.0.2"),  # no address past it: stop at the proxy
    ("127.0.0.1", ["::ffff:127.0.0.7"], (), "127.0.0.7"),
])
def test_a_client_address_comes_from_the_proxy_only(peer, forwarded, trusted, client):
    assert client_address(peer, forwarded, proxies=PROXIES, trusted_hops=frozenset(trusted)) == client


def test_a_reserved_name_is_fine_for_an_admin_named_in_the_configuration():
    assert username_problem("admin", reserved_ok=True) is None
    assert username_problem("Admin", reserved_ok=True) is not None


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_wrong_try_every_two_minutes_blocks_nobody_for_good():
    clock = Clock()
    window = SlidingWindow(5, 120, clock=clock)
    for _ in range(5):
        window.hit("attacker")
        clock.now += 1
    assert window.wait_seconds("attacker") > 0 and window.wait_seconds("someone else") == 0
    clock.now += 120
    for _ in range(10):  # one wrong try every two minutes: never blocked
        assert window.wait_seconds("attacker") == 0
        window.hit("attacker")
        clock.now += 120


def test_passwords_past_72_bytes_hash_whole():
    import bcrypt

    short, long = "kurz-und-gut-1", "x" * 72 + "tail"
    assert password_bytes(short) == short.encode()  # accounts from before keep their hashes
    assert len(password_bytes(long)) == 44 and password_bytes(long) != password_bytes("x" * 72 + "liat")
    hashed = bcrypt.hashpw(password_bytes(long), bcrypt.gensalt(4))
    assert bcrypt.checkpw(password_bytes(long), hashed) and not bcrypt.checkpw(password_bytes("x" * 72), hashed)


@pytest.fixture
def authenticator(tmp_path):
    from jupyterhub import orm

    from aisize.app.team_auth import TeamAuthenticator

    db = orm.new_session_factory("sqlite://")()
    return TeamAuthenticator(_deprecated_db_session=db, admin_users={"alice"},
                             admin_password_file=str(tmp_path / "admin-password"), minimum_password_length=10)


@needs_hub
def test_the_admin_account_comes_from_the_configuration(authenticator, tmp_path):
    name, password = (tmp_path / "admin-password").read_text().splitlines()
    assert name == "alice" and len(password) >= 20 and oct((tmp_path / "admin-password").stat().st_mode)[-3:] == "600"
    account = authenticator.get_user("alice")
    assert account.is_authorized and asyncio.run(authenticator.password_matches(account, password))
    assert authenticator.signup_problem("alice") and authenticator.signup_problem("ALICE")


@needs_hub
def test_bcrypt_runs_off_the_event_loop(authenticator):
    """While a password is hashed, the hub's loop keeps serving (it ticks every 10 ms meanwhile)."""
    async def hash_while_ticking():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        await authenticator.hash_password("a-password-of-ours")
        task.cancel()
        return ticks

    assert asyncio.run(hash_while_ticking()) >= 3


@needs_hub
def test_failed_logins_block_that_client_and_name_only(authenticator, tmp_path):
    password = (tmp_path / "admin-password").read_text().splitlines()[1]

    def handler(address):
        return SimpleNamespace(request=SimpleNamespace(remote_ip=address))

    def log_in(address, secret):
        return asyncio.run(authenticator.authenticate(handler(address), {"username": "alice", "password": secret}))

    for _ in range(5):
        assert log_in("10.0.0.66", "wrong-password") is None
    assert log_in("10.0.0.66", password) is None  # blocked there, even with the right password
    assert log_in("10.0.0.7", password) == "alice"  # the admin elsewhere is not


@needs_hub
def test_the_spawner_limits_each_process_memory(tmp_path, monkeypatch):
    from aisize.app.team_hub import AppSpawner

    monkeypatch.setenv("AISIZE_TEAM_STATE", str(tmp_path))
    spawner = AppSpawner(user=SimpleNamespace(name="alice", admin=False, url="/user/alice/"), mem_limit="600M")
    grab = "import sys\ntry:\n    bytearray(1500 * 2**20)\nexcept MemoryError:\n    sys.exit(3)\n"
    result = subprocess.run([sys.executable, "-c", grab], preexec_fn=spawner.make_preexec_fn("alice"), timeout=60)
    assert result.returncode == 3  # the 1.5 GB grab fails in that process; the machine is untouched
    assert (tmp_path / "users" / "alice").is_dir()


@needs_hub
def test_people_share_the_team_cache_not_one_each(tmp_path, monkeypatch):
    """Each person's server runs with their own HOME; the chart code and validation tables come from the
    team's one cache folder (built before anyone logs in), not from a cache per person."""
    from aisize.app import chart_bundle, team
    from aisize.app.team_hub import AppSpawner

    monkeypatch.delenv("AISIZE_CACHE", raising=False)
    env = team.hub_environment(tmp_path, admin="admin")
    assert env["AISIZE_CACHE"] == str(tmp_path / "cache")
    bundle = team.team_cache(env)
    assert bundle == tmp_path / "cache" / "labextensions" / chart_bundle.bundle_name() and bundle.stat().st_size > 5e5
    monkeypatch.setenv("AISIZE_TEAM_STATE", str(tmp_path))
    monkeypatch.setenv("AISIZE_CACHE", env["AISIZE_CACHE"])
    spawner = AppSpawner(user=SimpleNamespace(name="alice", admin=False, url="/user/alice/"))
    person = spawner.user_env({})
    assert person["HOME"] == str(tmp_path / "users" / "alice") and person["AISIZE_CACHE"] == str(tmp_path / "cache")
    assert chart_bundle.bundle_file(person) == bundle  # their server finds it built


@needs_hub
@pytest.mark.parametrize("setting", ["0", "1", None])
def test_the_admins_plan_ahead_setting_reaches_each_persons_server(tmp_path, monkeypatch, setting):
    """JupyterHub keeps only Spawner.env_keep's names of its own environment; the admin's AISIZE_PLAN_AHEAD
    (aisize.app.ahead: plan a moved slider's next step in the pause) must reach each person's kernels as set."""
    from aisize.app import ahead
    from aisize.app.team_hub import AppSpawner

    monkeypatch.setenv("AISIZE_TEAM_STATE", str(tmp_path))
    if setting is None:
        monkeypatch.delenv(ahead.ENV, raising=False)
    else:
        monkeypatch.setenv(ahead.ENV, setting)
    person = AppSpawner(user=SimpleNamespace(name="alice", admin=False, url="/user/alice/")).user_env({})
    assert person.get(ahead.ENV) == setting


@needs_hub
def test_the_spawner_refuses_a_name_outside_the_rule_at_once(tmp_path, monkeypatch):
    from tornado import web

    from jupyterhub.spawner import LocalProcessSpawner

    from aisize.app.team_hub import AppSpawner

    started = []

    async def start(self):  # the process start, after which the hub waits two minutes for a server that never answers
        started.append(self.user.name)

    monkeypatch.setattr(LocalProcessSpawner, "start", start)
    monkeypatch.setenv("AISIZE_TEAM_STATE", str(tmp_path))
    spawner = AppSpawner(user=SimpleNamespace(name="carol@example.com", admin=False, url="/user/carol@example.com/"))
    with pytest.raises(web.HTTPError, match="ask the admin"):
        asyncio.run(spawner.start())
    assert started == []  # refused before any process starts
    asyncio.run(AppSpawner(user=SimpleNamespace(name="carol", admin=False, url="/user/carol/")).start())
    assert started == ["carol"]  # a name within the rule goes on to start


@needs_hub
def test_activity_is_reported_only_when_a_kernel_did_something(monkeypatch):
    """The user's server posts its kernels' last activity to the hub; an open, untouched tab posts nothing."""
    from tornado import httpserver, web

    from aisize.app.team_hub import ActivityKernelManager

    posted = []

    class Activity(web.RequestHandler):
        def post(self):
            posted.append((self.request.headers["Authorization"], json.loads(self.request.body)))

    async def scenario():
        server = httpserver.HTTPServer(web.Application([(r"/hub/api/users/alice/activity", Activity)]))
        sockets = __import__("tornado.netutil", fromlist=["bind_sockets"]).bind_sockets(0, "127.0.0.1")
        server.add_sockets(sockets)
        monkeypatch.setenv("JUPYTERHUB_ACTIVITY_URL",
                           f"http://127.0.0.1:{sockets[0].getsockname()[1]}/hub/api/users/alice/activity")
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "server-token")
        manager = ActivityKernelManager()
        sent = [await manager.report_activity()]  # the server started: that is activity
        sent.append(await manager.report_activity())  # nothing since: nothing sent
        manager.last_kernel_activity += datetime.timedelta(seconds=5)  # a widget message ran in a kernel
        sent.append(await manager.report_activity())
        server.stop()
        return sent, manager.last_kernel_activity

    sent, last = asyncio.run(scenario())
    assert sent == [True, False, True] and len(posted) == 2
    token, body = posted[-1]
    assert token == "token server-token"
    assert body["servers"][""]["last_activity"] == last.isoformat().replace("+00:00", "Z")


@needs_hub
def test_the_proxy_reports_no_activity_to_the_hub(monkeypatch):
    from jupyterhub.proxy import ConfigurableHTTPProxy

    from aisize.app.team_hub import ActivityBlindProxy

    async def routes(self, client=None):
        return {"/user/alice/": {"data": {"user": "alice", "server_name": "", "last_activity": "2030-01-01T00:00Z"}},
                "/": {"data": {"hub": True, "last_activity": "2030-01-01T00:00Z"}}}

    monkeypatch.setattr(ConfigurableHTTPProxy, "get_all_routes", routes)
    got = asyncio.run(ActivityBlindProxy.__new__(ActivityBlindProxy).get_all_routes())
    assert "last_activity" not in got["/user/alice/"]["data"] and got["/"]["data"]["last_activity"]


def test_a_users_server_runs_the_reporting_kernel_manager_once():
    from aisize.app import team

    env = {"JUPYTERHUB_SERVICE_URL": "http://127.0.0.1:9999/user/alice/", "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/",
           "JUPYTERHUB_API_TOKEN": "t"}
    command = team.user_server_command(["--activity-interval=5"], env)
    managers = [a for a in command if a.startswith("--VoilaConfiguration.multi_kernel_manager_class=")]
    assert managers == [f"--VoilaConfiguration.multi_kernel_manager_class={team.HUB_KERNELS}"]
    assert "--ActivityKernelManager.activity_interval_seconds=5.0" in command
    # a reload soon after an open must not wait for a refill held back for the page's start
    assert "--GuardedKernelManager.refill_delay_seconds=1.0" in command


def test_one_persons_processes_together_are_held_to_their_limit():
    """Issue 46.6: RLIMIT_DATA holds each process; the watch holds all of a person's processes together. A stand-in
    for a user's server starts a child that grows past the person's limit; the watch ends that child."""
    import psutil

    from aisize.app import memory_watch

    hog = ("import time; x = bytearray(400 * 2**20); x[::4096] = b'1' * len(x[::4096]); time.sleep(60)")
    server = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; "
                               f"subprocess.Popen([sys.executable, '-c', {hog!r}]); time.sleep(60)"])
    try:
        watch = memory_watch.MemoryWatch(psutil.Process(server.pid).memory_info().rss + 200 * 2**20, pid=server.pid)
        deadline = time.monotonic() + 30
        ended = None
        while ended is None and time.monotonic() < deadline:
            ended = watch.check()
            time.sleep(0.2)
        assert ended is not None and ended.pid != server.pid and ended.rss_bytes > 100 * 2**20
        assert psutil.Process(server.pid).is_running() and not psutil.pid_exists(ended.pid) or \
            psutil.Process(ended.pid).status() == psutil.STATUS_ZOMBIE
    finally:
        for child in psutil.Process(server.pid).children(recursive=True):
            child.kill()
        server.kill()
        server.wait()


def test_the_watch_ends_the_largest_process_and_never_the_server():
    from aisize.app.memory_watch import Process, over_limit

    server, small, big = Process(1, 300, "voila"), Process(2, 200, "python"), Process(3, 600, "chromium")
    assert over_limit(server, [small, big], 2000) is None
    assert over_limit(server, [small, big], 1000) == big
    assert over_limit(Process(1, 5000, "voila"), [], 1000) is None  # nothing under it to end


def test_the_team_help_says_the_admin_is_named_not_signed_up():
    from aisize.cli import build_parser

    team_parser = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "team")[1]
    text = " ".join(team_parser.format_help().split())
    assert "sign up with it first" not in text  # what --help said until issue 46
    assert "never sign up with it" in text and "--trusted-proxy" in text
