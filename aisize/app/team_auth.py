"""Who may use the team server: NativeAuthenticator's sign-up, login and approvals, made safe for a company.

:class:`TeamAuthenticator` keeps NativeAuthenticator's password store (its ``users_info`` table)
and replaces what an attack on it found (issue 22):

- names follow :func:`aisize.app.team_limits.username_problem`, checked as typed (``ADMIN`` is not
  quietly lower-cased into the admin);
- admins are named in the configuration only: their accounts are created when the hub starts, with
  a random first password written to ``admin_password_file``; nobody becomes admin by signing up first;
- approvals, revocations and discards are POSTs to ``/hub/authorize`` carrying the hub's XSRF token
  (the GET links that changed state, ``/hub/authorize/NAME`` and ``/hub/discard/NAME``, are gone),
  and the page is ``jupyter/hub_templates/authorization-area.html``: every name escaped and quoted;
- revoking an account ends its sessions: its login cookie stops working, its tokens are deleted and
  its server is stopped;
- sign-ups are limited per client address and in how many may wait for approval; failed logins are
  limited per client address and per (address, name) (:class:`~aisize.app.team_limits.SlidingWindow`);
- bcrypt runs in a worker thread, not on the hub's event loop, and accepts passwords past 72 bytes;
- a failed login says the same whatever the reason (a pending account's right password is not told apart).

- an admin named in the configuration whose account signed up (and was never the hub's admin) stops the
  hub from starting: naming a pending sign-up ``--admin`` would hand it the admin role with the password
  its author chose (``aisize team`` refuses it before the hub starts, :func:`aisize.app.team.admin_conflict`);
- a sign-up that reads like an existing account or a reserved name (``adm1n``, ``a.lice``) is refused;
- a login runs bcrypt whether or not the account exists, so its time does not tell which names exist.

Client addresses are what the hub sees through configurable-http-proxy (its ``X-Forwarded-For``, read by
:func:`aisize.app.team_hub.trust_forwarding_from_proxy_only`; ``X-Real-Ip`` is ignored). Behind another
proxy (TLS), list that proxy in ``JupyterHub.trusted_downstream_ips`` (``aisize team --trusted-proxy``),
else every client has its address and the per-address limits act on everyone at once.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

import bcrypt
from jupyterhub import orm
from jupyterhub.scopes import needs_scope
from jupyterhub.utils import new_token
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import ChangePasswordAdminHandler, ChangePasswordHandler, LocalBase, LoginHandler
from nativeauthenticator.orm import UserInfo
from tornado import web
from traitlets import Integer, Unicode

from aisize.app.team_limits import (MAX_PASSWORD_CHARS, SlidingWindow, admin_conflict_message, password_bytes,
                                    skeleton, username_problem)

FAILED_LOGIN = "Invalid username or password, or the account is waiting for the admin's approval."


class TeamAuthenticator(NativeAuthenticator):
    """NativeAuthenticator with the rules above; see the module's docstring."""

    allowed_failed_logins = Integer(5, config=True, help="failed logins per client address and name in "
                                    "seconds_before_next_try; past that, that address waits for that name")
    seconds_before_next_try = Integer(120, config=True, help="the window of allowed_failed_logins [s]")
    admin_password_file = Unicode("admin-password", config=True,
                                  help="where the first password of an admin account created at start is written")
    signups_per_client = Integer(5, config=True, help="sign-ups one client address may make per hour")
    pending_limit = Integer(100, config=True, help="accounts that may wait for approval at once")
    failed_logins_per_client = Integer(30, config=True,
                                       help="failed logins one client address may make in seconds_before_next_try "
                                            "times 5, whatever the names")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        window = self.seconds_before_next_try
        self.signups = SlidingWindow(self.signups_per_client, 3600)
        self.failed_by_name = SlidingWindow(self.allowed_failed_logins, window)
        self.failed_by_client = SlidingWindow(self.failed_logins_per_client, 5 * window)
        # checked against when there is no account, so that a login takes bcrypt's time either way
        self._no_account_hash = bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt())
        for name in sorted(self.admin_users):
            self._create_admin_account(name)

    def _create_admin_account(self, name: str) -> None:
        problem = username_problem(name, reserved_ok=True)  # "admin" is reserved for sign-ups, not for the admin
        if problem:
            raise ValueError(f"admin name {name!r} is not allowed: {problem}")
        account = UserInfo.find(self.db, name)
        if account is not None:
            user = orm.User.find(self.db, name)  # as the last run left it: JupyterHub marks admins after this
            if user is None or not user.admin:
                raise ValueError(admin_conflict_message(name))
            if not account.is_authorized:  # named admin in the configuration: approved by it
                account.is_authorized = True
                self.db.commit()
            return
        password = secrets.token_urlsafe(15)
        path = Path(self.admin_password_file)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as out:
            out.write(f"{name}\n{password}\n")
        self.db.add(UserInfo(username=name, password=bcrypt.hashpw(password_bytes(password), bcrypt.gensalt()),
                             is_authorized=True))
        self.db.commit()
        self.log.warning("Created the admin account %r; its first password is in %s (change it at "
                         "/hub/change-password, then delete the file)", name, path.resolve())

    # names -------------------------------------------------------------------------------------

    def validate_username(self, username: str) -> bool:
        return username in self.admin_users or (username_problem(username) is None
                                                and super().validate_username(username))

    def signup_problem(self, name: str) -> str | None:
        """Why ``name`` (as typed) cannot be signed up for, or None."""
        problem = username_problem(name)
        if problem is None and (name in self.admin_users or self.user_exists(name)):
            problem = f"{name!r} is already in use: choose another name"
        elif problem is None and skeleton(name) in self.taken_skeletons():
            problem = f"{name!r} reads like an existing account's name: choose another name"
        return problem

    def taken_skeletons(self) -> set[str]:
        """How every account's and admin's name reads (:func:`~aisize.app.team_limits.skeleton`)."""
        names = {row[0] for row in self.db.query(UserInfo.username)} | set(self.admin_users)
        return {skeleton(n) for n in names if isinstance(n, str) and len(n) <= 64}

    # passwords ---------------------------------------------------------------------------------

    async def hash_password(self, password: str) -> bytes:
        """bcrypt of ``password`` in a worker thread (about a quarter second of CPU)."""
        return await asyncio.to_thread(bcrypt.hashpw, password_bytes(password), bcrypt.gensalt())

    async def password_matches(self, account: UserInfo | None, password: str) -> bool:
        """Whether ``password`` is ``account``'s; with no account, bcrypt runs all the same (and says no)."""
        if not isinstance(password, str) or len(password) > MAX_PASSWORD_CHARS:
            return False
        stored = account.password if account is not None else self._no_account_hash
        try:
            return await asyncio.to_thread(bcrypt.checkpw, password_bytes(password), stored) and account is not None
        except ValueError:  # a stored hash bcrypt cannot read: no password matches it
            return False

    def is_password_strong(self, password: str) -> bool:
        return len(password) <= MAX_PASSWORD_CHARS and super().is_password_strong(password)

    def change_password(self, username: str, new_password: str):
        account = self.get_user(username)
        if account is None or not self.is_password_strong(new_password):
            return None
        account.password = bcrypt.hashpw(password_bytes(new_password), bcrypt.gensalt())
        self.db.commit()
        return True

    async def create_account(self, name: str, password: str) -> UserInfo:
        account = UserInfo(username=name, password=await self.hash_password(password))
        if self.user_exists(name):  # signed up meanwhile, while the password was hashed
            raise ValueError(f"{name!r} is already in use: choose another name")
        self.db.add(account)
        self.db.commit()
        return account

    def pending_count(self) -> int:
        return self.db.query(UserInfo).filter(UserInfo.is_authorized.is_(False)).count()

    # login -------------------------------------------------------------------------------------

    def login_wait_seconds(self, client: str, name: str) -> float:
        return max(self.failed_by_client.wait_seconds(client), self.failed_by_name.wait_seconds((client, name)))

    async def authenticate(self, handler, data):
        name = self.normalize_username(str(data.get("username", "")))
        client = handler.request.remote_ip if handler is not None else ""
        if self.login_wait_seconds(client, name) > 0:
            return None
        account = self.get_user(name) if self.validate_username(name) else None
        matches = await self.password_matches(account, data.get("password"))  # bcrypt's time whoever asks
        if account is not None and account.is_authorized and matches:
            self.failed_by_name.clear((client, name))
            return name
        self.failed_by_name.hit((client, name))
        self.failed_by_client.hit(client)
        return None

    def get_handlers(self, app):
        return [(r"/login", TeamLoginHandler), (r"/signup", TeamSignUpHandler),
                (r"/authorize", TeamAuthorizationHandler), (r"/change-password", TeamChangePasswordHandler),
                (r"/change-password/([^/]+)", ChangePasswordAdminHandler)]


class TeamLoginHandler(LoginHandler):
    """The login page; a refusal says the same whatever the reason, or how long a blocked client waits."""

    async def post(self):
        data = {"username": self.get_body_argument("username", "", strip=False),
                "password": self.get_body_argument("password", "", strip=False)}
        user = await self.login_user(data)
        if user:
            self._jupyterhub_user = user
            self.redirect(self.get_next_url(user))
            return
        name = self.authenticator.normalize_username(data["username"])
        wait = self.authenticator.login_wait_seconds(self.request.remote_ip, name)
        error = (f"Too many failed logins from your address: try again in {wait:.0f} s." if wait > 0
                 else FAILED_LOGIN)
        self.set_status(429 if wait > 0 else 403)
        self.finish(await self._render(login_error=error, username=name[:32]))


class TeamSignUpHandler(LocalBase):
    """The sign-up page: the name rule, limits per client and on waiting accounts, bcrypt off the loop."""

    async def get(self):
        if not self.authenticator.enable_signup:
            raise web.HTTPError(404)
        self.finish(await self._page())

    def _page(self, message: str | None = None, alert: str = "alert-danger"):
        return self.render_template("signup.html", ask_email=False, two_factor_auth=False, recaptcha_key=None,
                                    tos=self.authenticator.tos, result_message=message,
                                    alert=alert if message else None)

    async def post(self):
        auth: TeamAuthenticator = self.authenticator
        if not auth.enable_signup:
            raise web.HTTPError(404)
        name = self.get_body_argument("username", "", strip=False)
        password = self.get_body_argument("signup_password", "", strip=False)
        confirmation = self.get_body_argument("signup_password_confirmation", "", strip=False)
        client = self.request.remote_ip
        wait = auth.signups.wait_seconds(client)
        problem = auth.signup_problem(name)
        if wait > 0:
            self.set_status(429)
            message = f"Too many sign-ups from your address: try again in {wait / 60:.0f} minutes."
        elif problem:
            self.set_status(400)
            message = f"Not signed up: {problem}."
        elif password != confirmation:
            self.set_status(400)
            message = "Not signed up: the password and its confirmation differ."
        elif not auth.is_password_strong(password):
            self.set_status(400)
            message = (f"Not signed up: a password has {auth.minimum_password_length} to {MAX_PASSWORD_CHARS} "
                       "characters and is not a common one.")
        elif auth.pending_count() >= auth.pending_limit:
            self.set_status(503)
            message = "Not signed up: the admin has too many sign-ups to review; try again later."
        else:
            auth.signups.hit(client)
            try:
                await auth.create_account(name, password)
            except ValueError as error:
                self.set_status(400)
                self.finish(await self._page(f"Not signed up: {error}."))
                return
            self.finish(await self._page("Signed up: you can log in once the admin approves you.", "alert-info"))
            return
        self.finish(await self._page(message))


class TeamAuthorizationHandler(LocalBase):
    """``/hub/authorize``: the accounts (GET) and one change to one of them (POST: ``action``, ``id``)."""

    @needs_scope("admin:users")
    async def get(self):
        self.finish(await self._page())

    def _page(self, message: str | None = None):
        accounts = self.db.query(UserInfo).order_by(UserInfo.is_authorized, UserInfo.id).all()
        fits = {a.id for a in accounts if username_problem(a.username, reserved_ok=True) is None}
        return self.render_template("authorization-area.html", accounts=accounts, message=message,
                                    admins=self.authenticator.admin_users, fits=fits)

    @needs_scope("admin:users")
    async def post(self):  # BaseHandler.prepare has checked the XSRF token of this POST
        action = self.get_body_argument("action", "")
        try:
            account = self.db.get(UserInfo, int(self.get_body_argument("id", "")))
        except ValueError:
            account = None
        if account is None or action not in ("approve", "revoke", "discard"):
            raise web.HTTPError(400, "give action=approve|revoke|discard and the id of an account")
        name = account.username
        if name in self.authenticator.admin_users:
            raise web.HTTPError(400, "admins are named in the hub's configuration, not changed here")
        if action == "approve":
            account.is_authorized = True
            self.db.commit()
        elif action == "revoke":
            account.is_authorized = False
            self.db.commit()
            await self._end_sessions(name)
        elif account.is_authorized:
            raise web.HTTPError(400, "revoke an approved account before discarding it")
        else:
            self.db.delete(account)
            self.db.commit()
            if self.users.get(name) is not None:
                self.users.delete(name)
        self.finish(await self._page(f"{action}: {name}"))

    async def _end_sessions(self, name: str) -> None:
        """Log ``name`` out everywhere: a new cookie id, no API or OAuth tokens, no running server."""
        user = self.users.get(name)
        if user is None:
            return
        user.orm_user.cookie_id = new_token()
        for token in list(user.orm_user.api_tokens):
            self.db.delete(token)
        self.db.commit()
        for server_name, spawner in list(user.spawners.items()):
            if spawner.active and not spawner.pending:
                await self.stop_single_user(user, server_name)


class TeamChangePasswordHandler(ChangePasswordHandler):
    """A user changing their own password: the old one checked off the event loop, long ones accepted."""

    @web.authenticated
    async def post(self):
        user = await self.get_current_user()
        old = self.get_body_argument("old_password", strip=False)
        new = self.get_body_argument("new_password", strip=False)
        account = self.authenticator.get_user(user.name)
        if account is None or not await self.authenticator.password_matches(account, old):
            alert, message = "alert-danger", "Your current password was incorrect. Please try again."
        elif new != self.get_body_argument("new_password_confirmation", strip=False):
            alert, message = "alert-danger", "Your new password didn't match the confirmation. Please try again."
        elif self.authenticator.change_password(user.name, new):
            alert, message = "alert-success", "Your password has been changed successfully!"
        else:
            alert, message = "alert-danger", (f"A password has {self.authenticator.minimum_password_length} to "
                                              f"{MAX_PASSWORD_CHARS} characters and is not a common one.")
        self.finish(await self.render_template("change-password.html", user_name=user.name,
                                               result_message=message, alert=alert))

