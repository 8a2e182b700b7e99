"""Each reader check of the site's Sphinx extension (_ext/xlaport_site) warns when its defect is reintroduced.

Two small MyST-NB projects are built in-process with the extension: one page per defect (each must raise its
``xlaport.<check>`` warning) and a clean project that exercises every allowed form (no warning at all).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sphinx_project import Warning, build, code, glue, md, notebook, result, stream

GLUED = [
    glue("k", "12.5"),
    glue("nanv", "nan"),
    glue("infv", "inf"),
    glue("ninf", "-inf"),
    glue("z", "0.0"),
    glue("ze", "0.0e+00"),
    glue("zz", "0e+00"),
    glue("n0", "-0.00e+00"),
    glue("md", "<Markdown>", markdown="1 program compiled"),
    glue("mdnan", "<Markdown>", markdown="ratio nan"),
]
PARAMS = code("steps = 20\nlr = 3.0\n", tags=["parameters"])
ALLOW = '[clean]\n"65504" = "torch.finfo(torch.float16).max, asserted in the chapter"\n'
# The clean page's web links, each with the day it was read.
READS = """
"https://openxla.org" = "2026-11-29"
"https://github.com/pytorch/xla/issues/4203" = "2026-11-30"
"https://example.com/a/1/2" = "2026-11-30"
"""
# Derived columns: the clean page's tables recompute, the defect pages' do not; one entry lacks a why, one matches
# nothing.
DERIVED = """
[[column]]
pages = ["clean", "derived_error"]
column = "error"
formula = "100 * (predicted - measured) / measured"
why = "error in percent of the measurement"

[[column]]
pages = ["clean", "derived_total"]
column = "person-weeks"
formula = "units * person_weeks_per_unit"
why = "units times weeks per unit"

[[column]]
pages = ["clean", "derived_total"]
column = "person-weeks"
formula = "total(person_weeks)"
rows = ["total"]
why = "the sum of the rows above"
"""
VS_FIRST = """
[[column]]
pages = ["clean"]
column = "vs first"
formula = "ms / first(ms)"
why = "relative to the first row"
"""
DERIVED_STALE = """
[[column]]
pages = ["derived_error"]
column = "share"
formula = "ms / total(ms)"
why = "a column no table has"

[[column]]
pages = ["derived_total"]
column = "person-weeks"
formula = "units * person_weeks_per_unit"
"""
# The validation table the editor's read found: conv 15.26 ms predicted, 14.26 ms measured, printed as "−2%".
ERROR_TABLE = (
    "| case | predicted | measured | error |\n|---|---:|---:|---:|\n"
    "| mlp | 61.26 ms | 71.13 ms | −14% |\n| conv | 15.26 ms | 14.26 ms | {conv} |\n"
)
EFFORT_TABLE = (
    "| class | units | person-weeks per unit | person-weeks |\n|---|---:|---:|---:|\n"
    "| device | 12 findings | 0.02 | 0.24 |\n| amp | 2 findings | 0.05 | 0.10 |\n"
    "| validation |  | 0.5 × engineering | 0.00 |\n| total |  |  | {total} |\n"
)


def _chapter(*cells: object) -> object:
    return notebook(PARAMS, *cells, code("glue()", GLUED))  # type: ignore[arg-type]


# page stem -> (page, the check it must trip)
DEFECTS: dict[str, tuple[object, str]] = {
    **{
        f"stray_{i}": (_chapter(code("x", [result(shown)])), "stray-result")
        for i, shown in enumerate(["'2.9.0+cu128'", "0", "{'a': 1}", "<Future at 0x7f state=running>"])
    },
    **{
        f"noise_{i}": (_chapter(code("f()", [stream(text, "stderr")])), "noise")
        for i, text in enumerate(
            [
                "tqdm/auto.py:21: TqdmWarning: IProgress not found.",
                "W1130 torch/utils/cpp_extension.py:117] No CUDA runtime is found, using CUDA_HOME='/usr/local'",
                "first call at 2997899862.py:14",
                "notebook so far: 52 s",
                "W1130 21:41:33.918000 4737 torch/_dynamo/convert_frame.py:1358] [0/8] hit config.recompile_limit (8)",
                "{'s': 0.0021605609999824082}",
            ]
        )
    },
    "printed_table": (_chapter(code("print(t)", [stream("| a | b |\n|---|---:|\n| 1 | 2 |\n")])), "printed-table"),
    "nan_unit": (_chapter(code("f()", [stream("cached step median nan ms, ratio nanx\n")])), "nan"),
    "nan_column": (_chapter(code("f()", [stream("diffusers, timesteps   8  True   3.28   353.3   nan\n")])), "nan"),
    "nan_markdown_table": (
        _chapter(code("show(t)", [result("<t>", text_markdown="| case | median |\n|---|---|\n| a | nan ms |")])),
        "nan",
    ),
    "raw_table": ("# Raw\n\n| case | dtype |\n|—|—|\n| a | float16 |\n", "raw-table"),
    **{f"glued_{k}": (_chapter(md(f"the ratio is {{glue:text}}`{k}`x")), "nan") for k in ("nanv", "infv", "ninf")},
    "glued_md_nan": (_chapter(md("the {glue:md}`mdnan`")), "nan"),
    **{f"zero_{k}": (_chapter(md(f"it matches to {{glue}}`{k}`")), "exact-zero") for k in ("ze", "zz", "n0")},
    "double_number": ("# Mechanisms\n\n## 1. Autocast around a compiled region\n\nText.\n", "double-number"),
    "double_number_nb": (_chapter(md("## 3. A mask constant\n\nText.")), "double-number"),
    **{
        f"emoji_{i}": (f"# Marks\n\n| mark |\n|---|\n| {mark} |\n", "emoji")
        for i, mark in enumerate(["✅ kernel", "❌ raises", "⚠️ CPU fallback", "💲"])
    },
    **{
        f"path_{i}": (
            _chapter(code("f()", [stream(f"warning at {path}:1\n", "stderr")], tags=["show-noise"])),
            "machine-path",
        )
        for i, path in enumerate(
            [
                "/work/main/src/xlaport/models/dit.py",
                "/root/.cache/x",
                "/home/alice/proj/a.py",
                "/tmp/ipykernel_13130/1644709049.py",
                "lib/python3.11/site-packages/tqdm/auto.py",
                "/opt/x/.venv/lib/python3.11",
            ]
        )
    },
    "path_in_prose": ("# Paths\n\nThe file is at /work/main/notes.txt on my machine.\n", "machine-path"),
    **{
        f"number_{i}": (_chapter(md(text)), "prose-number")
        for i, text in enumerate(
            [
                "the limit is 8 per function",
                "1,797 images",
                "a logit of 65504 overflows",
                "took 122.51 ms",
                "a 2-core machine",
            ]
        )
    },
    "glossary_first_use": (_chapter(md("Real XLA here.\n\nThen {term}`XLA` linked too late.")), "glossary"),
    "glossary_plural": (_chapter(md("Some lazy tensors here.")), "glossary"),
    "undated_link": ("# Links\n\nSee [the guide](https://example.org/guide) for more.\n", "read-date"),
    "derived_error": ("# Validation\n\n" + ERROR_TABLE.format(conv="−2%"), "derived-column"),
    "derived_total": (
        _chapter(code("show(t)", [result("<t>", text_markdown=EFFORT_TABLE.format(total="0.24"))])),
        "derived-column",
    ),
}

CLEAN = _chapter(
    md("> Colab: installs the XLA emulator, torch 2.9.0", tags=["colab-setup"]),
    md(
        "## The XLA compiler\n\n"
        "The `XLA` code, [XLA](https://openxla.org), XLA:CPU and PyTorch/XLA stay plain; "
        "{term}`lazy tensors <lazy tensor>` are linked. Real {term}`XLA` here, and XLA again.\n\n"
        "| XLA | value |\n|---|---|\n| a | b |\n\n"
        "the step's program ({glue:md}`md`), took {glue:text}`k:.1f` s; the ratio is {glue:text}`k`x, the error {glue:text}`z:.1e`\n\n"
        "see `torch.compile(dynamic=True)` and `x[:, 3]`, {ref}`a 12-row table <ex-scale>`, {doc}`glossary`\n\n"
        "[pytorch/xla#4203](https://github.com/pytorch/xla/issues/4203) and <https://example.com/a/1/2>\n\n"
        "[a pull request](https://github.com/pytorch/pytorch/pull/1) (read 2026-12-04) and [XLA's site](https://openxla.org)\n\n"
        "torch_tpu 0.2.0 wheel, TorchNeuron 2.14.3.0, torch ≥ 2.11, Python 3.11, AWS Neuron 2.33\n\n"
        "Exercise 1 and sections 2-4, exit status 2, steps 2 and later; a guide read 2026-12-01\n\n"
        "1. first\n2. second\n\n"
        "with $x \\leftarrow x + 3 v$\n\n"
        "for 20 steps at 3.0 and at 3\n\n"
        "v5e, fp16, bf16, float32, H100, trn2 and 8x128 are names\n\n"
        "fp16's maximum is 65504\n\n"
        "a | b is prose with one bar\n\n"
        "✓ kernel, ✗ raises, ! CPU fallback\n\n"
        "run `.venv/bin/python -m pytest`; the debug dir defaults to /tmp/neuron_backend\n\n"
        "```{exercise} Scale it up\n:label: ex-scale\n\nA decoder with hidden size 4096 and 32 layers.\n```\n\n"
        "## Mechanism 1: Autocast around a compiled region\n"
    ),
    code("show(t)", [result("<t>", text_markdown=ERROR_TABLE.format(conv="+7%"))]),
    code(
        "show(t)",
        [
            result(
                "<t>",
                text_markdown="| variant | ms | vs first |\n|---|---:|---:|\n| a | 162.9 | 1.00× |\n| b | 22.4 | 0.14× |\n",
            )
        ],
    ),
    code("show(t)", [result("<t>", text_markdown=EFFORT_TABLE.format(total="0.34"))]),
    code("df", [result("<df>", text_html="<table><tr><td>1.5</td><td>2.5</td></tr></table>")]),
    code("x", [result("3")], tags=["show-result"]),
    code("print(x)", [stream("x = 3\n")]),
    code("f()", [stream("W1130 21:41:33.918000 4737 torch/x.py:1] tagged\n", "stderr")], tags=["show-noise"]),
    code("f()", [stream("WARNING torch._dynamo.convert_frame: hit config.recompile_limit (8)\nstep 0.0022 s\n")]),
    code("f()", [stream("first fault in mm_1 [compiled]: 0 NaN, 4 inf in float16[1, 4]; losses [nan, nan, nan]\n")]),
)


@pytest.fixture(scope="module")
def defects(tmp_path_factory: pytest.TempPathFactory) -> list[Warning]:
    pages = {f"{stem}.{'md' if isinstance(page, str) else 'ipynb'}": page for stem, (page, _) in DEFECTS.items()}
    allow = tmp_path_factory.mktemp("allow") / "allow.toml"
    (allow.parent / "derived.toml").write_text(DERIVED_STALE + DERIVED)
    allow.write_text(
        '[number_0]\n"8" = "used: a sourced constant of this chapter"\n"7" = "float32 digits, IEEE 754"\n'
        '[number_1]\n"1" = ""\n[nochapter]\n"1" = "a source that is long enough"\n'
    )
    derived = allow.parent / "derived.toml"
    reads = allow.parent / "reads.toml"
    reads.write_text('"https://example.org/unused" = "2026-11-29"\n"https://example.org/when" = "soon"\n')
    conf = (
        f"xlaport_prose_numbers_allow = {str(allow)!r}\nxlaport_derived_columns = {str(derived)!r}\n"
        f"xlaport_read_dates = {str(reads)!r}\n"
    )
    return build(tmp_path_factory.mktemp("defects"), pages, conf=conf)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Warning]]:
    src = tmp_path_factory.mktemp("clean")
    (src / "allow.toml").write_text(ALLOW)
    (src / "derived.toml").write_text(DERIVED + VS_FIRST)
    (src / "reads.toml").write_text(READS)
    return src, build(
        src,
        {"clean.ipynb": CLEAN},
        conf="xlaport_prose_numbers_allow = 'allow.toml'\nxlaport_derived_columns = 'derived.toml'\n"
        "xlaport_read_dates = 'reads.toml'\n"
        "extensions.append('sphinx_exercise')\n",
    )  # type: ignore[dict-item]


@pytest.mark.parametrize("stem", [s for s in DEFECTS if s != "number_0"])
def test_defect_warns(defects: list[Warning], stem: str) -> None:
    kind = DEFECTS[stem][1]
    mine = [w for w in defects if w.doc == stem]
    assert any(w.kind == kind for w in mine), f"{stem}: no xlaport.{kind} warning; got {mine}"
    assert all(w.kind is not None for w in mine), f"{stem}: warnings from outside the checks: {mine}"


def test_clean_project_has_no_warnings(clean: tuple[Path, list[Warning]]) -> None:
    assert clean[1] == []


def test_warnings_name_the_cell(defects: list[Warning]) -> None:
    (w,) = [w for w in defects if w.doc == "stray_0"]
    assert w.message.endswith("(cell 2)") and w.line is not None and w.line // 10000 - 1 == 2


def test_allow_list_entries_are_used_sourced_and_for_chapters(defects: list[Warning]) -> None:
    assert not [w for w in defects if w.doc == "number_0"], "a number on the allow-list must not warn"
    listed = sorted(w.message for w in defects if w.kind == "allow-list")
    assert len(listed) == 3, listed
    assert "[nochapter] is not a chapter" in listed[0]
    assert "[number_0] '7' matches no number any more" in listed[1]
    assert "[number_1] '1' needs its source" in listed[2]


def test_a_derived_column_that_does_not_recompute_names_its_row(defects: list[Warning]) -> None:
    (w,) = [w for w in defects if w.doc == "derived_error"]
    assert "conv" in w.message and "'−2%'" in w.message and "gives 7.013" in w.message, w.message
    (t,) = [w for w in defects if w.doc == "derived_total"]
    assert "total" in t.message and "'0.24'" in t.message and "gives 0.34" in t.message, t.message


def test_derived_column_entries_say_why_and_match_a_table(defects: list[Warning]) -> None:
    listed = sorted(w.message for w in defects if w.kind == "derived-list")
    assert len(listed) == 2, listed
    assert "'person-weeks'" in listed[0] and "needs a why" in listed[0]
    assert "'share'" in listed[1] and "matches no table" in listed[1]


def test_a_cited_page_without_its_date_read_warns_and_the_list_holds_only_cited_pages(defects: list[Warning]) -> None:
    (w,) = [w for w in defects if w.doc == "undated_link"]
    assert "https://example.org/guide has no date read" in w.message, w.message
    listed = sorted(w.message for w in defects if w.kind == "read-date" and w.doc != "undated_link")
    assert len(listed) == 2, listed
    assert "'soon' is not a date" in listed[0] and "no page cites https://example.org/unused" in listed[1]


def test_each_cited_page_shows_the_day_it_was_read(clean: tuple[Path, list[Warning]]) -> None:
    page = (clean[0] / "_build" / "clean.html").read_text(encoding="utf-8")
    # one date per paragraph, after its last undated link; two links read on one day show it once; a link the text
    # dates already gets none, and the undated link after it still gets its own
    assert page.count('class="read-date"') == 3, page.count('class="read-date"')
    assert "(read 2026-11-29)</span>" in page and "(read 2026-11-30)</span>" in page


def test_a_headings_own_number_is_not_a_prose_number(defects: list[Warning]) -> None:
    assert [w.kind for w in defects if w.doc == "double_number_nb"] == ["double-number"]


def test_glossary_warns_once_per_term(defects: list[Warning]) -> None:
    (w,) = [w for w in defects if w.doc == "glossary_first_use"]
    assert "'XLA'" in w.message and "{term}`XLA`" in w.message
    (p,) = [w for w in defects if w.doc == "glossary_plural"]
    assert "{term}`lazy tensors <lazy tensor>`" in p.message


def test_an_exact_zero_glued_as_text_reads_0(clean: tuple[Path, list[Warning]]) -> None:
    page = (clean[0] / "_build" / "clean.html").read_text(encoding="utf-8")
    assert '<span class="pasted-text">0</span>' in page and "0.0e+00" not in page
