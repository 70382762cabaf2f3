"""Run time of every page's script, first run and later runs.

Run: ``python benchmarks/bench_pages.py`` (``--pages 18 26`` for some pages,
``--repeats 3`` for more warm runs).

Each page's script runs as a reader runs a download: ``python plot_NN_*.py``
in its own folder, in a fresh interpreter (imports and interpreter exit
included), ``MPLBACKEND=Agg`` so that ``plt.show()`` returns at once. The
library caches nothing, so later runs differ from the first only by the
operating system's warm file caches. The goal (issues #13 and #17): every page
under 10 s on 2 cores.

A shared machine can be slower at one time than at another. So the table
starts with a yardstick: how long a fresh interpreter takes to
``import torch`` (interpreter exit included), measured before and after the
pages. Compare page times only between runs whose yardsticks agree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 10.0  # seconds


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and exit code of one command, its output discarded."""
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start, done.returncode


def yardstick(env: dict[str, str]) -> float:
    """Median wall time of ``import torch`` in a fresh interpreter, over 3 runs."""
    runs = [timed([sys.executable, "-c", "import torch"], ROOT, env)[0] for _ in range(3)]
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", nargs="*", default=[], help="page numbers, e.g. 18 26")
    parser.add_argument("--repeats", type=int, default=1, help="runs after the first one")
    args = parser.parse_args()

    scripts = sorted((ROOT / "examples").glob("*/plot_*.py"))
    if args.pages:
        wanted = {f"plot_{int(n):02d}_" for n in args.pages}
        scripts = [s for s in scripts if s.name[:8] in wanted]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    before = yardstick(env)
    print(f"yardstick (import torch in a fresh interpreter): {before:.2f} s\n")
    print(f"{'page':<40} {'first run':>10} {'later runs':>16}")
    over = []
    for script in scripts:
        command = [sys.executable, script.name]
        runs = [timed(command, script.parent, env) for _ in range(1 + args.repeats)]
        failed = [code for _, code in runs if code != 0]
        first, *later = (seconds for seconds, _ in runs)
        later_text = ", ".join(f"{s:.1f}" for s in later)
        note = f"  exit code {failed[0]}" if failed else ""
        print(f"{script.name:<40} {first:>9.1f}s {later_text:>15}s{note}", flush=True)
        if max(first, *later) >= LIMIT:
            over.append(script.name)
    after = yardstick(env)
    print(f"\nyardstick after the pages: {after:.2f} s; load {os.getloadavg()[0]:.1f}")
    print(f"{len(scripts) - len(over)} of {len(scripts)} pages under {LIMIT:.0f} s in every run")
    if over:
        print("over the limit:", ", ".join(over))


if __name__ == "__main__":
    main()
