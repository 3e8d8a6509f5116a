__version__ = "0.1.0"

# jsonschema (under Altair) imports the optional IRI parser rfc3987_syntax when it is installed, and that
# compiles a grammar at import: about 1.2 s of CPU in every app and report kernel, for format checks nothing
# here asks for. Marking it absent (only if nobody imported it yet) makes jsonschema skip those formats.
import sys as _sys

_sys.modules.setdefault("rfc3987_syntax", None)
