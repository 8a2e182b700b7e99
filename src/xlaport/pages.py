"""The book's pages the toolkit points readers to: each page's title and its address on the published site.

A scan rule names its chapter by path (``notebooks/port_training``); a report shows the reader that chapter's title,
linked, never the path. ``tests/unit/test_pages.py`` checks every title against the page's own heading and the
repository against pyproject.toml and _config.yml. The site's extension publishes each chapter's reader edition
for Colab and Jupyter where :func:`colab_url` points. Torch-free.
"""

from __future__ import annotations

__all__ = [
    "EDITIONS_BRANCH",
    "EDITIONS_FOLDER",
    "REPOSITORY",
    "SITE",
    "TITLES",
    "colab_url",
    "link",
    "site_of",
    "title",
    "url",
]

REPOSITORY = "https://github.com/xlaport/xlaport"
# The branch the Pages workflow pushes the reader editions to (.github/workflows/pages.yml), and the folder in it.
EDITIONS_BRANCH = "editions"
EDITIONS_FOLDER = "notebooks"


def _owner_repo(repository: str) -> tuple[str, str]:
    parts = repository.rstrip("/").split("/")
    if len(parts) != 5 or parts[2] != "github.com" or not all(parts[3:]):
        raise ValueError(f"not a GitHub repository address: {repository!r}")
    return parts[3], parts[4]


def site_of(repository: str) -> str:
    """Where GitHub Pages publishes a repository's site: ``https://<owner>.github.io/<repo>/``."""
    owner, name = _owner_repo(repository)
    return f"https://{owner.lower()}.github.io/{name}/"


def colab_url(stem: str, repository: str = REPOSITORY) -> str:
    """Where Colab opens a chapter's reader edition: the editions branch the Pages workflow pushes."""
    owner, name = _owner_repo(repository)
    return (
        f"https://colab.research.google.com/github/{owner}/{name}/blob/{EDITIONS_BRANCH}/{EDITIONS_FOLDER}/{stem}.ipynb"
    )


SITE = site_of(REPOSITORY)

TITLES: dict[str, str] = {
    "book/generated/api_mapping": "API mapping: `torch.cuda` to `torch.accelerator`, TorchTPU and TorchNeuron",
    "book/generated/kernel_concepts": "Kernel concepts: Triton to Pallas and NKI",
    "book/pitfalls": "Pitfalls",
    "book/support_matrix": "Support matrix",
    "notebooks/01_first_steps": "First steps: one small CNN on CUDA, TPU and Trainium",
    "notebooks/custom_kernels": "Custom kernels: a Triton kernel ported to Pallas and NKI, run on a CPU",
    "notebooks/op_fallbacks": "Op fallbacks: `cholesky_ex` and `unique_dim` on TPU and Trainium",
    "notebooks/port_inference": "Porting a generation loop: from a growing KV cache to static shapes",
    "notebooks/port_training": "Porting a GPT training script to TPU and Trainium",
    "notebooks/recompile_storms": "Recompile storms: one compile per input shape",
    "notebooks/sd3_view_offsets": "SD3 view offsets: one compile per denoising step",
}


def title(page: str) -> str:
    """The page's title (its first heading), as markdown; ``ValueError`` for a page the book does not have."""
    try:
        return TITLES[page]
    except KeyError:
        raise ValueError(f"no book page {page!r}; known: {', '.join(sorted(TITLES))}") from None


def url(page: str) -> str:
    """The page's address on the published site."""
    title(page)
    return f"{SITE}{page}.html"


def link(page: str) -> str:
    """A markdown link to the page, its title as the text."""
    return f"[{title(page)}]({url(page)})"
