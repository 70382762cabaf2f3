"""Write the registered models' weights into the package (maintainers only).

    python tools/ship_weights.py [--from-cache]

Trains each registered model with its recipe (``pretrained(name, retrain=True)``)
or, with ``--from-cache``, takes the weights cached by earlier runs, writes
``src/hooks_tutorial/weights/<name>.pt`` and puts their SHA-256 into
``src/hooks_tutorial/zoo.py``. Page outputs follow the shipped weights, so
rebuild the site and re-read the pages' claims after shipping new ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
from pathlib import Path

import torch

from hooks_tutorial import zoo

ROOT = Path(__file__).parents[1]
SOURCE = ROOT / "src" / "hooks_tutorial" / "zoo.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-cache", action="store_true", help="reuse cached weights")
    args = parser.parse_args()
    target = ROOT / "src" / "hooks_tutorial" / "weights"
    target.mkdir(exist_ok=True)
    source = SOURCE.read_text(encoding="utf-8")
    for name in zoo._CONFIGS:
        config = zoo.pretrained_config(name)
        cached = zoo.cache_dir() / f"{name}-{config.key()[:16]}.pt"
        if args.from_cache and cached.is_file():
            payload = torch.load(cached, map_location="cpu", weights_only=True)
        else:
            zoo.pretrained(name, retrain=True)
            payload = torch.load(cached, map_location="cpu", weights_only=True)
        shipped = {
            "format": zoo._FORMAT,
            "name": name,
            "config": json.dumps(dataclasses.asdict(config), sort_keys=True),
            "metrics": payload["metrics"],
            "torch": str(torch.__version__),
            "state_dict": payload["state_dict"],
        }
        path = target / f"{name}.pt"
        torch.save(shipped, path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        source = re.sub(rf'("{name}": )"[^"]*"', rf'\1"{digest}"', source)
        print(f"{name}: {payload['metrics']} -> {path.name} ({path.stat().st_size} bytes)")
    SOURCE.write_text(source, encoding="utf-8")


if __name__ == "__main__":
    main()
