"""The scanner's checks are registered one function per rule per node type, each against a row of RULES."""

from __future__ import annotations

import ast

from xlaport.scan import RULES
from xlaport.scan.walker import CHECKS, check, checked_rules

# Rules found outside a Python syntax tree (by the engine, per file).
FILE_LEVEL = {"syntax-error", "cuda-source"}


def test_every_rule_has_a_check_and_every_check_a_rule() -> None:
    ids = {r.id for r in RULES}
    checked = checked_rules()
    assert set(checked) <= ids, f"checks for rules without a RULES row: {set(checked) - ids}"
    assert ids - FILE_LEVEL <= set(checked), f"rules without a check: {ids - FILE_LEVEL - set(checked)}"
    for pairs in CHECKS.values():
        fns = [fn for _, fn in pairs]
        assert len(fns) == len(set(fns)), "a check registered twice on one node type"


def test_one_rule_one_function_per_node_type() -> None:
    for t, pairs in CHECKS.items():
        per_rule: dict[str, int] = {}
        for rid, _ in pairs:
            per_rule[rid] = per_rule.get(rid, 0) + 1
        assert max(per_rule.values()) == 1, f"{t.__name__}: {per_rule}"


def test_a_new_rule_is_one_function() -> None:
    """Registering a check makes the walker call it; removing it restores the registry."""
    from xlaport.scan.walker import analyse

    before = {t: list(v) for t, v in CHECKS.items()}
    try:

        @check("cuda-api", ast.Global)
        def _global(w, node):  # type: ignore[no-untyped-def]
            w.hit("cuda-api", node, "global statement")

        hits = analyse(ast.parse("def f():\n    global X\n"))
        assert [h[0] for h in hits] == ["cuda-api"] and hits[0][1] == 2
    finally:
        CHECKS.clear()
        CHECKS.update(before)


# --------------------------------------------------------------------------- classes found on real code
def _hits(src: str, rule: str) -> list[int]:
    from xlaport.scan import scan_source

    return sorted(f.line for f in scan_source(src) if f.rule == rule)


def test_nccl_through_argparse_default_variable_and_config_dict() -> None:
    argp = (
        "import argparse, torch.distributed as dist\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--dist-backend', default='nccl', type=str)\n"
        "p.add_argument('--other', default='nccl')\n"
        "args = p.parse_args()\n"
        "dist.init_process_group(backend=args.dist_backend)\n"
    )
    assert _hits(argp, "nccl-backend") == [3]
    var = "import torch.distributed as dist\nb = 'nccl'\ndist.init_process_group(b)\n"
    assert _hits(var, "nccl-backend") == [2]
    cfg = "cfg = {'dist_backend': 'nccl', 'lr': 1}\n"
    assert _hits(cfg, "nccl-backend") == [1]
    assert _hits("x = 'nccl'\nprint(x)\n", "nccl-backend") == []


def test_device_string_through_a_variable_argparse_and_dict() -> None:
    src = "import torch\nloc = f'cuda:{rank}'\nstate = torch.load(path, map_location=loc)\nname = 'cuda'\nprint(name)\n"
    assert _hits(src, "cuda-device") == [2]
    argp = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--device', default='cuda')\n"
    assert _hits(argp, "cuda-device") == [3]
    assert _hits("cfg = dict(a=1)\nc = {'device': 'cuda:0'}\n", "cuda-device") == [2]


def test_data_parallel_and_cuda_on_one_line() -> None:
    src = "import torch\nmodel = torch.nn.DataParallel(model).cuda()\n"
    assert _hits(src, "cuda-api") == [2]
    assert _hits(src, "cuda-device") == [2]


def test_cuda_call_spanning_lines_is_reported_on_the_cuda_line() -> None:
    src = "net = Net(\n    1,\n    2).cuda(rank)\n"
    assert _hits(src, "cuda-device") == [3]


def test_growing_cache_needs_growth_across_iterations() -> None:
    fresh = (
        "import torch\n"
        "for i in range(8):\n"
        "    z = torch.randn(4, 4)\n"
        "    z = torch.cat([z, z], 0)\n"
        "for x, y in loader:\n"
        "    x = torch.cat((x, x), dim=0)\n"
    )
    assert _hits(fresh, "growing-cache") == []
    grows = "import torch\nz = torch.zeros(1)\nfor i in range(8):\n    t = torch.randn(1)\n    z = torch.cat([z, t])\n"
    assert _hits(grows, "growing-cache") == [5]


def test_sampler_schedule_and_tensor_parameters_from_call_sites() -> None:
    sampler = (
        "def sample(model, x, sigmas):\n"
        "    for i in range(len(sigmas) - 1):\n"
        "        x = model(x, sigmas[i])\n"
        "        if sigmas[i + 1] > 0:\n"
        "            x = x + 1\n"
        "    return x\n"
    )
    assert _hits(sampler, "view-offset-in-loop") == [3, 4]
    assert _hits(sampler, "tensor-condition") == [4]
    helper = (
        "import torch\ndef order(a, b):\n    return (a, b) if a < b else (b, a)\norder(torch.ones(1), torch.zeros(1))\n"
    )
    assert _hits(helper, "tensor-condition") == [3]
    assert _hits(helper.replace("torch.ones(1), torch.zeros(1)", "1, 2"), "tensor-condition") == []


def test_cuda_extension_chosen_by_name_and_timm_scaler() -> None:
    src = (
        "from torch.utils.cpp_extension import CppExtension, CUDAExtension\n"
        "Extension = CppExtension if cpu else CUDAExtension\n"
    )
    assert _hits(src, "cuda-extension") == [2]
    assert _hits("from timm.utils import NativeScaler\ns = NativeScaler()\n", "cuda-amp") == [2]
