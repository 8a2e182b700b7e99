"""Reader editions (scripts/reader_editions.py): each chapter as a plain notebook for Colab and Jupyter.

* the converter on small synthetic notebooks, one markup kind at a time, and its one-line errors;
* every executed chapter present in _build/executed/notebooks (complete copies only: others may be running): parsed
  as CommonMark, no MyST role or directive is left, and its code cells are the source notebook's, unchanged, except
  the solutions, which are folded markdown;
* the site's extension on a tiny Sphinx project: the edition is written into the built site with links from the
  build's own titles and glossary anchors, and the Colab button opens it;
* two editions rendered by ``jupyter nbconvert --to html`` and shot in Chromium at phone and desktop width, with no
  raw markup in the rendered text (screenshots in _build/screenshots/editions/).
"""

from __future__ import annotations

import base64
import itertools
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml
from markdown_it import MarkdownIt
from sphinx_project import build, code, glue, md, notebook, stream

from conftest import script

editions = script("reader_editions")
ROOT = Path(__file__).resolve().parents[2]
EXECUTED = ROOT / "_build" / "executed" / "notebooks"
SHOTS = ROOT / "_build" / "screenshots" / "editions"
BASE = "https://xlaport.github.io/xlaport/"
REPO = "https://github.com/xlaport/xlaport"
SKIP_TAGS = {"skip-execution", "remove-cell"}
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture
def inv() -> object:
    return editions.Inventory(
        base=BASE,
        repo=REPO,
        titles={"notebooks/ch": "A chapter", "notebooks/other": "Another chapter", "book/emulation": "The emulator"},
        labels={"evidence-x": ("book/evidence/wheel", "evidence-x", "What the wheel says")},
        terms={"xla": ("book/glossary", "term-XLA"), "lazy tensor": ("book/glossary", "term-lazy-tensor")},
    )


def _convert(inv: object, *cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return editions.convert(notebook(*cells), "notebooks/ch", inv)


def _markdown(nb: nbformat.NotebookNode) -> str:
    if nb.get("cell_type") == "markdown":
        return str(nb.source)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


# --- the converter, one markup kind at a time -----------------------------------------------------------------------


def test_glue_roles_become_the_published_values_formatted(inv: object) -> None:
    nb = _convert(
        inv,
        code(
            "glue(...)",
            [glue("gap", "0.012345"), glue("n", "12345"), glue("zero", "0.0"), glue("price", "'$12.29/h'")],
        ),
        code("glue(...)", [glue("story", "'x'", markdown="1 program compiled, `tpu` first")]),
        md(
            "Gap {glue:text}`gap:.2f`, count {glue:text}`n:,`, zero {glue:text}`zero:.1e`, price "
            "{glue:text}`price`; {glue:md}`story` and {glue}`n`."
        ),
    )
    text = _markdown(nb)
    assert "Gap 0.01, count 12,345, zero 0, price \\$12.29/h; 1 program compiled, `tpu` first and 12345." in text
    assert "{glue" not in text
    # said once, near the top: the numbers are the published run's
    assert nb.cells[1].metadata["tags"] == ["reader-edition"] and "published run" in nb.cells[1].source
    assert sum("published run" in c.source for c in nb.cells if c.cell_type == "markdown") == 1


def test_cross_references_become_links_to_the_published_pages(inv: object) -> None:
    text = _markdown(
        _convert(
            inv,
            md(
                "See {doc}`../book/emulation`, {doc}`the other one <other>`, {ref}`evidence <evidence-x>`, "
                "{ref}`evidence-x`, {numref}`Figure %s <evidence-x>`, {term}`XLA`, {term}`lazy tensors <lazy tensor>`, "
                "[a page](other.md), [a section](../book/emulation.md#why), [a file](../requirements-tpu.txt), "
                "![a plot](figures/loss.png), "
                "[outside](https://example.org/x.md) and `{doc}` in code."
            ),
        )
    )
    for expected in (
        f"[The emulator]({BASE}book/emulation.html)",
        f"[the other one]({BASE}notebooks/other.html)",
        f"[evidence]({BASE}book/evidence/wheel.html#evidence-x)",
        f"[What the wheel says]({BASE}book/evidence/wheel.html#evidence-x)",
        f"[Figure What the wheel says]({BASE}book/evidence/wheel.html#evidence-x)",
        f"[XLA]({BASE}book/glossary.html#term-XLA)",
        f"[lazy tensors]({BASE}book/glossary.html#term-lazy-tensor)",
        f"[a page]({BASE}notebooks/other.html)",
        f"[a section]({BASE}book/emulation.html#why)",
        f"[a file]({REPO}/blob/main/requirements-tpu.txt)",
        "![a plot](https://raw.githubusercontent.com/xlaport/xlaport/main/notebooks/figures/loss.png)",
        "[outside](https://example.org/x.md)",
        "`{doc}` in code",
    ):
        assert expected in text, f"{expected!r} not in {text!r}"


def test_admonitions_become_quoted_blocks_with_a_bold_title(inv: object) -> None:
    text = _markdown(
        _convert(
            inv,
            md(
                "````{admonition} Where this runs\n:class: tip\nOn a CPU, with {term}`XLA`.\n\n"
                "```python\nx = 1\n```\n````\n\n:::{note}\nA plain note.\n:::\n\n:::{warning} Careful here.\n:::"
            ),
        ).cells[-1]
    ).split("\n\n> **Note**")[0]
    assert text.splitlines()[0:3] == [
        "> **Where this runs**",
        ">",
        f"> On a CPU, with [XLA]({BASE}book/glossary.html#term-XLA).",
    ]
    assert "> ```python\n> x = 1\n> ```" in text
    everything = _markdown(_convert(inv, md(":::{note}\nA plain note.\n:::\n\n:::{warning} Careful here.\n:::")))
    assert "> **Note**\n>\n> A plain note." in everything
    assert "> **Warning**\n>\n> Careful here." in everything
    assert ":class:" not in text and ":::" not in everything


def test_tab_sets_become_one_part_per_backend(inv: object) -> None:
    text = _markdown(
        _convert(
            inv,
            md(
                "## Port\n\n::::{tab-set}\n:sync-group: backend\n\n"
                + "".join(
                    f":::{{tab-item}} {b}\n:sync: {b.lower()}\n```python\nrun('{b}')\n```\n:::\n\n"
                    for b in ("CUDA", "TPU", "Trainium")
                )
                + "::::\n\nAfter the tabs."
            ),
        )
    )
    for b in ("CUDA", "TPU", "Trainium"):
        assert f"**{b}**\n\n```python\nrun('{b}')\n```" in text
    assert text.index("**CUDA**") < text.index("**TPU**") < text.index("**Trainium**") < text.index("After the tabs.")
    assert ":sync" not in text and "tab-" not in text


def test_exercises_are_numbered_headings_and_solutions_fold_without_a_code_cell(inv: object) -> None:
    nb = _convert(
        inv,
        md("## Exercises"),
        md("```{exercise} Port the loop\n:label: ch-loop\n\nWrite `answer`.\n```"),
        code("answer = None\nprint(check(answer))"),
        md("```{solution-start} ch-loop\n:class: dropdown\n```\n\nDelete the stream code."),
        code("def solved():\n    return 1"),
        md("```{solution-end}\n```"),
        md("```{exercise} Count the chips\n:label: ch-chips\n\nHow many?\n```"),
        md("```{solution} ch-chips\n:class: dropdown\nSixteen.\n```"),
    )
    text = _markdown(nb)
    assert "### Exercise 1: Port the loop\n\nWrite `answer`." in text
    assert "### Exercise 2: Count the chips\n\nHow many?" in text
    assert (
        "<details>\n<summary>Solution to exercise 1</summary>\n\nDelete the stream code.\n\n"
        "```python\ndef solved():\n    return 1\n```\n\n</details>"
    ) in text
    assert "<details>\n<summary>Solution to exercise 2</summary>\n\nSixteen.\n\n</details>" in text
    assert editions.code_cells(nb) == ["answer = None\nprint(check(answer))"]  # the solution is no cell that runs
    assert ":label:" not in text and "solution-" not in text


def test_glue_figures_become_attached_images(inv: object) -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    out = nbformat.v4.new_output(
        "display_data",
        data={"application/papermill.record/image/png": png, "application/papermill.record/text/plain": "<Figure>"},
        metadata={"scrapbook": {"name": "fig", "mime_prefix": "application/papermill.record/"}},
    )
    nb = _convert(inv, code("glue('fig', f)", [out]), md("```{glue:figure} fig\n:name: fig-loss\n\nThe losses.\n```"))
    cell = next(c for c in nb.cells if "attachment:" in c.source)
    assert "![The losses.](attachment:fig.png)" in cell.source and "*The losses.*" in cell.source
    assert cell.attachments == {"fig.png": {"image/png": png}}


def test_code_cells_unchanged_outputs_cleared_setup_cells_as_they_are(inv: object) -> None:
    setup_md = md("> **Running this in Colab?** Run the next cell first {glue:text}`kept`.", tags=["colab-setup"])
    setup = code("import sys  # Colab setup", tags=["colab-setup", "hide-input"])
    source = notebook(setup_md, setup, code("x = 1\nprint(x)", [stream("1\n")], tags=["parameters"]))
    nb = editions.convert(source, "notebooks/ch", inv)
    assert editions.code_cells(nb) == ["import sys  # Colab setup", "x = 1\nprint(x)"]
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")
    kept = [c for c in nb.cells if "colab-setup" in c.metadata.get("tags", [])]
    assert [c.source for c in kept] == [setup_md.source, setup.source]
    assert kept[1].metadata["tags"] == ["colab-setup", "hide-input"]


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (md("{glue:text}`missing:.2f`"), "no glued value 'missing'"),
        (md("{doc}`nowhere`"), "no page of the book"),
        (md("{term}`Pallas`"), "not in the glossary"),
        (md("```{list-table}\n* - a\n```"), "the directive {list-table} has no plain-markdown form"),
        (md("{cite}`paper`"), "the role {cite} has no plain-markdown form"),
        (md("```{solution-start} x\n```"), "without a {solution-end}"),
    ],
)
def test_what_cannot_be_converted_is_named_in_one_line(inv: object, cell: nbformat.NotebookNode, message: str) -> None:
    with pytest.raises(editions.EditionError, match=re.escape(message)) as err:
        _convert(inv, cell)
    assert str(err.value).startswith("notebooks/ch, cell 1: ") or "solution-end" in message
    assert "\n" not in str(err.value)


def test_leftover_check_finds_what_commonmark_would_show_raw() -> None:
    raw = notebook(
        md("Gap {glue:text}`gap:.2f` and {term}`XLA`."),
        md(":::{note}\nText.\n:::"),
        md("```{exercise} T\n:label: x\n```"),
    )
    found = editions.leftovers(raw)
    assert any("role {glue:text}`gap:.2f`" in f for f in found) and any("role {term}`XLA`" in f for f in found)
    assert any("directive line ':::{note}'" in f for f in found)
    assert any("directive fence ```{exercise}" in f for f in found)


def test_published_where_the_workflow_pushes_them() -> None:
    assert editions.site_url(REPO) == BASE
    url = editions.colab_url("distributed", REPO)
    assert (
        url
        == f"https://colab.research.google.com/github/xlaport/xlaport/blob/{editions.BRANCH}/notebooks/distributed.ipynb"
    )
    pages = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    steps = [s for job in pages["jobs"].values() for s in job.get("steps", [])]
    kept = next(s for s in steps if s.get("with", {}).get("name") == "reader-editions" and "upload" in s["uses"])
    assert kept["with"]["path"] == "_build/html/editions"  # where the site's extension writes them
    push = next(s for s in steps if "git push" in s.get("run", ""))
    assert f"HEAD:refs/heads/{editions.BRANCH}" in push["run"] and f"{editions.FOLDER}/" not in push["run"]
    assert pages["jobs"]["editions"]["permissions"] == {"contents": "write"}
    run = yaml.safe_load((ROOT / ".github" / "workflows" / "editions.yml").read_text())
    assert run[True]["schedule"] and "make editions-run" in str(run["jobs"])  # 'on' reads as True in YAML 1.1


# --- every edition of the executed chapters -------------------------------------------------------------------------


def _solution_cells(nb: nbformat.NotebookNode) -> set[int]:
    inside, found = False, set()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            if "{solution-start}" in cell.source:
                inside = True
            if "{solution-end}" in cell.source:
                inside = False
        elif inside:
            found.add(i)
    return found


def _complete(path: Path) -> str | None:
    """Why an executed copy cannot stand for its chapter right now (a run in progress, an older run), or None."""
    source = ROOT / "notebooks" / path.name
    if not path.exists():
        return "missing (run the chapter first)"
    try:
        done = nbformat.read(path, as_version=4)
    except Exception as exc:
        return f"unreadable ({type(exc).__name__})"
    if not source.exists():
        return "no source notebook"
    src = nbformat.read(source, as_version=4)
    if [c.source for c in done.cells if c.cell_type == "code"] != [
        c.source for c in src.cells if c.cell_type == "code"
    ]:
        return "executed before the notebook last changed"
    for c in done.cells:
        if c.cell_type == "code" and c.execution_count is None and not set(c.metadata.get("tags", [])) & SKIP_TAGS:
            return "not run to the end"
    return None


def _executed() -> list[Path]:
    return sorted(EXECUTED.glob("*.ipynb")) if EXECUTED.is_dir() else []


@pytest.fixture(scope="module")
def book_inventory() -> object:
    return editions.Inventory.from_sources()


@pytest.mark.built
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_edition_is_plain_markdown_with_the_chapters_code(
    book_inventory: object, chapter: Path, tmp_path: Path
) -> None:
    # One case per chapter, its executed copy looked up when the test runs (marked `built`: make test runs it after
    # the chapters have run and the site is built).
    path = EXECUTED / chapter.name
    if why := _complete(path):
        pytest.skip(f"{path.stem}: executed copy {why}")
    out = editions.write_edition(path, tmp_path, book_inventory)
    edition = nbformat.read(out, as_version=4)
    nbformat.validate(edition)
    source = nbformat.read(ROOT / "notebooks" / path.name, as_version=4)
    solutions = _solution_cells(source)
    expected = [c.source for i, c in enumerate(source.cells) if c.cell_type == "code" and i not in solutions]
    assert editions.code_cells(edition) == expected
    assert all(not c.outputs and c.execution_count is None for c in edition.cells if c.cell_type == "code")
    # Parsed as Colab and Jupyter parse it (CommonMark), nothing of the book's syntax is left.
    cm = MarkdownIt("commonmark")
    for i, cell in enumerate(edition.cells):
        if cell.cell_type != "markdown":
            continue
        for tok in cm.parse(cell.source):
            assert not (tok.type == "fence" and tok.info.strip().startswith("{")), f"cell {i}: directive {tok.info}"
            if tok.type == "inline":
                assert not re.search(r"^\s*(:{3,}|:[\w-]+:\s)", tok.content, re.M), f"cell {i}: {tok.content[:200]}"
                kids = tok.children or []
                for a, b in itertools.pairwise(kids):
                    assert not (
                        a.type == "text" and b.type == "code_inline" and re.search(r"\{[\w:+.-]+\}$", a.content)
                    ), f"cell {i}: role left: {a.content[-30:]}`{b.content}`"
    assert editions.leftovers(edition) == []
    n_solutions = sum("{solution-start}" in c.source for c in source.cells if c.cell_type == "markdown")
    assert sum(c.source.count("<details>") for c in edition.cells if c.cell_type == "markdown") >= n_solutions


_GLUED = re.compile(r"\{glue(?::\w*)?\}`(?P<role>[^`]+)`|^[`:]{3,}\{glue(?::\w*)?\}\s*(?P<block>\S+)", re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapters_markup_converts(book_inventory: object, path: Path) -> None:
    """Whatever the state of its run: every role and directive a chapter uses has a plain form (each glued value
    stands in as 1)."""
    nb = nbformat.read(path, as_version=4)
    keys = set()
    for cell in nb.cells:
        for m in _GLUED.finditer(cell.source if cell.cell_type == "markdown" else ""):
            keys.add((m["role"] or m["block"]).split("::")[-1].split(":")[0])
    nb.cells.insert(0, code("# the run's values", [glue(k, "1", markdown="1") for k in sorted(keys)]))
    edition = editions.convert(nb, f"notebooks/{path.stem}", book_inventory)
    assert editions.leftovers(edition) == []
    solutions = _solution_cells(nb)
    assert editions.code_cells(edition) == [
        c.source for i, c in enumerate(nb.cells) if c.cell_type == "code" and i not in solutions
    ]


# --- the site's extension on a tiny project ---------------------------------------------------------------------------


def test_the_site_build_writes_editions_and_points_colab_at_them(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    chapter = notebook(
        code("glue('n', 3)", [glue("n", "3")]),
        md("We ran {glue:text}`n` steps on {term}`lazy tensors <lazy tensor>`; see {doc}`../other` and {ref}`why`."),
        md("```{exercise} Try it\n:label: ch-try\n\nDo it.\n```"),
        md("```{solution-start} ch-try\n```"),
        code("print('solved')"),
        md("```{solution-end}\n```"),
        title="The chapter",
    )
    conf = (
        "extensions += ['sphinx_exercise']\nhtml_theme = 'sphinx_book_theme'\n"
        "html_theme_options = {'repository_url': 'https://github.com/xlaport/xlaport', 'repository_branch': 'main',"
        " 'launch_buttons': {'colab_url': 'https://colab.research.google.com'}}\nxlaport_editions = 'editions'\n"
    )
    warnings = build(tmp_path, {"notebooks/ch.ipynb": chapter, "other.md": "(why)=\n# Other page\n\nText.\n"}, conf)
    assert not [w for w in warnings if w.kind == "edition"], warnings
    edition = nbformat.read(tmp_path / "_build" / "editions" / "notebooks" / "ch.ipynb", as_version=4)
    text = _markdown(edition)
    assert "We ran 3 steps on [lazy tensors](https://xlaport.github.io/xlaport/glossary.html#term-lazy-tensor)" in text
    assert "[Other page](https://xlaport.github.io/xlaport/other.html)" in text
    assert "[Other page](https://xlaport.github.io/xlaport/other.html#why)" in text
    assert "### Exercise 1: Try it" in text or "## Exercise 1: Try it" in text
    assert editions.code_cells(edition) == ["glue('n', 3)"]
    # the anchor the edition links to is the one Sphinx gave the glossary term
    assert 'id="term-lazy-tensor"' in (tmp_path / "_build" / "glossary.html").read_text()
    page = (tmp_path / "_build" / "notebooks" / "ch.html").read_text()
    links = set(re.findall(r'href="(https://colab\.research\.google\.com[^"]*)"', page))
    assert links == {editions.colab_url("ch")}, links


# --- rendered as Jupyter renders it -----------------------------------------------------------------------------------

CHROMIUM = os.environ.get("XLAPORT_CHROMIUM") or shutil.which("chromium") or shutil.which("google-chrome")


@pytest.mark.browser
@pytest.mark.built
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH")
def test_two_editions_render_without_raw_markup(book_inventory: object, tmp_path: Path) -> None:
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright

    ready = [p for p in _executed() if _complete(p) is None]
    prefer = [p for p in ready if p.stem in ("distributed", "port_training")]
    chosen = (prefer + [p for p in ready if p not in prefer])[:2]
    if len(chosen) < 2:
        pytest.skip(f"fewer than two complete executed chapters in {EXECUTED}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for path in chosen:
            out = editions.write_edition(path, tmp_path, book_inventory)
            html = tmp_path / f"{path.stem}.html"  # as `jupyter nbconvert --to html` writes it, without its start-up
            html.write_text(HTMLExporter().from_filename(str(out))[0], encoding="utf-8")
            n_solutions = _markdown(nbformat.read(out, as_version=4)).count("<details>")
            for name, viewport in (
                ("phone", {"width": 390, "height": 844}),
                ("desktop", {"width": 1366, "height": 900}),
            ):
                page = browser.new_page(viewport=viewport)
                page.route("http*://**", lambda route: route.abort())  # offline: CDN scripts fail fast
                page.goto(html.as_uri(), wait_until="domcontentloaded")
                text = page.inner_text("body")
                for raw in (
                    "{glue",
                    ":::",
                    ":label:",
                    "{doc}",
                    "{term}",
                    "{ref}",
                    "{exercise}",
                    "{solution",
                    "tab-item",
                ):
                    assert raw not in text, f"{path.stem} ({name}): {raw!r} shows in the rendered edition"
                assert page.locator("details").count() == n_solutions
                assert "published run" in text
                page.screenshot(path=str(SHOTS / f"{path.stem}-{name}.png"), full_page=False)
                page.close()
        browser.close()
