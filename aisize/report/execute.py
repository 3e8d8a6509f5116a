"""Headless notebook execution with papermill, and the error every report step raises.

A failed run raises :class:`ReportError` naming the step, the failing cell (its
index in the source notebook and its first line) and the exception. A cell that
raises leaves the partial executed notebook in the output folder; a kernel that
dies or a cell that times out leaves none (the notebook is written once, when
papermill is done, not after every cell).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_TIMEOUT_S = 300  # per cell; a report cell that runs longer is stuck, not slow


class ReportError(Exception):
    """A report step failed. ``step`` is "validate", "execute", "HTML" or "PDF"."""

    def __init__(self, step: str, message: str, *, cell_index: int | None = None,
                 cell_line: str | None = None, notebook_path: Path | None = None):
        self.step = step
        self.message = message
        self.cell_index = cell_index
        self.cell_line = cell_line
        self.notebook_path = notebook_path
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.cell_index is not None:
            where = f" in cell {self.cell_index} ({self.cell_line!r})"
        kept = f"; partial notebook kept at {self.notebook_path}" if self.notebook_path else ""
        return f"{self.step} failed{where}: {self.message}{kept}"


def _source_index(executed: Path) -> tuple[int | None, str | None]:
    """(index in the source notebook, first line) of the cell that raised, from the saved notebook."""
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except Exception:  # the partial file is a best effort; the exception text still names the cell
        return None, None
    # Cells papermill added (error banner, injected parameters) are not in the source notebook.
    source_cells = [c for c in nb.cells if not {"papermill-error-cell-tag", "injected-parameters"}
                    & set(c.get("metadata", {}).get("tags", []))]
    for index, cell in enumerate(source_cells):
        failed = cell.get("metadata", {}).get("papermill", {}).get("exception") or any(
            o.get("output_type") == "error" for o in cell.get("outputs", []))
        if failed:
            lines = cell.source.strip().splitlines()
            return index, lines[0] if lines else ""
    return None, None


# The kernel's arguments: its warning about TCP transport is noise on a CLI's stderr; and it imports what
# the report notebook's first cell imports (starting the chart helper first, aisize.report.svg) as it starts,
# which overlaps the caller's own checks when the kernel is started early (:func:`start_kernel`).
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR",
                    "--IPKernelApp.exec_lines=from aisize.report import svg; svg.start(); "
                    "import aisize.report.sections"]


def _quiet_kernel_manager():
    """jupyter_client's kernel manager, less the interrupt (SIGINT) it sends before every shutdown request:
    a report kernel that is done gets only the request, so ipykernel does not log
    "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel" on a normal run."""
    from jupyter_client import AsyncKernelManager

    class QuietShutdownKernelManager(AsyncKernelManager):
        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:  # set by shutdown_kernel before it interrupts
                return
            await super()._async_interrupt_kernel()

    return QuietShutdownKernelManager


def start_kernel(cwd: Path):
    """A report kernel started now, in ``cwd``: it boots and imports the report code (about 1.5 s) while
    the caller checks its inputs. None if it cannot start (papermill then starts one and says why)."""
    from jupyter_core.utils import run_sync  # the event loop papermill's client then runs in

    km = _quiet_kernel_manager()(kernel_name="python3")
    try:
        run_sync(km.start_kernel)(cwd=str(cwd), extra_arguments=KERNEL_ARGUMENTS)
    except Exception:
        return None
    return km


def stop_kernel(km) -> None:
    """Stop a kernel of :func:`start_kernel` at once (nothing in it needs saving); a no-op once stopped."""
    if km is not None and km.has_kernel:
        from jupyter_core.utils import run_sync

        run_sync(km.shutdown_kernel)(now=True)


def _adopting(km):
    """A kernel manager class whose one instance is ``km``, a kernel already started: papermill's client
    then owns it as if it had made it, finds its kernel running, and stops it when done. (``km`` is not an
    instance of this subclass, so Python does not initialise it again.)"""

    class Adopting(type(km)):
        def __new__(cls, *args, **kwargs):
            return km

    return Adopting


def execute(notebook: Path, output: Path, parameters: dict, *, cwd: Path | None = None,
            timeout_s: float = DEFAULT_TIMEOUT_S, kernel=None) -> Path:
    """Run ``notebook`` with already validated ``parameters``; the executed copy goes to ``output``.

    Parameters
    ----------
    notebook : the source .ipynb with a cell tagged "parameters".
    output : where the executed notebook is written (also on failure).
    parameters : names and values checked by :func:`aisize.report.parameters.validate`.
    cwd : working folder of the kernel [default: the notebook's folder]; a ``kernel`` given runs where it
        was started.
    timeout_s : limit per cell [s].
    kernel : a kernel of :func:`start_kernel` to run it in (stopped when done) [default: a new one].
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    manager = _adopting(kernel) if kernel is not None else _quiet_kernel_manager()
    try:
        papermill.execute_notebook(str(notebook), str(output), parameters=parameters,
                                   kernel_name="python3", progress_bar=False, log_output=False,
                                   cwd=str(cwd or Path(notebook).parent), execution_timeout=timeout_s,
                                   extra_arguments=KERNEL_ARGUMENTS, kernel_manager_class=manager,
                                   # written once at the end (and on a failing cell), not twice per cell
                                   request_save_on_cell_execute=False,
                                   # a finished report kernel holds nothing to save: stop it at once
                                   # instead of waiting for it to tear down (about 0.5 s)
                                   shutdown_kernel="immediate")
    except PapermillExecutionError as exc:
        index, line = _source_index(output)
        if index is None:
            index, line = exc.cell_index, next(iter((exc.source or "").strip().splitlines()), "")
        raise ReportError("execute", f"{exc.ename}: {exc.evalue}", cell_index=index,
                          cell_line=line, notebook_path=output if output.exists() else None) from None
    except Exception as exc:  # kernel died, cell timed out, notebook unreadable
        raise ReportError("execute", f"{type(exc).__name__}: {exc}",
                          notebook_path=output if output.exists() else None) from exc
    finally:
        stop_kernel(kernel)  # papermill stops it once it has a client; not if it failed before
    return output
