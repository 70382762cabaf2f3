"""Each tutorial page says what its outputs ran on: versions, run time, peak memory.

sphinx-gallery can print an example's run time and memory into the page, but
as text of the page: every build would change that text and so the zh_CN
catalogs. Here the English build records, for each example it runs, the
versions of Python, torch and torchvision, the wall time and the peak memory
(:func:`record`, one of the gallery's ``reset_modules``, called before and
after each example), in ``<example>.provenance.json`` next to sphinx-gallery's
own outputs in ``auto_examples/``; both languages' builds then add one line in
the page's language above the download buttons (:func:`add_line`), so the zh_CN
build, which reuses the English outputs, reports the run that made them.

Memory is the process's peak resident memory while the example ran, above what
the process held when it started (the build itself, with torch already
imported): on Linux the peak is reset before each example (``clear_refs``);
elsewhere no memory is reported.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

LINES = {
    "en": (
        "This page's outputs come from a run on the CPU with Python {python}, torch {torch} "
        "and torchvision {torchvision}: {time}{memory}."
    ),
    "zh_CN": (
        "本页的输出来自一次在 CPU 上的运行，环境为 Python {python}、"
        "torch {torch}、torchvision {torchvision}，用时{time}{memory}。"
    ),
}
TIME = {
    "en": ("{seconds:.1f} s", "under 0.1 s"),
    "zh_CN": (" {seconds:.1f} 秒", "不到 0.1 秒"),
}
MEMORY = {
    "en": ", peak memory {mib:.0f} MiB above the build's baseline",
    "zh_CN": "，内存占用峰值比本页代码运行前高出 {mib:.0f} MiB",
}
_STATUS = Path("/proc/self/status")
_started: dict[str, tuple[float, int | None]] = {}


def _kib(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def output_path(gallery_conf: dict[str, Any], fname: str) -> Path:
    """Where the record of the example ``fname`` goes: beside its outputs in the gallery.

    sphinx-gallery names the example by its file name only; the pages' file
    names are unique across the gallery (``plot_NN_*.py``).
    """
    src = Path(gallery_conf["src_dir"])
    for examples, gallery in zip(
        gallery_conf["examples_dirs"], gallery_conf["gallery_dirs"], strict=True
    ):
        root = (src / examples).resolve()
        found = sorted(root.rglob(Path(fname).name))
        if len(found) == 1:
            relative = found[0].relative_to(root)
            return (src / gallery / relative).with_suffix(".provenance.json")
    msg = f"{fname} is not exactly one example of the gallery"
    raise ValueError(msg)


def record(gallery_conf: dict[str, Any], fname: str | None, when: str) -> None:
    """``reset_modules`` entry: note the start, then write the record after the example."""
    if fname is None:
        return
    if when == "before":
        rss = _kib("VmRSS") if _reset_peak() else None
        _started[fname] = (time.perf_counter(), rss)
        return
    start, rss = _started.pop(fname, (None, None))
    if start is None:
        return
    import torch  # noqa: PLC0415  (the examples' process has it)
    import torchvision  # noqa: PLC0415

    peak = _kib("VmHWM") if rss is not None else None
    data = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "seconds": round(time.perf_counter() - start, 2),
        "peak_mib": None if peak is None or rss is None else round(max(peak - rss, 0) / 1024, 1),
    }
    path = output_path(gallery_conf, fname)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def line(data: dict[str, Any], language: str) -> str:
    """The sentence shown on the page, in ``language`` (English if not translated)."""
    language = language if language in LINES else "en"
    memory = (
        MEMORY[language].format(mib=data["peak_mib"]) if data.get("peak_mib") is not None else ""
    )
    # a run shorter than 0.05 s would read "0.0 s"; say what is known instead
    took, short = TIME[language]
    time_ = took.format(seconds=data["seconds"]) if data["seconds"] >= 0.05 else short
    # the release, without a wheel's build tag ("2.14.1", not "2.14.1+cu130": a CUDA
    # build, which puzzled readers of pages that run on the CPU); records written by
    # an older build may still carry it
    versions = {k: str(data[k]).split("+")[0] for k in ("torch", "torchvision")}
    return LINES[language].format(**{**data, **versions, "time": time_, "memory": memory})


def add_line(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    del templatename, doctree
    if not pagename.startswith("auto_examples/") or "body" not in context:
        return
    path = Path(app.srcdir) / f"{pagename}.provenance.json"
    if not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    html = f'<p class="provenance">{line(data, app.config.language or "en")}</p>\n'
    body = context["body"]
    footer = body.find('<div class="sphx-glr-footer')
    context["body"] = body + html if footer < 0 else body[:footer] + html + body[footer:]


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", add_line)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
