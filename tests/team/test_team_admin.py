"""The admin is named by configuration only (issue 46.3), on a real hub on loopback.

A pending sign-up ``mallory`` (its password chosen by whoever signed up) is then named ``--admin``:
``aisize team`` refuses to start, and so does the hub itself if started with that name another way;
the admin the hub created keeps starting it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aisize.app import serve, team

from test_team_security import PASSWORD, Visitor, _needs, accounts

pytestmark = [pytest.mark.slow, pytest.mark.skipif(_needs() is not None, reason=str(_needs()))]


@pytest.fixture(scope="module")
def state_with_a_pending_sign_up(tmp_path_factory):
    root = tmp_path_factory.mktemp("team-admin")
    hub = team.start_hub(root / "state", root / "first.log", admin="alice")
    try:
        person = Visitor(hub.url, "127.0.0.2")
        assert person.sign_up("mallory").status_code == 200
        assert accounts(hub) == {"alice": True, "mallory": False}
    finally:
        hub.stop()
    return root


def test_aisize_team_refuses_a_sign_up_as_admin(state_with_a_pending_sign_up):
    root = state_with_a_pending_sign_up
    run = subprocess.run([str(Path(sys.executable).with_name("aisize")), "team", "--state", str(root / "state"), "--admin", "mallory",
                          "--port", str(serve.free_port())], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--admin 'mallory' refused" in run.stderr and "never becomes the admin" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_hub_itself_refuses_a_sign_up_as_admin(state_with_a_pending_sign_up):
    root = state_with_a_pending_sign_up
    with pytest.raises(RuntimeError, match="never becomes the admin"):
        team.start_hub(root / "state", root / "mallory.log", admin="mallory", timeout_seconds=60)
    hub = team.start_hub(root / "state", root / "again.log", admin="alice")  # the real admin still starts it
    try:
        assert Visitor(hub.url, "127.0.0.3").log_in("mallory", PASSWORD).status_code != 302  # still pending
    finally:
        hub.stop()
