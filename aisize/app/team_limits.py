"""The team server's rules for names, passwords and how often people may try (no JupyterHub import).

- :func:`username_problem`: a name is 1 to 32 characters of lower-case ASCII letters, digits, ``.``,
  ``_`` and ``-``, starting with a letter or digit. That is also a URL path segment as it stands
  (``/user/NAME/``; a name the user's server would refuse made the hub wait two minutes), and it
  leaves no room for look-alikes (a Cyrillic ``а``, a zero-width space, a TAB that ends an HTML
  attribute). Names of the hub's own pages and of system accounts are reserved.
- :func:`password_bytes`: what bcrypt hashes. bcrypt reads at most 72 bytes (bcrypt 5 refuses more:
  HTTP 500 at sign-up), so a longer password is first reduced to its SHA-256 digest (base64, 44
  bytes), as Django's ``BCryptSHA256PasswordHasher`` does; passwords up to 72 bytes hash as before,
  so existing accounts keep working.
- :func:`skeleton`: a name as it reads (``adm1n``, ``admin.``, ``a_dmin`` all read ``admin``); a sign-up whose
  skeleton is a reserved name's or an existing account's is refused, so nobody passes for the admin.
- :func:`client_address`: who sent a request, from the proxy's ``X-Forwarded-For`` only when the request
  came from the proxy itself; ``X-Real-Ip`` and what a client wrote into ``X-Forwarded-For`` are ignored.
- :class:`SlidingWindow`: at most ``count`` events per key in any ``window_seconds``. Used per client
  address for sign-ups and failed logins, and per (client, name) for failed logins: five wrong
  passwords from one address block that address for that name, not the account for everyone, and
  old failures age out, so a wrong try every two minutes blocks nobody for good.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
import time
from collections import deque

USERNAME_RULE = ("1 to 32 characters: lower-case letters a-z, digits, '.', '_' or '-', "
                 "starting with a letter or digit")
_USERNAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")
RESERVED = frozenset({
    "admin", "administrator", "root", "hub", "api", "user", "users", "system", "jupyterhub", "services",
    "login", "logout", "signup", "authorize", "token", "oauth", "proxy", "null", "none", "nobody", "support",
})
# characters read alike in a name: digits for letters, and I for l (after lower-casing)
_LOOKALIKE = str.maketrans({"0": "o", "1": "l", "i": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                            "9": "g", ".": None, "_": None, "-": None})
MAX_PASSWORD_CHARS = 1024  # a pass phrase, not a payload
BCRYPT_MAX_BYTES = 72


def username_problem(name: str, *, reserved_ok: bool = False) -> str | None:
    """Why ``name`` cannot be a user name (a sentence for the sign-up page), or None if it can.

    ``reserved_ok``: a reserved name passes (an admin named in the hub's configuration, e.g. ``admin``).
    """
    if not isinstance(name, str) or not _USERNAME.fullmatch(name):
        if isinstance(name, str) and _USERNAME.fullmatch(name.lower()):
            return f"user names are lower case: sign up as {name.lower()!r}"
        return f"a user name is {USERNAME_RULE}"
    if not reserved_ok and (name in RESERVED or _reads_reserved(name)):
        return f"{name!r} is reserved: choose another name"
    return None


def skeleton(name: str) -> str:
    """``name`` as it reads: lower case, look-alike digits as letters, no ``.``, ``_`` or ``-``."""
    return name.lower().translate(_LOOKALIKE)


_RESERVED_SKELETONS = frozenset(skeleton(r) for r in RESERVED)


def _reads_reserved(name: str) -> bool:
    # "admin2", "admin-team": anything that starts like the admin reads as the admin to a colleague
    read = skeleton(name)
    return read in _RESERVED_SKELETONS or read.startswith(skeleton("admin"))


def client_address(peer: str, forwarded_for: list[str], *, proxies: frozenset[str] | set[str],
                   trusted_hops: frozenset[str] | set[str] = frozenset()) -> str:
    """The client's address for a request that reached the hub from ``peer``.

    Only a request from one of ``proxies`` (configurable-http-proxy, on loopback) has its forwarding read:
    the proxy appends the address it saw to ``X-Forwarded-For`` (``forwarded_for``: the header's values),
    so the last entry is the client, unless it is one of ``trusted_hops`` (a TLS proxy in front, listed in
    ``JupyterHub.trusted_downstream_ips``): then the entry before it, and so on. Entries left of the first
    untrusted one were written by the client and are never read. ``X-Real-Ip`` is never read: the proxy
    passes it through from the client as it came.
    """
    peer = _plain(peer) or peer
    if peer not in proxies:
        return peer
    client = peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",")]
    for hop in reversed(hops):
        address = _plain(hop)
        if address is None:  # not an address: what lies left of it is not the proxies' word
            break
        client = address
        if address not in trusted_hops:
            break
    return client


def _plain(text: str) -> str | None:
    """``text`` as an IP address in its usual form (an IPv4-mapped IPv6 one as IPv4), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def admin_conflict_message(name: str) -> str:
    """Why the hub will not start with ``name`` as its admin: the name is a sign-up's, never an admin's."""
    return (f"the admin {name!r} names an account that signed up on this hub and was never its admin: a sign-up "
            "never becomes the admin (whoever signed up chose its password). Name another admin, or log in as "
            "the current admin and discard that account at /hub/authorize first")


def password_bytes(password: str) -> bytes:
    """The bytes bcrypt hashes for ``password``: as typed up to 72 bytes, else its SHA-256 (base64)."""
    raw = password.encode("utf-8")
    return raw if len(raw) <= BCRYPT_MAX_BYTES else base64.b64encode(hashlib.sha256(raw).digest())


class SlidingWindow:
    """At most ``count`` events per key within any ``window_seconds`` (old events age out)."""

    MAX_KEYS = 100_000  # past this, keys whose events have all aged out are forgotten

    def __init__(self, count: int, window_seconds: float, clock=time.monotonic):
        if count < 1 or window_seconds <= 0:
            raise ValueError(f"count={count!r} and window_seconds={window_seconds!r} must be positive")
        self.count, self.window_seconds, self.clock = count, window_seconds, clock
        self._events: dict[object, deque] = {}

    def _recent(self, key) -> deque:
        events = self._events.get(key)
        if events is None:
            return deque()
        horizon = self.clock() - self.window_seconds
        while events and events[0] <= horizon:
            events.popleft()
        if not events:
            del self._events[key]
        return events

    def wait_seconds(self, key) -> float:
        """Seconds until ``key`` may act again; 0 when it may now."""
        events = self._recent(key)
        if len(events) < self.count:
            return 0.0
        return max(0.0, events[-self.count] + self.window_seconds - self.clock())

    def hit(self, key) -> None:
        """Count one event for ``key`` now."""
        if len(self._events) >= self.MAX_KEYS:
            for old in list(self._events):
                self._recent(old)
        self._events.setdefault(key, deque(maxlen=self.count)).append(self.clock())

    def clear(self, key) -> None:
        self._events.pop(key, None)
