"""Suite-wide hooks: say loudly when the PyTorch cross-check cannot run."""

import importlib.util

_TORCH_SKIPPED = ("PyTorch cross-check SKIPPED: torch is not installed "
                  "(pip install -e '.[torch]')")


def _torch_missing() -> bool:
    try:
        return importlib.util.find_spec("torch") is None
    except (ImportError, ValueError):  # ValueError: sys.modules["torch"] is None
        return True


def _torch_import_skipped(terminalreporter) -> bool:
    """A module's pytest.importorskip("torch") skipped it (e.g. a broken install)."""
    return any("could not import 'torch'" in str(r.longrepr) for r in terminalreporter.stats.get("skipped", []))


def pytest_report_header(config):
    return f"!!! {_TORCH_SKIPPED} !!!" if _torch_missing() else None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _torch_missing() or _torch_import_skipped(terminalreporter):
        terminalreporter.write_sep("!", _TORCH_SKIPPED, red=True, bold=True)
