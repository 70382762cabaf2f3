"""Write the registered models' weights into the package (maintainers only).

    python tools/ship_weights.py [NAME ...]

Trains each registered model (or the named ones) with its recipe
(``zoo._train``, about 15 s each on 2 cores), writes
``src/hooks_tutorial/weights/<name>.pt`` and puts their SHA-256 into
``src/hooks_tutorial/zoo.py`` (``tiny_lm-names``, the language model of chapter 7:
``lm.train_lm``, into ``lm.py``; ``tiny_detector-shapes``, the detector of page 27b:
``detection.train_detector``, into ``detection.py``). Page outputs follow the shipped weights, so
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

from hooks_tutorial import detection, lm, zoo

ROOT = Path(__file__).parents[1]
SOURCE = ROOT / "src" / "hooks_tutorial" / "zoo.py"
LM_SOURCE = ROOT / "src" / "hooks_tutorial" / "lm.py"
LM_NAME = "tiny_lm-names"
DETECTOR_SOURCE = ROOT / "src" / "hooks_tutorial" / "detection.py"
DETECTOR_NAME = "tiny_detector-shapes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    every = [*zoo._CONFIGS, LM_NAME, DETECTOR_NAME]
    parser.add_argument("names", nargs="*", default=every, help="models to train")
    args = parser.parse_args()
    target = ROOT / "src" / "hooks_tutorial" / "weights"
    target.mkdir(exist_ok=True)
    source = SOURCE.read_text(encoding="utf-8")
    for name in args.names:
        if name == LM_NAME:
            ship_lm()
            continue
        if name == DETECTOR_NAME:
            ship_detector()
            continue
        config = zoo.pretrained_config(name)
        model, metrics = zoo._train(config)
        shipped = {
            "format": 1,
            "name": name,
            "config": json.dumps(dataclasses.asdict(config), sort_keys=True),
            "metrics": metrics,
            "torch": str(torch.__version__),
            "state_dict": model.state_dict(),
        }
        path = target / f"{name}.pt"
        torch.save(shipped, path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        source = re.sub(rf'("{name}": )"[^"]*"', rf'\1"{digest}"', source)
        print(f"{name}: {metrics} -> {path.name} ({path.stat().st_size} bytes)")
    SOURCE.write_text(source, encoding="utf-8")


def ship_lm() -> None:
    """The language model of chapter 7: ``lm.train_lm(lm.DEFAULT_CONFIG)`` (seconds)."""
    model, metrics = lm.train_lm(lm.DEFAULT_CONFIG)
    shipped = {
        "format": 1,
        "name": LM_NAME,
        "config": json.dumps(dataclasses.asdict(lm.DEFAULT_CONFIG), sort_keys=True),
        "metrics": metrics,
        "torch": str(torch.__version__),
        "state_dict": model.state_dict(),
    }
    path = ROOT / "src" / "hooks_tutorial" / "weights" / f"{LM_NAME}.pt"
    torch.save(shipped, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    source = LM_SOURCE.read_text(encoding="utf-8")
    source = re.sub(r'_SHIPPED_SHA256 = "[^"]*"', f'_SHIPPED_SHA256 = "{digest}"', source)
    LM_SOURCE.write_text(source, encoding="utf-8")
    print(f"{LM_NAME}: {metrics} -> {path.name} ({path.stat().st_size} bytes)")


def ship_detector() -> None:
    """The detector of page 27b: ``detection.train_detector(detection.DEFAULT_CONFIG)``."""
    model, metrics = detection.train_detector(detection.DEFAULT_CONFIG)
    shipped = {
        "format": 1,
        "name": DETECTOR_NAME,
        "config": json.dumps(dataclasses.asdict(detection.DEFAULT_CONFIG), sort_keys=True),
        "metrics": metrics,
        "torch": str(torch.__version__),
        "state_dict": model.state_dict(),
    }
    path = ROOT / "src" / "hooks_tutorial" / "weights" / f"{DETECTOR_NAME}.pt"
    torch.save(shipped, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    source = DETECTOR_SOURCE.read_text(encoding="utf-8")
    source = re.sub(r'_SHIPPED_SHA256 = "[^"]*"', f'_SHIPPED_SHA256 = "{digest}"', source)
    DETECTOR_SOURCE.write_text(source, encoding="utf-8")
    print(f"{DETECTOR_NAME}: {metrics} -> {path.name} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
