"""The scanner's checks are registered one function per rule per node type, each by its rule's module."""

from __future__ import annotations

import ast
from pathlib import Path

from xlaport.scan import RULES
from xlaport.scan.registry import CHECKS, check
from xlaport.scan.rules import checked_rules


def test_every_rule_has_a_check_and_every_check_a_rule() -> None:
    ids = {r.id for r in RULES}
    checked = checked_rules()
    assert set(checked) <= ids, f"checks for rules without a module: {set(checked) - ids}"
    # syntax-error is found where a file does not parse (and on pyproject.toml files that are not TOML)
    assert ids == set(checked), f"rules without a check: {ids - set(checked)}"
    assert checked["cuda-source"] == {"file:cu"} and "file:req" in checked["cuda-only-dependency"]
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
        assert [(h.rule, h.line) for h in hits] == [("cuda-api", 2)]
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


def test_a_package_importing_itself_is_not_a_dependency(tmp_path: Path) -> None:
    """Liger-Kernel's own `from liger_kernel.ops.utils import ...` is not the CUDA-only package liger_kernel."""
    from xlaport.scan import scan

    src = "import triton\nfrom liger_kernel.ops.utils import ensure_contiguous\n"
    own = tmp_path / "repo" / "src" / "liger_kernel" / "ops"
    own.mkdir(parents=True)
    (own / "rms_norm.py").write_text(src)
    user = tmp_path / "user"
    user.mkdir()
    (user / "train.py").write_text(src)

    def deps(root: Path) -> list[str]:
        return sorted(f.detail for f in scan(root, jobs=1).findings if f.rule == "cuda-only-dependency")

    assert deps(tmp_path / "repo") == ["triton"]  # scanned from the checkout's root (src/ layout)
    assert deps(user) == ["liger_kernel", "triton"]  # a user of the package depends on it
    # a subfolder of an installed-style package: the chain of __init__.py names the package
    pkg = tmp_path / "pkg" / "liger_kernel"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "rms_norm.py").write_text(src)
    assert deps(pkg / "ops") == ["triton"]


def test_import_from_torch_cuda_amp_is_the_line_to_port() -> None:
    src = "import torch\nfrom torch.cuda.amp import autocast, GradScaler\nscaler = GradScaler()\n"
    assert _hits(src, "cuda-amp") == [2, 3]
    assert _hits("from torch.cuda import amp\n", "cuda-amp") == [1]
    assert _hits("from torch.amp import autocast, GradScaler\n", "cuda-amp") == []


def test_tensor_built_from_a_python_list_that_grows() -> None:
    grows = (
        "import torch\n"
        "def gen(model, ids):\n"
        "    out = list(ids)\n"
        "    for i in range(10):\n"
        "        x = torch.as_tensor([out], device='cpu')\n"
        "        out.append(int(model(x).argmax()))\n"
    )
    assert _hits(grows, "growing-cache") == [5]
    # started afresh at the top of every iteration: no growth across iterations
    fresh = grows.replace("        x = torch", "        out = [1]\n        x = torch")
    assert _hits(fresh, "growing-cache") == []
    # a list of tensors concatenated inside the loop that appends to it
    cat = "import torch\nparts = []\nwhile True:\n    parts.append(torch.ones(2))\n    y = torch.cat(parts)\n"
    assert _hits(cat, "growing-cache") == [5]
    # built once after the loop: one shape per call, not per step
    after = "import torch\nparts = []\nfor i in range(3):\n    parts.append(torch.ones(2))\ny = torch.stack(parts)\n"
    assert _hits(after, "growing-cache") == []


def test_no_host_sync_for_values_already_on_the_host() -> None:
    src = (
        "import torch\n"
        "def enc(emb: torch.Tensor):\n"
        "    emb = emb.cpu()\n"
        "    return [e.numpy().tobytes() for e in emb]\n"
    )
    assert _hits(src, "host-sync-in-loop") == []
    # still a sync when the copy to the host is in the loop, or the receiver is on the device
    on_device = src.replace("    emb = emb.cpu()\n", "")
    assert _hits(on_device, "host-sync-in-loop") == [3]
    in_loop = "import torch\nfor t in loader:\n    c = t.cpu()\n    v = c.item()\n"
    assert _hits(in_loop, "host-sync-in-loop") == [4]


def test_findings_resting_on_a_name_say_so() -> None:
    from xlaport.scan import scan_source

    guessed = "import torch\nfor x, y in loader:\n    out = model(x)\n    if out.sum() > 0:\n        pass\n"
    (f,) = [f for f in scan_source(guessed) if f.rule == "tensor-condition"]
    assert f.confidence == "low" and "a guess" in f.message and "name `model`" in f.message
    known = "import torch\nfor i in range(3):\n    out = torch.randn(3)\n    if out.sum() > 0:\n        pass\n"
    (g,) = [f for f in scan_source(known) if f.rule == "tensor-condition"]
    assert g.confidence == "high" and "guess" not in g.message
    assert g.as_dict()["confidence"] == "high"


def test_device_string_assigned_to_an_attribute() -> None:
    src = "import torch\nclass T:\n    def __init__(self):\n        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    assert _hits(src, "cuda-device") == [4]
    assert _hits("class T:\n    def f(self):\n        self.name = 'cuda'\n", "cuda-device") == []


def test_a_mask_on_its_own_line_is_reported_there() -> None:
    src = "import torch\ndef f(t: torch.Tensor):\n    ts = t[\n        t.ge(3)\n    ]\n    return ts\n"
    assert _hits(src, "boolean-mask-index") == [4]
    assert _hits("import torch\ndef f(t: torch.Tensor):\n    return t[t > 0]\n", "boolean-mask-index") == [3]


def test_a_host_tensor_indexed_in_a_loop_is_no_device_view() -> None:
    src = "import torch\ndef fin(lp: torch.Tensor):\n    lp = lp.cpu()\n    for i in range(4):\n        x = lp[i]\n"
    assert _hits(src, "view-offset-in-loop") == []
    assert _hits(src.replace("    lp = lp.cpu()\n", ""), "view-offset-in-loop") == [4]


# Classes the fourth held-out set (open-clip-torch, timm, torchtune) exposed, fixed as classes; each test fails on
# the scanner before the fix.
def test_a_torch_module_bound_to_a_name_is_followed_through_it() -> None:
    src = (
        "import torch\ndef it(self):\n    device_mod = None\n    if self.is_cuda:\n        device_mod = torch.cuda\n"
        "    s = device_mod.Stream(device=self.device)\n    c = device_mod.current_stream()\n"
    )
    assert _hits(src, "cuda-api") == [5]  # the binding is the line to port
    assert _hits(src, "cuda-streams") == [6, 7]
    rebound = src.replace("    s = device_mod", "    device_mod = object()\n    s = device_mod")
    assert _hits(rebound, "cuda-streams") == []  # rebound to something else: no longer torch.cuda


def test_a_name_bound_by_a_conditional_expression_is_followed() -> None:
    src = (
        "import torch\nfrom torch import autocast\nfrom contextlib import nullcontext\n"
        "def main(opt, model, x):\n    scope = autocast if opt.precision == 'autocast' else nullcontext\n"
        "    with scope('cuda'):\n        return model(x)\n"
    )
    assert _hits(src, "cuda-amp") == [6]


def test_nccl_assigned_to_an_attribute_or_in_a_table_of_backends() -> None:
    attr = "import torch.distributed as dist\ndef main(args):\n    args.dist_backend = 'nccl'\n"
    assert _hits(attr + "    dist.init_process_group(backend=args.dist_backend)\n", "nccl-backend") == [3]
    table = "def init(t):\n    backends = {'xpu': 'ccl', 'cuda': 'nccl'}\n    return backends.get(t, 'gloo')\n"
    assert _hits(table, "nccl-backend") == [2]
    assert _hits("m = {'hint': 'set nccl here'}\n", "nccl-backend") == []  # words, not a backend
    ported = "BACKENDS = {'tpu': 'tpu_dist', 'neuron': 'neuron', 'cuda': 'nccl', 'cpu': 'gloo'}\n"
    assert _hits(ported, "nccl-backend") == []  # the table already names TPU's and Trainium's backends


def test_a_device_or_backend_chosen_as_a_lookup_default() -> None:
    assert _hits("def f(args):\n    return setup(device=getattr(args, 'device', 'cuda'))\n", "cuda-device") == [2]
    assert _hits("def f(cfg):\n    return cfg.get('dist_backend', 'nccl')\n", "nccl-backend") == [2]
    assert _hits("def f(args):\n    return getattr(args, 'name', 'cuda')\n", "cuda-device") == []


def test_a_device_module_chosen_per_branch_keeps_its_cuda_calls() -> None:
    src = (
        "import torch\ndef it(self):\n    device_mod = None\n    if self.is_cuda:\n        device_mod = torch.cuda\n"
        "    elif self.is_npu:\n        device_mod = torch.npu\n    s = device_mod.Stream()\n"
    )
    assert _hits(src, "cuda-streams") == [8]


# Classes the third held-out set (stable-baselines3, pytorch-tabnet, auto-gptq, basicsr) exposed.
def test_a_sync_in_a_method_the_step_loop_calls_is_a_sync_per_step() -> None:
    src = (
        "class M:\n    def fit(self, loader):\n        for X, y in enumerate(loader):\n            self._step(X, y)\n"
        "    def _step(self, X, y):\n        loss = self.net(X).sum()\n        return loss.cpu().detach().numpy().item()\n"
        "    def report(self, x):\n        return x.item()\n"
    )
    assert _hits(src, "host-sync-in-loop") == [7]  # report() is called from no loop: nothing there
    from xlaport.scan import scan_source

    (f,) = [f for f in scan_source(src) if f.rule == "host-sync-in-loop"]
    assert "the loop on line 4 calls" in f.message
    once = src.replace(
        "        for X, y in enumerate(loader):\n            self._step(X, y)\n", "        self._step(1, 2)\n"
    )
    assert _hits(once, "host-sync-in-loop") == []


def test_a_modules_parameter_is_a_tensor() -> None:
    src = "import torch\ndef q(self, n):\n    W = self.layer.weight.data.clone()\n    for i in range(n):\n        w = W[:, i]\n"
    assert _hits(src, "view-offset-in-loop") == [5]


def test_a_tensor_made_without_a_device_is_in_host_memory() -> None:
    src = (
        "import torch\ndef collate(batch, n):\n    t = torch.zeros((n, 3), dtype=torch.uint8)\n"
        "    for i in range(n):\n        t[i].copy_(batch[i])\n"
    )
    assert _hits(src, "view-offset-in-loop") == []
    assert _hits(src.replace("dtype=torch.uint8)", "dtype=torch.uint8, device='xla')"), "view-offset-in-loop") == [5]


def test_a_loops_index_is_followed_into_the_function_it_calls() -> None:
    src = (
        "import torch\ndef step(x, sigmas, i):\n    return x * sigmas[i]\n"
        "def sample(x, n):\n    sigmas = torch.linspace(1, 0, n, device='xla')\n"
        "    for i in range(n):\n        x = step(x, sigmas, i)\n    return x\n"
    )
    assert _hits(src, "view-offset-in-loop") == [3]
    once = src.replace("    for i in range(n):\n        x = step(x, sigmas, i)\n", "    x = step(x, sigmas, 0)\n")
    assert _hits(once, "view-offset-in-loop") == []  # called with a constant, not a loop variable


def test_a_torch_module_kept_on_self_is_followed_through_the_attribute() -> None:
    src = (
        "import torch\nclass L:\n    def __init__(self):\n        self.dev = torch.cuda\n"
        "    def it(self):\n        s = self.dev.Stream()\n        self.dev.synchronize()\n"
    )
    assert _hits(src, "cuda-streams") == [6] and _hits(src, "cuda-api") == [4, 7]
    assert _hits(src.replace("torch.cuda\n", "make_device()\n"), "cuda-streams") == []


def test_a_device_or_backend_assigned_to_a_config_key() -> None:
    assert _hits("cfg = {}\ncfg['device'] = 'cuda'\n", "cuda-device") == [2]
    assert _hits("cfg = {}\ncfg['dist_backend'] = 'nccl'\n", "nccl-backend") == [2]
    assert _hits("cfg = {}\ncfg['name'] = 'cuda'\n", "cuda-device") == []
