"""JupyterHub configuration of the aisize team server: ``aisize team`` (or ``make team``) runs it.

One URL for a team: people sign up at /hub/signup, an admin approves them at /hub/authorize,
and each then gets their own aisize workbook (their own server and scenario) at /user/NAME/,
the page they land on after login. Servers with no activity for an hour are culled.

``aisize team`` sets the environment this file reads:

- ``AISIZE_TEAM_STATE``: folder for the hub's database, cookie secret and users' folders;
- ``AISIZE_TEAM_ADMIN``: the admin user (default ``admin``); the hub creates that account when it
  first starts and writes its first password to ``admin-password`` in the state folder;
- ``AISIZE_TEAM_HOSTS``: comma-separated host names people reach the hub by, other than an IP
  address or localhost (each user's server refuses other names: DNS rebinding);
- ``AISIZE_TEAM_TRUSTED_PROXIES``: comma-separated addresses of proxies in front of the hub (TLS), whose
  ``X-Forwarded-For`` entries are passed over to find the client's address; none by default;
- ``AISIZE_PROXY``: configurable-http-proxy (from npm; ``make team`` installs it).

Each user's server is the locked-down aisize app (``aisize.app.team_hub.AppSpawner``): no
Jupyter server, no code execution from the browser, at most ``--max-sessions`` tabs. It runs
as the hub's own system account, so run the hub as an unprivileged user, not as root. For
many users on several machines, deploy/helm/ has the Zero-to-JupyterHub values for Kubernetes.
"""

import os
import sys
from pathlib import Path

import nativeauthenticator

import aisize.app
from aisize.app.team_hub import trust_forwarding_from_proxy_only

c = get_config()  # noqa: F821 -- provided by JupyterHub when it runs this file

state = Path(os.environ.get("AISIZE_TEAM_STATE") or os.getcwd())
hosts = [h for h in os.environ.get("AISIZE_TEAM_HOSTS", "").split(",") if h]

# Client addresses: the per-address limits below key on them, so only the proxy's own X-Forwarded-For
# entry counts (X-Real-Ip and what a client writes are ignored); a TLS proxy in front is listed here.
trust_forwarding_from_proxy_only()
c.JupyterHub.trusted_downstream_ips = [a for a in os.environ.get("AISIZE_TEAM_TRUSTED_PROXIES", "").split(",") if a]

# Login: NativeAuthenticator's password store, with aisize's rules (aisize.app.team_auth): names of
# lower-case ASCII, admins named here only, approvals by POST with the hub's XSRF token, limits on
# sign-ups and failed logins per client, bcrypt off the event loop. Nobody gets in until approved.
c.JupyterHub.authenticator_class = "aisize.app.team_auth.TeamAuthenticator"
c.JupyterHub.template_paths = [str(Path(aisize.app.__file__).parent / "jupyter" / "hub_templates"),
                               str(Path(nativeauthenticator.__file__).parent / "templates")]
c.TeamAuthenticator.open_signup = False
c.TeamAuthenticator.minimum_password_length = 10
c.TeamAuthenticator.check_common_password = True
c.TeamAuthenticator.allowed_failed_logins = 5  # per client address and name, in any 120 s
c.TeamAuthenticator.seconds_before_next_try = 120
c.TeamAuthenticator.admin_password_file = str(state / "admin-password")
c.Authenticator.admin_users = {os.environ.get("AISIZE_TEAM_ADMIN") or "admin"}
c.Authenticator.allow_all = True  # who may log in is decided by the admin's approval above

# Per-user servers: the aisize workbook is the whole server, so it is the page after login.
c.JupyterHub.spawner_class = "aisize.app.team_hub.AppSpawner"
c.Spawner.args = [f"--allow-host={h}" for h in hosts]
# Each process of a user's server (server, each tab's kernel, a report's kernel, Chromium) holds at
# most this much data (RLIMIT_DATA); one tab's kernel holds about 300 MiB (docs/team-server.md).
c.Spawner.mem_limit = "1G"
# ... and all of one person's processes together hold at most this much resident memory: past it the largest
# is ended (aisize.app.memory_watch). One tab making an HTML+PDF report peaked at 2.1 GiB (issue 46).
c.AppSpawner.person_mem_limit = 3 * 2**30
c.Spawner.start_timeout = 120  # a 2-core machine starting several servers at once is slow
c.Spawner.http_timeout = 120
c.JupyterHub.redirect_to_server = True

# The proxy in front of the hub and every user's server; its traffic does not count as activity.
c.JupyterHub.proxy_class = "aisize.app.team_hub.ActivityBlindProxy"
c.ConfigurableHTTPProxy.command = [os.environ.get("AISIZE_PROXY") or "configurable-http-proxy"]
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

# Servers whose kernels did nothing for an hour are stopped (their memory comes back), even with a
# tab open; people just log in again. Users' servers report their kernels' activity to the hub.
c.JupyterHub.services = [{"name": "idle-culler",
                          "command": [sys.executable, "-m", "jupyterhub_idle_culler", "--timeout=3600",
                                      "--cull-every=300"]}]
c.JupyterHub.load_roles = [{"name": "idle-culler", "services": ["idle-culler"],
                            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]

# State: all in one folder, kept across restarts.
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True
