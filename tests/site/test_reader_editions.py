"""Reader editions (_ext/xlaport_site/editions.py): each chapter as a plain notebook for Colab and Jupyter, written
by the site's extension from the chapter's resolved doctree.

* a small Sphinx project with one chapter that uses every kind of markup the chapters use, built once: each kind
  becomes plain markdown, the code cells are the notebook's, and a node with no plain form is named in a warning;
* every edition of the built site (marked ``built``): parsed as CommonMark, no MyST role or directive is left, the
  code cells are the source notebook's, unchanged, except the solutions, which are folded markdown;
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
from sphinx_project import Warning, build, code, glue, md, notebook, stream

from xlaport import pages

ROOT = Path(__file__).resolve().parents[2]
SITE = os.environ.get("XLAPORT_SITE_DIR")
SHOTS = ROOT / "_build" / "screenshots" / "editions"
BASE = "https://xlaport.github.io/xlaport/"
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()
CONF = (
    "extensions += ['sphinx_exercise', 'sphinx_design']\nhtml_theme = 'sphinx_book_theme'\n"
    "html_theme_options = {'repository_url': 'https://github.com/xlaport/xlaport', 'repository_branch': 'main',"
    " 'launch_buttons': {'colab_url': 'https://colab.research.google.com'}}\nxlaport_editions = 'editions'\n"
    "numfig = True\nnumfig_secnum_depth = 0\n"  # as the book: exercises numbered through it
)
SETUP_MD = "> **Running this in Colab?** Run the next cell first."
SETUP_CODE = "import sys  # Colab setup"
TABS = (
    "::::{tab-set}\n:sync-group: backend\n\n"
    + "".join(f":::{{tab-item}} {b}\n:sync: {b.lower()}\n```python\nrun('{b}')\n```\n:::\n\n" for b in ("CUDA", "TPU"))
    + "::::\n\nAfter the tabs."
)


def _figure() -> nbformat.NotebookNode:
    return nbformat.v4.new_output(
        "display_data",
        data={"application/papermill.record/image/png": PNG, "application/papermill.record/text/plain": "<Figure>"},
        metadata={"scrapbook": {"name": "fig", "mime_prefix": "application/papermill.record/"}},
    )


def _make_chapter() -> nbformat.NotebookNode:
    values = [glue("gap", "0.012345"), glue("n", "12345"), glue("zero", "0.0"), glue("price", "'$12.29/h'")]
    return notebook(
        md(SETUP_MD, tags=["colab-setup"]),
        code(SETUP_CODE, tags=["colab-setup", "hide-input"]),
        code("x = 1\nprint(x)", [stream("1\n")], tags=["parameters"]),
        code("glue(...)", [*values, glue("story", "'x'", markdown="1 program compiled, `tpu` first"), _figure()]),
        md(
            "## Numbers\n\nGap {glue:text}`gap:.2f`, count {glue:text}`n:,`, zero {glue:text}`zero:.1e`, price "
            "{glue:text}`price`; {glue:md}`story`."
        ),
        md(
            "(links)=\n## Links\n\nSee {doc}`../other`, {doc}`the other page <../other>`, {ref}`why`, "
            "{ref}`the reason <why>`, {term}`XLA`, {term}`lazy tensors <lazy tensor>`, "
            "[outside](https://example.org/x.md), [back](#links) and `{doc}` in code, $a^2$."
        ),
        md(
            "````{admonition} Where this runs\n:class: tip\nOn a CPU, with {term}`XLA`.\n\n```python\nx = 1\n```\n````"
            "\n\n:::{note}\nA plain note.\n:::\n\n:::{warning}\nCareful here.\n:::"
        ),
        md("## Port\n\n" + TABS),
        md(
            "| policy | shapes |\n|---|--:|\n| longest | 10 |\n| a `x\\|y` bar | 2 |\n\n- one\n- two\n\n1. first\n2. second"
        ),
        md("```{glue:figure} fig\n:name: fig-loss\n\nThe losses.\n```"),
        md("## Exercises"),
        md("```{exercise} Port the loop\n:label: ch-loop\n\nWrite `answer`.\n```"),
        code("answer = None\nprint(check(answer))"),
        md("```{solution-start} ch-loop\n:class: dropdown\n```\n\nDelete the stream code."),
        code("def solved():\n    return 1"),
        md("```{solution-end}\n```"),
        md("```{exercise} Count the chips\n:label: ch-chips\n\nHow many?\n```"),
        md("```{solution} ch-chips\n:class: dropdown\nSixteen.\n```"),
        title="The chapter",
    )


_CHAPTER = _make_chapter()


def _chapter() -> nbformat.NotebookNode:
    return _CHAPTER


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Warning]]:
    src = tmp_path_factory.mktemp("book")
    (src / "notebooks").mkdir()
    bad = notebook(md("A footnote[^1].\n\n[^1]: The note."), code("y = 2"), title="Bad")
    lead = nbformat.v4.new_notebook(
        cells=[md("# Led\n\nThe lead.\n\n:::{note}\nWhere this runs.\n:::"), code("z = 3")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    other = "(why)=\n# Other page\n\nText.\n"
    pages = {
        "notebooks/ch.ipynb": _chapter(),
        "notebooks/bad.ipynb": bad,
        "notebooks/led.ipynb": lead,
        "other.md": other,
    }
    warnings = build(src, pages, CONF)
    return src / "_build", warnings


@pytest.fixture(scope="module")
def edition(built: tuple[Path, list[Warning]]) -> nbformat.NotebookNode:
    return nbformat.read(built[0] / "editions" / "notebooks" / "ch.ipynb", as_version=4)


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _code(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def leftovers(nb: nbformat.NotebookNode) -> list[str]:
    """Book markup a CommonMark renderer (Colab, Jupyter) would show as text: roles, directive fences and options."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for tok in MarkdownIt("commonmark").parse(cell.source):
            if tok.type == "fence" and tok.info.strip().startswith("{"):
                found.append(f"cell {i}: directive fence {tok.markup}{tok.info.strip()}")
            for line in (tok.content or "").splitlines() if tok.type in ("inline", "html_block") else []:
                if re.match(r"\s*:{3,}", line) or re.match(r"\s*:[\w-]+:(\s|$)", line):
                    found.append(f"cell {i}: directive line {line.strip()!r}")
            for a, b in itertools.pairwise(tok.children or []):
                if a.type == "text" and b.type == "code_inline" and re.search(r"\{[\w:+.-]+\}$", a.content):
                    found.append(f"cell {i}: role {a.content[-30:]}`{b.content}`")
    return found


# --- each kind of markup, from the small project ---------------------------------------------------------------------


def test_the_build_writes_the_edition_without_warnings(built: tuple[Path, list[Warning]]) -> None:
    out, warnings = built
    assert [w for w in warnings if w.doc == "ch" and w.kind == "edition"] == []
    assert (out / "editions" / "notebooks" / "ch.ipynb").is_file()


def test_glued_values_read_as_the_page_shows_them(edition: nbformat.NotebookNode) -> None:
    text = _markdown(edition)
    # formatted as the role says, an exact zero as 0 (the site's post-transform), a dollar escaped for Jupyter
    assert "Gap 0.01, count 12,345, zero 0, price \\$12.29/h; 1 program compiled, `tpu` first." in text
    assert "{glue" not in text
    # said once, after the title: the numbers are the published run's
    assert edition.cells[1].metadata["tags"] == ["reader-edition"] and "published run" in edition.cells[1].source
    assert sum("published run" in c.source for c in edition.cells if c.cell_type == "markdown") == 1


def test_the_note_follows_the_title_and_the_lead(built: tuple[Path, list[Warning]]) -> None:
    nb = nbformat.read(built[0] / "editions" / "notebooks" / "led.ipynb", as_version=4)
    assert [c.source for c in nb.cells[:1]] == ["# Led\n\nThe lead."]
    assert nb.cells[1].metadata["tags"] == ["reader-edition"]
    assert nb.cells[2].source == "> **Note**\n>\n> Where this runs." and nb.cells[2].id != nb.cells[0].id
    note = nb.cells[1].source
    assert "tabs (CUDA, TPU, Trainium) are one titled part" in note and "copy its code into a cell" in note


def test_cross_references_become_links_to_the_published_pages(edition: nbformat.NotebookNode) -> None:
    text = _markdown(edition)
    for expected in (
        f"[Other page]({BASE}other.html)",
        f"[the other page]({BASE}other.html)",
        f"[Other page]({BASE}other.html#why)",
        f"[the reason]({BASE}other.html#why)",
        f"[XLA]({BASE}glossary.html#term-XLA)",
        f"[lazy tensors]({BASE}glossary.html#term-lazy-tensor)",
        "[outside](https://example.org/x.md)",
        f"[back]({BASE}notebooks/ch.html#links)",
        "`{doc}` in code",
        "$a^2$",
    ):
        assert expected in text, f"{expected!r} not in {text!r}"


def test_admonitions_become_quoted_blocks_with_a_bold_title(edition: nbformat.NotebookNode) -> None:
    text = _markdown(edition)
    assert f"> **Where this runs**\n>\n> On a CPU, with [XLA]({BASE}glossary.html#term-XLA).\n>\n> ```python" in text
    assert "> ```python\n> x = 1\n> ```" in text
    assert "> **Note**\n>\n> A plain note." in text
    assert "> **Warning**\n>\n> Careful here." in text
    assert ":class:" not in text and ":::" not in text


def test_tab_sets_become_one_part_per_backend(edition: nbformat.NotebookNode) -> None:
    text = _markdown(edition)
    for b in ("CUDA", "TPU"):
        assert f"### {b}\n\n```python\nrun('{b}')\n```" in text  # a part under its label, one level below "## Port"
    assert text.index("### CUDA") < text.index("### TPU") < text.index("After the tabs.")
    assert ":sync" not in text and "tab-" not in text


def test_tables_and_lists_stay_tables_and_lists(edition: nbformat.NotebookNode) -> None:
    text = _markdown(edition)
    assert "| policy | shapes |\n| --- | --: |\n| longest | 10 |\n| a `x\\|y` bar | 2 |" in text
    assert "- one\n- two" in text and "1. first\n2. second" in text


def test_exercises_are_numbered_as_on_the_site_and_solutions_fold_without_a_code_cell(
    built: tuple[Path, list[Warning]], edition: nbformat.NotebookNode
) -> None:
    text = _markdown(edition)
    page = (built[0] / "notebooks" / "ch.html").read_text(encoding="utf-8")
    numbers = re.findall(r"Exercise (\d+)", page)
    assert numbers[:2] == ["1", "1"], numbers  # the site's number, the edition's
    assert "### Exercise 1: Port the loop\n\nWrite `answer`." in text
    assert "### Exercise 2: Count the chips\n\nHow many?" in text
    assert (
        "<details>\n<summary>Solution to Exercise 1 (Port the loop)</summary>\n\nDelete the stream code.\n\n"
        "```python\ndef solved():\n    return 1\n```\n\n</details>"
    ) in text
    assert "<details>\n<summary>Solution to Exercise 2 (Count the chips)</summary>\n\nSixteen.\n\n</details>" in text
    assert "def solved" not in "".join(_code(edition))  # the solution is no cell that runs
    assert ":label:" not in text and "solution-" not in text


def test_glued_figures_become_attached_images(edition: nbformat.NotebookNode) -> None:
    cell = next(c for c in edition.cells if "attachment:" in c.source)
    name = re.search(r"\]\(attachment:([^)]+)\)", cell.source)[1]  # type: ignore[index]
    assert re.search(r"!\[Plot: [^]]+\]\(attachment:", cell.source) and "*The losses.*" in cell.source
    assert cell.attachments[name]["image/png"] == PNG


def test_code_cells_unchanged_outputs_cleared_setup_first(edition: nbformat.NotebookNode) -> None:
    chapter = _chapter()
    solutions = {i for i, c in enumerate(chapter.cells) if c.source.startswith("def solved")}
    assert _code(edition) == [
        c.source for i, c in enumerate(chapter.cells) if c.cell_type == "code" and i not in solutions
    ]
    assert all(c.outputs == [] and c.execution_count is None for c in edition.cells if c.cell_type == "code")
    setup = [c for c in edition.cells if "colab-setup" in c.metadata.get("tags", [])]
    assert [c.source for c in setup] == [SETUP_MD, SETUP_CODE]
    assert setup[1].metadata["tags"] == ["colab-setup", "hide-input"]
    assert next(c for c in edition.cells if c.cell_type == "code") is setup[1]  # the first cell that runs


def test_markdown_cells_split_where_the_notebooks_cells_are(edition: nbformat.NotebookNode) -> None:
    chapter = _chapter()
    ids = {c.id for c in chapter.cells}
    kept = [c for c in edition.cells if c.cell_type == "markdown" and c.id in ids]
    assert len(kept) >= 8 and len({c.id for c in edition.cells}) == len(edition.cells)
    title = edition.cells[0]
    assert title.source == "# The chapter" and title.id == chapter.cells[0].id
    assert leftovers(edition) == []


def test_markup_with_no_plain_form_is_named_and_gets_no_edition(built: tuple[Path, list[Warning]]) -> None:
    out, warnings = built
    found = [w for w in warnings if w.kind == "edition"]
    assert len(found) == 1 and found[0].doc == "bad", warnings
    assert "no reader edition: the node <footnote_reference" in found[0].message
    assert "\n" not in found[0].message
    assert not (out / "editions" / "notebooks" / "bad.ipynb").exists()


def test_the_colab_button_opens_the_edition(built: tuple[Path, list[Warning]]) -> None:
    page = (built[0] / "notebooks" / "ch.html").read_text(encoding="utf-8")
    links = set(re.findall(r'href="(https://colab\.research\.google\.com[^"]*)"', page))
    assert links == {pages.colab_url("ch")}, links
    # the anchor an edition links to is the one Sphinx gave the glossary term
    assert 'id="term-lazy-tensor"' in (built[0] / "glossary.html").read_text(encoding="utf-8")


def test_published_where_the_workflow_pushes_them() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job.get("steps", [])]
    kept = next(s for s in steps if s.get("with", {}).get("name") == "reader-editions" and "upload" in s["uses"])
    book = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert kept["with"]["path"] == f"_build/html/{book['sphinx']['config']['xlaport_editions']}"
    push = next(s for s in steps if "git push" in s.get("run", ""))
    assert f"HEAD:refs/heads/{pages.EDITIONS_BRANCH}" in push["run"] and f"{pages.EDITIONS_FOLDER}/" not in push["run"]
    assert workflow["jobs"]["editions"]["permissions"] == {"contents": "write"}
    run = yaml.safe_load((ROOT / ".github" / "workflows" / "editions.yml").read_text())
    assert run[True]["schedule"] and "make editions-run" in str(run["jobs"])  # 'on' reads as True in YAML 1.1


# --- every edition of the built site --------------------------------------------------------------------------------


def _site_edition(stem: str) -> Path:
    if not SITE:
        pytest.skip("the built site's editions are checked after the site build (make test)")
    path = Path(SITE) / "editions" / pages.EDITIONS_FOLDER / f"{stem}.ipynb"
    assert path.is_file(), f"the site build wrote no edition of {stem} at {path}"
    return path


def _solution_cells(nb: nbformat.NotebookNode) -> set[int]:
    inside, found = False, set()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            inside = ("{solution-start}" in cell.source or inside) and "{solution-end}" not in cell.source
        elif inside:
            found.add(i)
    return found


@pytest.mark.built
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_edition_is_plain_markdown_with_the_chapters_code(chapter: Path) -> None:
    edition = nbformat.read(_site_edition(chapter.stem), as_version=4)
    nbformat.validate(edition)
    source = nbformat.read(chapter, as_version=4)
    solutions = _solution_cells(source)
    expected = [c.source for i, c in enumerate(source.cells) if c.cell_type == "code" and i not in solutions]
    assert _code(edition) == expected
    assert all(not c.outputs and c.execution_count is None for c in edition.cells if c.cell_type == "code")
    first = next(c for c in edition.cells if c.cell_type == "code")
    assert "colab-setup" in first.metadata.get("tags", []), "the Colab setup cell is not the first cell that runs"
    assert leftovers(edition) == []
    n_solutions = sum("{solution-start}" in c.source for c in source.cells if c.cell_type == "markdown")
    assert sum(c.source.count("<details>") for c in edition.cells if c.cell_type == "markdown") >= n_solutions


# --- rendered as Jupyter renders it -----------------------------------------------------------------------------------

CHROMIUM = os.environ.get("XLAPORT_CHROMIUM") or shutil.which("chromium") or shutil.which("google-chrome")


@pytest.mark.browser
@pytest.mark.built
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH")
def test_two_editions_render_without_raw_markup(tmp_path: Path) -> None:
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright

    chosen = [_site_edition(stem) for stem in ("distributed", "port_training")]
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for path in chosen:
            html = tmp_path / f"{path.stem}.html"  # as `jupyter nbconvert --to html` writes it, without its start-up
            html.write_text(HTMLExporter().from_filename(str(path))[0], encoding="utf-8")
            n_solutions = _markdown(nbformat.read(path, as_version=4)).count("<details>")
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
