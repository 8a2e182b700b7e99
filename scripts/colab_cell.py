"""Write (or check) the Colab setup cells at the top of every chapter, from one place.

Each chapter opens with a markdown cell that says what the setup installs and why, and a code cell that does it on
Colab and nothing anywhere else. Both are generated here: the repository URL comes from ``pyproject.toml``
(``[project.urls] Repository``) and the emulator's package versions from ``requirements.txt``, so neither is typed
into thirteen notebooks. ``tests/notebooks/test_colab_cell.py`` fails when a notebook's cells differ from what this script
writes; run ``python scripts/colab_cell.py`` after changing the URL, a pin or the text below.

    python scripts/colab_cell.py            # rewrite the cells in notebooks/*.ipynb
    python scripts/colab_cell.py --check    # exit 1 and name the notebooks whose cells are stale
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from xlaport import detect

ROOT = Path(__file__).resolve().parents[1]
TAG = "colab-setup"
# What a chapter imports beyond the toolkit's own dependencies, pinned as requirements.txt pins them.
EMULATOR_PACKAGES = (
    "torch",
    "torch_xla",
    "jax",
    "jaxlib",
    "transformers",
    "tokenizers",
    "diffusers",
    "scikit-learn",
    "peft",
    "accelerate",
    "torchao",
)
GOOGLE_PCI_VENDOR = f"{detect.GOOGLE_PCI_VENDOR:#06x}"  # "0x1ae0", as sysfs writes it


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, ``notebooks/*.ipynb``, in name order."""
    return sorted((root / "notebooks").glob("*.ipynb"))


def source_lines(text: str) -> list[str]:
    """A cell's ``source`` as nbformat stores it: one string per line, each but the last ending in a newline."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def dump(nb: dict[str, Any]) -> str:
    """The notebook as committed: JSON indented by one, non-ASCII kept, a final newline."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def repository_url(root: Path = ROOT) -> str:
    """The repository URL, from ``[project.urls] Repository`` in pyproject.toml."""
    data = tomllib.loads((root / "pyproject.toml").read_text())
    try:
        url = str(data["project"]["urls"]["Repository"])
    except KeyError:
        raise SystemExit("pyproject.toml has no [project.urls] Repository") from None
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise SystemExit(f"[project.urls] Repository must be https://github.com/<owner>/<name>, got {url!r}")
    return url


def emulator_pins(root: Path = ROOT) -> list[str]:
    """``name==version`` for each of :data:`EMULATOR_PACKAGES`, exactly as requirements.txt pins it."""
    pins: dict[str, str] = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s#]+)\s*(#.*)?", line.strip())
        if m:
            pins[m[1].lower()] = f"{m[1]}=={m[2]}"
    missing = [p for p in EMULATOR_PACKAGES if p.lower() not in pins]
    if missing:
        raise SystemExit(f"requirements.txt pins none of: {', '.join(missing)}")
    return [pins[p.lower()] for p in EMULATOR_PACKAGES]


def cells(root: Path = ROOT) -> list[dict[str, Any]]:
    """The two setup cells: the explanation (markdown) and the install (code)."""
    url = repository_url(root)
    pins = emulator_pins(root)
    torch_pins = " + ".join(f"`{p}`" for p in pins[:2])
    markdown = f"""\
> **Running this in Colab?** Run the next cell first; anywhere else it does nothing (`make venv` installed
> everything). On a **CPU or GPU runtime** it installs {torch_pins} (the emulator: the real XLA compiler
> on the host CPU, behind `target = "tpu"` and `"neuron"`) with the few libraries the chapters use, and the toolkit
> from a clone of the repository (some chapters read its `examples/`), then restarts the runtime, because Colab
> had already imported its own torch: after the restart, run all cells again. On a **TPU runtime** it installs
> [`requirements-tpu.txt`]({url}/blob/main/requirements-tpu.txt) (TorchTPU 0.2.0 and the torch it needs)
> instead; `target = "tpu"` and `target = "auto"` then run on the TPU itself."""
    code = f'''\
# Colab setup, written by scripts/colab_cell.py from pyproject.toml and requirements.txt. Does nothing elsewhere.
import glob, importlib.util, os, subprocess, sys

REPOSITORY, CLONE = "{url}", "/content/xlaport"
EMULATOR = {pins!r}
if "google.colab" in sys.modules and importlib.util.find_spec("xlaport") is None:
    # A TPU runtime shows Google's PCI vendor id; nothing here starts the TPU (xlaport.detect makes the same check).
    on_tpu = any(open(v).read().strip() == "{GOOGLE_PCI_VENDOR}" for v in glob.glob("/sys/bus/pci/devices/*/vendor"))
    # A clone, not a bare install: some chapters read the repository's examples/ (xlaport.notebook.example finds them).
    subprocess.run(["git", "clone", "-q", "--depth", "1", REPOSITORY, CLONE], check=True)
    deps = ["-r", f"{{CLONE}}/requirements-tpu.txt"] if on_tpu else EMULATOR
    print("TPU" if on_tpu else "CPU/GPU", "runtime: installing", " ".join(deps), "and xlaport from", CLONE)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *deps, "-e", CLONE], check=True)
    print("Installed. Restarting the runtime so that the new torch is imported: then run all cells again.")
    os.kill(os.getpid(), 9)'''
    meta = {"tags": [TAG]}
    return [
        {
            "cell_type": "markdown",
            "id": "colab-setup-md",
            "metadata": meta,
            "source": source_lines(markdown.strip("\n")),
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "colab-setup-code",
            "metadata": {"tags": [TAG, "hide-input"]},
            "outputs": [],
            "source": source_lines(code.strip("\n")),
        },
    ]


def _is_old_setup(cell: dict[str, Any]) -> bool:
    """The hand-copied cell this script replaced (``remove-cell``, pip install on Colab)."""
    src = "".join(cell.get("source", []))
    return cell["cell_type"] == "code" and "google.colab" in src and "pip" in src


def apply(nb: dict[str, Any], setup: list[dict[str, Any]]) -> dict[str, Any]:
    """``nb`` with its setup cells replaced by ``setup``, right after the title cell."""
    body = [c for c in nb["cells"] if TAG not in c.get("metadata", {}).get("tags", []) and not _is_old_setup(c)]
    if not body or body[0]["cell_type"] != "markdown" or not "".join(body[0]["source"]).startswith("# "):
        raise SystemExit("the first cell must be the chapter's '# Title' markdown cell")
    ids = {c.get("id") for c in body}
    clash = [c["id"] for c in setup if c["id"] in ids]
    if clash:
        raise SystemExit(f"cell id(s) {clash} already used by other cells")
    out = dict(nb)
    out["cells"] = [body[0], *copy.deepcopy(setup), *body[1:]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook's cells are stale")
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    args = ap.parse_args(argv)
    setup = cells()
    stale = []
    for path in args.notebooks or chapters():
        nb = json.loads(path.read_text())
        new = dump(apply(nb, setup))
        if new != path.read_text():
            stale.append(path.name)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"Colab setup cells are stale in: {', '.join(stale)} (run: python scripts/colab_cell.py)")
        return 1
    if not args.check:
        print(f"rewrote {len(stale)} notebook(s)" if stale else "all notebooks up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
