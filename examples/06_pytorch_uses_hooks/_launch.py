# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""Start the ranks of a distributed run on this machine, and leave none behind.

``plot_30_distributed_data_parallel.py`` calls ``run_ranks("_ddp_worker.py")``
(the worker is what needs the library). It starts one Python process per rank,
``python _ddp_worker.py RANK WORLD_SIZE PORT REPORT``, where PORT is a free TCP
port on 127.0.0.1 at which the ranks meet and REPORT the path of a file in which
the rank writes its report, as JSON: standard output is no channel for it,
because libraries print there too (gloo, in some torch versions, prints a line
when a rank has connected). ``run_ranks`` returns the reports in rank order. A
deadline bounds the run, and every rank still running when it ends, or when
another rank has failed, is killed. Keep this file next to the page's script.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that no program uses right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))  # port 0: the system picks a free one
        return probe.getsockname()[1]


def _wait(ranks: list[subprocess.Popen[str]], timeout: float) -> None:
    """Return when every rank has exited, when one has failed, or at the deadline."""
    deadline = time.monotonic() + timeout
    while any(rank.poll() is None for rank in ranks) and time.monotonic() < deadline:
        if any(rank.poll() not in (None, 0) for rank in ranks):
            return  # one rank failed: the others would wait for it forever
        time.sleep(0.1)


def run_ranks(
    worker: str, world_size: int = 2, timeout: float = 240
) -> tuple[list[dict[str, Any]], list[subprocess.Popen[str]]]:
    """Run ``worker`` on ``world_size`` ranks; return their reports and processes.

    ``worker`` is a script next to this file (or a full path). Raises
    ``RuntimeError`` with the rank's output if a rank fails or writes no
    report, or if the ranks are still running after ``timeout`` seconds.
    Either way no process is left running.
    """
    script = Path(__file__).parent / worker
    if not script.is_file():
        msg = f"{script} not found: download it and put it next to {Path(__file__).name}"
        raise FileNotFoundError(msg)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ranks-") as folder:
        reports = [Path(folder) / f"report-{rank}.json" for rank in range(world_size)]
        # what a rank prints goes to a file, not a pipe: a full pipe would block the rank
        outputs = [Path(folder) / f"output-{rank}.txt" for rank in range(world_size)]
        ranks = []
        try:
            for rank in range(world_size):
                with outputs[rank].open("w") as output:
                    command = [sys.executable, str(script), str(rank), str(world_size), str(port)]
                    ranks.append(
                        subprocess.Popen(
                            [*command, str(reports[rank])],
                            stdout=output,
                            stderr=subprocess.STDOUT,
                            text=True,
                        )
                    )
            _wait(ranks, timeout)
        finally:
            stopped = [rank.poll() is None for rank in ranks]
            for rank in ranks:
                if rank.poll() is None:
                    rank.kill()  # no process left behind, whatever happened
                rank.wait()
        for rank, process in enumerate(ranks):
            if process.returncode != 0 and not stopped[rank]:
                output = outputs[rank].read_text()
                msg = f"rank {rank} failed with exit code {process.returncode}:\n{output[-3000:]}"
                raise RuntimeError(msg)
        if any(stopped):
            msg = f"the ranks did not finish within {timeout} s and were stopped (a busy machine?)"
            raise RuntimeError(msg)
        for rank, report in enumerate(reports):
            if not report.is_file():
                output = outputs[rank].read_text()
                msg = f"rank {rank} exited without writing its report {report.name}:\n{output[-3000:]}"
                raise RuntimeError(msg)
        return [json.loads(report.read_text()) for report in reports], ranks
