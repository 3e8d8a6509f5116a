"""Voila configuration of the aisize app.

Read because ``aisize.app.serve.build_command`` passes
``--Voila.config_file_paths=<this folder>`` (so no voila.py or voila.json from
the working directory or ~/.jupyter is read). The headers are set here, not on
the command line: traitlets reads a nested dict from the command line only in
a deprecated form, and voila turns that DeprecationWarning back on at import.
"""

from aisize.app.serve import HEADERS

c = get_config()  # noqa: F821 -- provided by traitlets when it runs this file
c.Voila.tornado_settings = {"headers": dict(HEADERS)}
