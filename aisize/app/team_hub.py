"""The JupyterHub pieces of the team server (imported by the hub and by users' servers, never by the app).

- :class:`AppSpawner`: each user's server is the aisize app (``python -m aisize.app.team``), run as
  the hub's own system user in a folder of its own: people are users of the hub, not of the machine.
  The server runs no Jupyter server and executes no code sent from the browser, so users sharing a
  system account cannot reach each other through it.
- :class:`HubIdentityProvider`: JupyterHub's OAuth identity provider for Voila's standalone server,
  with its login callback mounted under the user's prefix (Voila does not prefix its handlers).
"""

from __future__ import annotations

import os
import sys

from jupyter_server.utils import url_path_join
from jupyterhub.singleuser.extension import JupyterHubIdentityProvider
from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode, default


class AppSpawner(LocalProcessSpawner):
    """Each user's server is the aisize app, run as the hub's system user in ``home_dir_template``."""

    home_dir_template = Unicode("{state}/users/{username}", config=True,
                                help="each user's working folder; {state} and {username} are filled in")

    @default("cmd")
    def _default_cmd(self):
        return [os.environ.get("AISIZE_TEAM_PYTHON") or sys.executable, "-m", "aisize.app.team"]

    @property
    def home_dir(self) -> str:
        state = os.environ.get("AISIZE_TEAM_STATE") or os.getcwd()
        return self.home_dir_template.format(state=state, username=self.user.name)

    def make_preexec_fn(self, name):
        home = self.home_dir

        def preexec():  # no setuid, unlike LocalProcessSpawner: hub users are not system users
            os.makedirs(home, 0o700, exist_ok=True)
            os.chdir(home)

        return preexec

    def user_env(self, env):
        env.update(USER=self.user.name, HOME=self.home_dir)
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
