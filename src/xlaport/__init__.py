"""xlaport: move PyTorch CUDA code to Google TPUs (TorchTPU) and AWS Trainium (TorchNeuron).

The module map (what each module and subpackage gives you, and the chapter that teaches it) is kept in one
place, the table at the top of ``book/toolkit.md``; ``tests/unit/test_module_map.py`` checks it against this package.
Torch is imported only by the modules that need it: ``import xlaport`` is light.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"
__all__ = ["CannotRunHere", "Profile", "Rule", "Target", "TARGET_NAMES", "profile", "target", "__version__"]

# Imported on first use, so that torch-free tools (xlaport.cost, the CLI's help) start fast.
_LAZY = {
    "Profile": "profiles",
    "Rule": "profiles",
    "profile": "profiles",
    "CannotRunHere": "targets",
    "Target": "targets",
    "TARGET_NAMES": "targets",
    "target": "targets",
}

if TYPE_CHECKING:  # pragma: no cover
    from .profiles import Profile, Rule, profile
    from .targets import TARGET_NAMES, CannotRunHere, Target, target


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

# Where `import torch` ran first and autoloaded TorchTPU on a machine without a TPU, keep libtpu from waiting on the
# cloud metadata server before anything asks it for devices (xlaport.detect.keep_libtpu_offline; torch-free).
if "torch_tpu" in sys.modules:
    from .detect import keep_libtpu_offline as _keep_libtpu_offline

    _keep_libtpu_offline()
