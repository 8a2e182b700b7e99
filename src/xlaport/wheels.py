"""Fetch a published wheel and fingerprint it, for the maintainer scripts that read the torch_tpu wheel into the
toolkit's data files (``scripts/torch_tpu_facts.py``, ``torch_tpu_ops.py``, ``torch_tpu_api_surface.py``).

Only those scripts download; the toolkit, the tests and the notebooks read the data files the scripts wrote.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

__all__ = ["download", "sha256"]


def download(package: str, version: str, dest: Path) -> Path:
    """``pip download`` one binary wheel of ``package==version`` into ``dest``; its path."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        f"{package}=={version}",
        "-d",
        str(dest),
    ]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    wheels = sorted(dest.glob(f"{package}-{version}-*.whl"))
    if not wheels:
        raise SystemExit(f"pip download produced no {package} {version} wheel in {dest}")
    return wheels[0]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
