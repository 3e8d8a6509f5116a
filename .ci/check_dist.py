"""Check a built wheel and sdist: package data complete, no tests, caches or CI files.

    python .ci/check_dist.py DIST_DIR CHECKOUT

Every file under the checkout's data/ (as git tracks it) must be in the wheel under aisize/_data/,
whatever is added there later; the notebooks and deploy/ too. Nothing from tests/, benchmarks/,
.ci/ and no cache (__pycache__, .pyc, .pytest_cache, .hypothesis, .ipynb_checkpoints) may be in either.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

FORBIDDEN = ("tests/", "benchmarks/", ".ci/", "__pycache__", ".pyc", ".pytest_cache", ".hypothesis",
             ".ipynb_checkpoints", ".venv/")


def tracked(checkout: Path, folder: str) -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(checkout), "ls-files", folder], capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file on disk
        out = [str(p.relative_to(checkout)) for p in (checkout / folder).rglob("*") if p.is_file()]
    return sorted(out)


def main(dist: Path, checkout: Path) -> int:
    wheels, sdists = list(dist.glob("aisize-*.whl")), list(dist.glob("aisize-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"expected one wheel and one sdist in {dist}"
    wheel = set(zipfile.ZipFile(wheels[0]).namelist())
    sdist = {n.split("/", 1)[1] for n in tarfile.open(sdists[0]).getnames() if "/" in n}
    problems = []
    expected = {f"aisize/_data/{p.removeprefix('data/')}" for p in tracked(checkout, "data")}
    expected |= {f"aisize/_deploy/{p.removeprefix('deploy/')}" for p in tracked(checkout, "deploy")}
    expected |= {"aisize/_notebooks/app.ipynb", "aisize/report/report.ipynb"}
    expected |= {p for p in tracked(checkout, "aisize") if not p.endswith(".pyc")}
    problems += [f"wheel lacks {p}" for p in sorted(expected - wheel)]
    problems += [f"sdist lacks {p}" for p in tracked(checkout, "data") + tracked(checkout, "aisize")
                 if p not in sdist]
    for name, members in (("wheel", wheel), ("sdist", sdist)):
        problems += [f"{name} holds {m}" for m in sorted(members) if any(f in m for f in FORBIDDEN)]
    for p in problems:
        print(f"check_dist: {p}", file=sys.stderr)
    print(f"check_dist: wheel {len(wheel)} files, sdist {len(sdist)} files, {len(expected)} expected in the wheel: "
          + ("FAILED" if problems else "OK"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
