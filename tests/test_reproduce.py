"""The reproduce runner measures each notebook's kernel CPU as well as its wall time."""

import subprocess
import sys

from ragkit.tools.reproduce import children_cpu


def test_children_cpu_counts_a_finished_child():
    before = children_cpu()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert children_cpu() - before > 0.05  # the child's own CPU seconds, whatever the load
