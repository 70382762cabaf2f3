"""Learn PyTorch hooks by running them, and use them safely.

``hooks_tutorial`` is the small library behind the hooks-tutorial site. It
records activations and gradients with hooks that never outlive the ``with``
block that made them, draws Grad-CAM-family heatmaps, and generates the
offline data, models and training loop that the tutorial pages use.

Importing the package is cheap: every public name is loaded on first use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

import lazy_loader

try:
    __version__ = version("hooks-tutorial")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

# The public names are listed once, in __init__.pyi: type checkers read it, and
# lazy_loader (Scientific Python SPEC 1) reads it here to import each name from
# its module on first use, so importing the package stays cheap.
_lazy_getattr, _, __all__ = lazy_loader.attach_stub(__name__, __file__)
__all__ += ["__version__"]


def __dir__() -> list[str]:
    return list(__all__)


def __getattr__(name: str) -> Any:
    if name not in __all__:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return _lazy_getattr(name)
