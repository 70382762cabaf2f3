"""Each tutorial page says what its outputs ran on, in its language (docs/_ext/provenance.py)."""

from __future__ import annotations

import json
import platform
import re

import pytest
import torch
import torchvision
from sitecheck import EXAMPLES, HTML, html, page_path, prose

PAGES = sorted(p.stem.split("_")[1] for p in EXAMPLES.glob("*/plot_*.py"))
SENTENCE = {
    "en": r"This page's outputs come from a run on the CPU with Python (\S+), torch (\S+) "
    r"and torchvision (\S+): ((?:under )?[\d.]+) s, peak memory (\d+) MiB above the build's baseline\.",
    "zh_CN": r"本页的输出来自一次在 CPU 上的运行，环境为 Python (\S+)、torch (\S+)、"
    r"torchvision (\S+)，用时 ?((?:不到 )?[\d.]+) 秒，"
    r"内存占用峰值比本页代码运行前高出 (\d+) MiB。",
}


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("page", PAGES)
def test_page_states_versions_run_time_and_memory(page: str, language: str) -> None:
    found = re.search(SENTENCE[language], prose(page, language))
    assert found, f"page {page} ({language}) has no provenance line"
    python, torch_version, torchvision_version, seconds, _mib = found.groups()
    # the build that made the site ran the examples with this interpreter and these packages
    assert (python, torch_version, torchvision_version) == (
        platform.python_version(),
        torch.__version__.split("+")[0],
        torchvision.__version__.split("+")[0],
    )
    # the time shown is the one the English build recorded for this page
    record = HTML.parents[1] / f"{page_path(page)}.provenance.json"
    recorded = json.loads(record.read_text(encoding="utf-8"))["seconds"]
    if recorded >= 0.05:
        assert seconds == f"{recorded:.1f}"
    else:
        assert seconds in {"under 0.1", "不到 0.1"}
    # above the download buttons, once
    assert html(page, language).count('class="provenance"') == 1
