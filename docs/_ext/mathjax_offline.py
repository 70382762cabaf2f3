"""sphinx-mathjax-offline, declared safe for parallel builds (``sphinx-build -j``).

The package serves MathJax from ``_static``, so math pages work offline, but its
``setup()`` returns nothing, and Sphinx then reads and writes serially under
``-j`` with a warning (which ``-W`` turns into a failure). What it does is
parallel-safe: it sets ``mathjax_path`` once and copies MathJax when the build
has finished, in the main process. This wrapper runs its ``setup()`` and says so.
"""

from __future__ import annotations

import importlib
from typing import Any

from sphinx.application import Sphinx


def setup(app: Sphinx) -> dict[str, Any]:
    importlib.import_module("sphinx-mathjax-offline").setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
