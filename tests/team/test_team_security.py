"""The team server's login, sign-up and approvals under attack (issue 22), without a browser.

The shipped deploy/jupyterhub_config.py runs on loopback; visitors are plain HTTP clients, each
from its own loopback address (127.0.0.2, 127.0.0.3, ...: the hub sees them apart, as it would see
people on a network). No user's server is started here; tests/team/test_team_hub.py drives the
same hub in a browser. The tests run in file order: the first signs up under the admin's name
before the admin has ever logged in.
"""

from __future__ import annotations

import html
import importlib.util
import re
import sqlite3
from html.parser import HTMLParser

import pytest

from aisize.app import team

pytestmark = [pytest.mark.slow]

HOSTILE = "x\tstyle=animation-name:spinner-border\tonanimationstart=alert(document.domain)"
PASSWORD = "correct-horse-battery-9"
ADMIN = "alice"


def _needs() -> str | None:
    for module in ("jupyterhub", "nativeauthenticator", "requests"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[team]')"
    if team.find_proxy() is None:
        return "configurable-http-proxy is not installed (npm install configurable-http-proxy; make team)"
    return None


pytestmark.append(pytest.mark.skipif(_needs() is not None, reason=str(_needs())))


class Visitor:
    """A browser-less visitor of the hub from one loopback address, with its own cookies."""

    def __init__(self, url: str, address: str):
        import requests
        from requests.adapters import HTTPAdapter

        class FromAddress(HTTPAdapter):
            def init_poolmanager(self, *args, **kwargs):
                super().init_poolmanager(*args, source_address=(address, 0), **kwargs)

        self.url, self.session = url, requests.Session()
        self.session.mount("http://", FromAddress())

    def get(self, path: str, **kwargs):
        return self.session.get(self.url + path, timeout=60, **kwargs)

    def post(self, path: str, data: dict, *, xsrf_from: str | None = None, **kwargs):
        if xsrf_from is not None:
            data = dict(data, _xsrf=self.xsrf(xsrf_from))
        return self.session.post(self.url + path, data=data, timeout=60, **kwargs)

    def xsrf(self, path: str) -> str:
        page = self.get(path).text
        return html.unescape(re.search(r'name="_xsrf" value="([^"]*)"', page)[1])

    def sign_up(self, name: str, password: str = PASSWORD):
        return self.post("hub/signup", {"username": name, "signup_password": password,
                                        "signup_password_confirmation": password}, xsrf_from="hub/signup")

    def log_in(self, name: str, password: str = PASSWORD):
        return self.post("hub/login", {"username": name, "password": password}, xsrf_from="hub/login",
                         allow_redirects=False)

    def logged_in(self) -> bool:
        return self.get("hub/home", allow_redirects=False).status_code == 200


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    state = tmp_path_factory.mktemp("team-security")
    started = team.start_hub(state / "state", state / "hub.log", admin=ADMIN)
    started.visitors = iter(f"127.0.0.{n}" for n in range(2, 250))
    yield started
    started.stop()


def visitor(hub) -> Visitor:
    return Visitor(hub.url, next(hub.visitors))


def admin_password(hub) -> str:
    path = hub.log_path.parent / "state" / team.ADMIN_PASSWORD_FILE if hasattr(team, "ADMIN_PASSWORD_FILE") else None
    if path is not None and path.exists():
        return path.read_text().splitlines()[1]
    visitor(hub).sign_up(ADMIN)  # a hub from before issue 22: its admin signed up first
    return PASSWORD


def accounts(hub) -> dict[str, bool]:
    """name -> approved, from the hub's database."""
    with sqlite3.connect(hub.log_path.parent / "state" / "jupyterhub.sqlite") as db:
        return {name: bool(ok) for name, ok in db.execute("SELECT username, is_authorized FROM users_info")}


def admin_session(hub) -> Visitor:
    admin = visitor(hub)
    assert admin.log_in(ADMIN, admin_password(hub)).status_code == 302
    return admin


def account_id(hub, name: str) -> int:
    with sqlite3.connect(hub.log_path.parent / "state" / "jupyterhub.sqlite") as db:
        return db.execute("SELECT id FROM users_info WHERE username = ?", (name,)).fetchone()[0]


def decide(admin: Visitor, hub, name: str, action: str):
    if 'name="_xsrf"' not in admin.get("hub/authorize").text:  # a hub from before issue 22: GET links
        return admin.get(f"hub/{'discard' if action == 'discard' else 'authorize'}/{name}")
    return admin.post("hub/authorize", {"action": action, "id": account_id(hub, name)}, xsrf_from="hub/authorize")


class Attributes(HTMLParser):
    def __init__(self):
        super().__init__()
        self.names: set[str] = set()
        self.styles: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.names |= {name for name, _ in attrs}
        self.styles += [value or "" for name, value in attrs if name == "style"]

    def handle_data(self, data):
        self.text.append(data)


def test_signing_up_under_the_admins_name_is_refused(hub):
    attacker = visitor(hub)
    for name in (ADMIN.upper(), ADMIN, " alice", "Alice"):
        attacker.sign_up(name, "attackers-password-1")
    assert attacker.log_in(ADMIN, "attackers-password-1").status_code != 302
    admin = admin_session(hub)  # the real admin gets in, and is the admin
    assert admin.get("hub/authorize").status_code == 200
    assert admin.get("hub/admin").status_code == 200


def test_a_hostile_name_is_refused_at_sign_up(hub):
    reply = visitor(hub).sign_up(HOSTILE)
    assert HOSTILE not in accounts(hub) and "lower-case letters" in reply.text


def test_the_approval_page_escapes_a_hostile_name(hub):
    # an account with such a name from before the name rule: the approval page must not run it
    with sqlite3.connect(hub.log_path.parent / "state" / "jupyterhub.sqlite") as db:
        db.execute("INSERT INTO users_info (username, password, is_authorized, login_email_sent, has_2fa, "
                   "otp_secret) VALUES (?, ?, 0, 0, 0, 'AAAAAAAAAAAAAAAA')", (HOSTILE + "2", b"$2b$12$" + b"x" * 53))
    page = admin_session(hub).get("hub/authorize").text
    parsed = Attributes()
    parsed.feed(page)
    assert "onanimationstart" not in parsed.names and not any("animation" in s for s in parsed.styles)
    assert any(HOSTILE[:40] in text for text in parsed.text)  # shown, as text (long names cut)


def test_approvals_need_a_post_with_the_hubs_xsrf_token(hub):
    assert visitor(hub).sign_up("bob").status_code == 200 and accounts(hub)["bob"] is False
    admin = admin_session(hub)
    admin.get("hub/authorize/bob")  # what a link on another site did
    admin.get("hub/discard/bob")
    assert accounts(hub)["bob"] is False
    forged = admin.post("hub/authorize", {"action": "approve", "id": account_id(hub, "bob"), "_xsrf": "forged"})
    assert forged.status_code == 403 and accounts(hub)["bob"] is False
    assert decide(admin, hub, "bob", "approve").status_code == 200 and accounts(hub)["bob"] is True
    assert decide(admin, hub, ADMIN, "revoke").status_code == 400 and accounts(hub)[ADMIN] is True


@pytest.mark.parametrize("name", ["carol@example.com", "josé", "a+b", "\u0430dmin", "ad\u200bmin", "Carol",
                                  "x" * 33, "y" * 5_000_000, "-dash", "../x", "a b"])
def test_names_outside_the_rule_are_refused(hub, name):
    reply = visitor(hub).sign_up(name)
    assert reply.status_code in (400, 413) and name not in accounts(hub)
    assert "lower" in reply.text or reply.status_code == 413


def test_sign_ups_are_limited_per_client(hub):
    busy, other = visitor(hub), visitor(hub)
    replies = [busy.sign_up(f"flood{i:03d}") for i in range(8)]
    assert [r.status_code for r in replies].count(429) == 3
    assert sum(name.startswith("flood") for name in accounts(hub)) == 5
    assert other.sign_up("carol").status_code == 200 and "carol" in accounts(hub)


def test_wrong_passwords_block_only_the_client_that_sent_them(hub):
    attacker = visitor(hub)
    for _ in range(6):
        assert attacker.log_in(ADMIN, "wrong-password-123").status_code != 302
    refused = attacker.log_in(ADMIN, admin_password(hub))  # even the right password, from there
    assert refused.status_code == 429 and "try again" in refused.text
    admin = visitor(hub)  # the admin, elsewhere, is not locked out
    assert admin.log_in(ADMIN, admin_password(hub)).status_code == 302 and admin.logged_in()


def test_a_pending_account_is_not_told_its_password_is_right(hub):
    visitor(hub).sign_up("dave")
    right, wrong = visitor(hub).log_in("dave"), visitor(hub).log_in("dave", "not-daves-password")
    assert right.status_code == wrong.status_code != 302
    said = [re.search(r'class="login_error">(.*?)</p>', r.text, re.S)[1].strip() for r in (right, wrong)]
    assert said[0] == said[1], said


def test_a_long_password_signs_up_and_logs_in(hub):
    long_password = "pässwörd-" * 12  # 132 bytes: past bcrypt's 72
    assert visitor(hub).sign_up("erin", long_password).status_code == 200
    decide(admin_session(hub), hub, "erin", "approve")
    erin = visitor(hub)
    assert erin.log_in("erin", long_password).status_code == 302
    assert visitor(hub).log_in("erin", long_password[:72]).status_code != 302  # all of it counts


def test_revoking_an_account_ends_its_sessions(hub):
    visitor(hub).sign_up("frank")
    admin = admin_session(hub)
    decide(admin, hub, "frank", "approve")
    frank = visitor(hub)
    assert frank.log_in("frank").status_code == 302 and frank.logged_in()
    decide(admin, hub, "frank", "revoke")
    assert not frank.logged_in()
    assert frank.log_in("frank").status_code != 302



def test_an_old_account_with_a_huge_name_is_shown_short_and_can_be_discarded(hub):
    huge = "z" * 1_000_000  # signed up before the name rule (5 MB names were accepted)
    with sqlite3.connect(hub.log_path.parent / "state" / "jupyterhub.sqlite") as db:
        db.execute("INSERT INTO users_info (username, password, is_authorized, login_email_sent, has_2fa, "
                   "otp_secret) VALUES (?, ?, 0, 0, 0, 'AAAAAAAAAAAAAAAA')", (huge, b"$2b$12$" + b"x" * 53))
    admin = admin_session(hub)
    assert len(admin.get("hub/authorize").content) < 200_000
    decide(admin, hub, huge, "discard")
    assert huge not in accounts(hub)


def test_the_admin_changes_the_first_password(hub):
    admin = admin_session(hub)
    new = "a-new-admin-password-" + "ü" * 40  # past bcrypt's 72 bytes too
    reply = admin.post("hub/change-password", {"old_password": admin_password(hub), "new_password": new,
                                               "new_password_confirmation": new}, xsrf_from="hub/change-password")
    assert reply.status_code == 200 and "changed successfully" in reply.text
    assert visitor(hub).log_in(ADMIN, new).status_code == 302
    assert visitor(hub).log_in(ADMIN, admin_password(hub)).status_code != 302


# Issue 46: an outsider forging client addresses, look-alike names, and what a login's time tells.

def forged(n: int) -> dict:
    """Headers naming a made-up client address (TEST-NET-3), a fresh one for each n."""
    address = f"203.0.113.{n % 250 + 1}"
    return {"X-Real-Ip": address, "X-Forwarded-For": address}


MEMBER = "ivan"  # an approved account (the admin's first password was changed above)


def member(hub) -> str:
    if not accounts(hub).get(MEMBER):
        visitor(hub).sign_up(MEMBER)
        decide(admin_session_by_member_test(hub), hub, MEMBER, "approve")
    return MEMBER


def admin_session_by_member_test(hub) -> Visitor:
    admin = visitor(hub)
    new = "a-new-admin-password-" + "ü" * 40  # what test_the_admin_changes_the_first_password set
    if admin.log_in(ADMIN, new).status_code != 302:
        assert admin.log_in(ADMIN, admin_password(hub)).status_code == 302
    return admin


def forged_post(person: Visitor, path: str, data: dict, headers: dict, **kwargs):
    """A POST with its XSRF token fetched under the same forged headers (the hub binds the token to the
    address it believes), as an attacker does."""
    page = person.get(path, headers=headers).text
    token = html.unescape(re.search(r'name="_xsrf" value="([^"]*)"', page)[1])
    return person.post(path, dict(data, _xsrf=token), headers=headers, **kwargs)


def test_forged_addresses_do_not_escape_the_failed_login_limit(hub):
    name = member(hub)
    attacker = visitor(hub)
    codes = [forged_post(attacker, "hub/login", {"username": name, "password": f"wrong-{n}"}, forged(n),
                         allow_redirects=False).status_code for n in range(12)]
    assert codes.count(429) >= 6, codes  # the sixth try on is refused, whatever address it claims
    right = forged_post(attacker, "hub/login", {"username": name, "password": PASSWORD}, forged(99),
                        allow_redirects=False)
    assert right.status_code == 429  # was 302: 40 wrong passwords then the right one logged in
    log = hub.log()
    assert "203.0.113." not in log, "the hub's log records an address the client made up"


def test_forged_addresses_cannot_lock_out_another_client(hub):
    name = member(hub)
    attacker = visitor(hub)
    for n in range(35):
        forged_post(attacker, "hub/login", {"username": name, "password": f"wrong-{n}"},
                    {"X-Real-Ip": "127.0.0.1", "X-Forwarded-For": "127.0.0.1"}, allow_redirects=False)
    person = Visitor(hub.url, "127.0.0.1")  # the address the attacker claimed
    assert person.log_in(name).status_code == 302  # was 429 for 581 s


def test_forged_addresses_do_not_escape_the_sign_up_limit(hub):
    flooder = visitor(hub)
    codes = [forged_post(flooder, "hub/signup", {"username": f"forge{n:03d}", "signup_password": PASSWORD,
                                                 "signup_password_confirmation": PASSWORD},
                         forged(n)).status_code for n in range(9)]
    assert codes.count(429) == 4, codes  # five per address: the made-up addresses did not count as others
    assert sum(name.startswith("forge") for name in accounts(hub)) == 5


@pytest.mark.parametrize("name", ["adm1n", "admin.", "admin_", "a1ice", "a.lice", "al1ce"])
def test_names_that_read_like_the_admin_are_refused(hub, name):
    reply = visitor(hub).sign_up(name)
    assert reply.status_code == 400 and name not in accounts(hub), name
    assert "reserved" in reply.text or "reads like" in reply.text


def test_a_login_takes_as_long_whether_or_not_the_account_exists(hub):
    import statistics
    import time as clock

    def seconds(name: str) -> float:
        person = visitor(hub)  # a fresh address each time: no limit answers early
        xsrf = person.xsrf("hub/login")
        t0 = clock.perf_counter()
        person.post("hub/login", {"username": name, "password": "a-wrong-password-1", "_xsrf": xsrf},
                    allow_redirects=False)
        return clock.perf_counter() - t0

    # in turns, so that a busy spell of the machine (other test workers) slows both kinds alike
    pairs = [(seconds(member(hub)), seconds(f"nosuch{n}")) for n in range(7)]
    known, unknown = (statistics.median(kind) for kind in zip(*pairs))
    # bcrypt takes about 250 ms, the rest a few ms: without bcrypt for unknown names the ratio was ~0.04
    assert unknown > 0.5 * known, (known, unknown)
