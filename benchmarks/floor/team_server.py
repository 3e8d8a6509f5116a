"""A floor user's server in ``benchmarks/bench_team.py``: what the team hub's spawner runs for users named
floor*, in place of ``python -m aisize.app.team``.

It builds the user's server exactly as ``python -m aisize.app.team`` does (``aisize.app.team.user_server_command``:
the same voila flags, template, preheated pool, guarded kernel manager reporting activity, the hub's OAuth
identity provider and authorizer), swaps the app notebook for ``one_slider.ipynb`` (one log slider, one HTML
output), and replaces itself with that server, as the app's does. Nothing else differs.
"""

import os
import sys
from pathlib import Path

from aisize.app import serve, team

NOTEBOOK = Path(__file__).resolve().parent / "one_slider.ipynb"

command = team.user_server_command(sys.argv[1:], dict(os.environ))
command[command.index(str(serve.default_notebook()))] = str(NOTEBOOK)
os.execve(command[0], command, serve.server_env())
