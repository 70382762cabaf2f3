"""Refresh the checked-in intersphinx inventories in ``docs/_intersphinx/``.

Usage::

    python docs/tools/refresh_inventories.py [--offline]

``docs/conf.py`` lists these files before the URLs, so builds never touch the
network; refresh them now and then (``nox -s inventories``) and commit them.

Online, each project's real ``objects.inv`` is downloaded. Offline (or with
``--offline``), Python's comes from Debian's ``python3.X-doc`` package
(``apt-get install python3.11-doc``) and PyTorch's is generated from the
installed torch by ``make_torch_inventory.py``.
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE.parent / "_intersphinx"
SOURCES = {
    "python": "https://docs.python.org/3/objects.inv",
    "torch": "https://docs.pytorch.org/docs/stable/objects.inv",
}
MAGIC = b"# Sphinx inventory version 2"


def download(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=15) as response:
            data: bytes = response.read()
    except OSError as error:
        print(f"  could not download {url}: {error}")
        return None
    if not data.startswith(MAGIC):
        print(f"  {url} is not a Sphinx inventory")
        return None
    return data


def offline_python() -> bytes | None:
    candidates = sorted(
        (
            p
            for p in Path("/usr/share/doc").glob("python3.*/html/objects.inv")
            if p.parents[1].name.removeprefix("python3.").isdigit()
        ),
        key=lambda p: int(p.parents[1].name.removeprefix("python3.")),
    )
    if not candidates:
        print("  no Debian python3.X-doc inventory; `apt-get install python3.11-doc`")
        return None
    print(f"  using {candidates[-1]}")
    return candidates[-1].read_bytes()


def offline_torch() -> bytes | None:
    sys.path.insert(0, str(HERE))
    import make_torch_inventory  # noqa: PLC0415 - imports torch, only when needed

    return make_torch_inventory.inventory_bytes(make_torch_inventory.entries())


def main(argv: list[str]) -> int:
    offline = "--offline" in argv
    fallbacks = {"python": offline_python, "torch": offline_torch}
    failed = 0
    OUT.mkdir(exist_ok=True)
    for name, url in SOURCES.items():
        print(f"{name}:")
        data = None if offline else download(url)
        if data is None:
            data = fallbacks[name]()
        if data is None:
            failed += 1
            continue
        target = OUT / f"{name}.inv"
        target.write_bytes(data)
        print(f"  wrote {target} ({len(data)} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
