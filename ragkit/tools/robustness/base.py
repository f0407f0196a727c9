"""What every area of the robustness suite shares.

An `Area` counts the cases it tried and keeps the message of each one that failed; a case checks
one concrete promise (an exit code, a skipped-and-counted file, a row kept, a file unchanged).
`Context` is what a run hands every area: its own empty folder, the chunkers, the size of the
long-line input and whether this is the quick subset the tests run. `expect` states a promise,
`run_cli` runs the real ``ragkit`` command in a subprocess.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class Context:
    folder: Path            # empty, this area's own
    chunkers: dict          # name -> chunker, every registered one by default
    big_line_mb: float = 2  # size of the one-line input
    quick: bool = False     # the subset the tests run


@dataclass
class Area:
    name: str
    tried: int = 0
    failures: list[str] = field(default_factory=list)

    def case(self, label: str, check: Callable[[], None]) -> None:
        """Run one case; anything but a clean return is a failure with its label."""
        self.tried += 1
        try:
            check()
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            self.failures.append(f"{label}: {type(e).__name__}: {str(e)[:300]}")


def expect(cond: bool, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def run_cli(args: list[str], env: dict | None = None, timeout: int = 600,
            cwd: Path | None = None):
    """The real ``ragkit`` command in a subprocess (``python -m ragkit``), output captured;
    run in `cwd` when given (ragkit found as it is found here)."""
    import os
    import subprocess

    env = {**os.environ, **(env or {})}
    if cwd is not None:  # the ragkit this process imported, wherever the command runs
        import ragkit

        root = str(Path(ragkit.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "ragkit", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes: compare two to check that nothing was changed,
    added or removed."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line_error(out, code: int, *needles: str) -> None:
    """A finished `run_cli`: exit `code`, no traceback, stderr exactly one line holding every
    needle."""
    lines = out.stderr.strip().splitlines()
    expect("Traceback" not in out.stderr + out.stdout, f"a traceback: {out.stderr[-400:]}")
    expect(out.returncode == code, f"exit {out.returncode}, expected {code}: "
           f"{out.stderr[-300:]}")
    expect(len(lines) == 1, f"{len(lines)} lines on stderr, expected one: {out.stderr[-400:]}")
    missing = [n for n in needles if n not in lines[0]]
    expect(not missing, f"{missing} not in {lines[0][:300]!r}")
