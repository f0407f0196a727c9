"""Concurrency: processes appending to one results file keep every row."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .base import Area, Context, expect


def run(ctx: Context) -> Area:
    return concurrency_area(ctx.folder, trials=1 if ctx.quick else 3,
                            appends=10 if ctx.quick else 20)


_APPENDER = """
import sys, time
from ragkit.report.results import append_rows
path, who, n, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
while time.time() < start:
    time.sleep(0.001)
for i in range(n):
    append_rows(path, [{"who": who, "i": i, "j": j} for j in range(2)])
"""


def concurrency_area(folder: Path, trials: int = 3, appends: int = 20) -> Area:
    import subprocess

    from ...report.results import read_rows

    area = Area("concurrency")
    for t in range(trials):
        for procs in (2, 3):
            def check(t=t, procs=procs):
                path = folder / f"rows-{t}-{procs}.jsonl"
                start = time.time() + 1.5
                runs = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), f"p{k}",
                                          str(appends), str(start)]) for k in range(procs)]
                codes = [r.wait(timeout=120) for r in runs]
                expect(codes == [0] * procs, f"exit codes {codes}")
                rows = read_rows(path)
                expect(len(rows) == procs * appends * 2,
                        f"{len(rows)} rows kept of {procs * appends * 2}")
            area.case(f"{procs} processes x {appends} appends, trial {t + 1}", check)
    return area
