"""The scanner's checks: one function per rule per node type, registered with :func:`~xlaport.scan.walker.check`.

Each section below is one rule of :data:`xlaport.scan.rules.RULES` (which holds its severity, why, fix and
chapter); each function in it looks at one kind of node, with the context the walker keeps
(:class:`~xlaport.scan.walker.Walker`: imports, scope, loops, the tensor inference). To add a rule, add its
row to ``RULES`` and its checks here.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .walker import DEFAULTS, Walker, check

__all__ = ["CUDA_ONLY_PACKAGES", "dependency_advice", "device_string", "nccl_string"]

# Import name -> (distribution names in requirements files, what to use instead)
CUDA_ONLY_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "apex": (
        ("apex", "nvidia-apex"),
        "torch.autocast and torch.optim's fused optimizers replace apex.amp and FusedAdam",
    ),
    "bitsandbytes": (("bitsandbytes",), "keep bf16 weights and optimizer state, or quantize with torchao"),
    "flash_attn": (("flash-attn", "flash_attn"), "torch.nn.functional.scaled_dot_product_attention"),
    "xformers": (("xformers",), "torch.nn.functional.scaled_dot_product_attention"),
    "deepspeed": (("deepspeed",), "FSDP2 (TorchNeuron) or FSDPv2/SPMD (torch_xla); DeepSpeed's ops are CUDA"),
    "cupy": (("cupy",), "torch ops on the device, or NumPy on the host"),
    "cupyx": (("cupy",), "torch ops on the device, or NumPy/SciPy on the host"),
    "pycuda": (("pycuda",), "torch ops, or a Pallas/NKI kernel"),
    "triton": (("triton",), "Pallas (TorchTPU) or NKI (TorchNeuron); the kernels are counted by triton-kernel"),
    "transformer_engine": (("transformer-engine", "transformer_engine"), "bf16 autocast; fp8 recipes differ per chip"),
    "mamba_ssm": (("mamba-ssm", "mamba_ssm"), "a PyTorch reference implementation of the scan, or a Pallas/NKI kernel"),
    "causal_conv1d": (("causal-conv1d", "causal_conv1d"), "torch.nn.functional.conv1d with left padding"),
    "liger_kernel": (("liger-kernel", "liger_kernel"), "the plain PyTorch ops it fuses (XLA fuses them too)"),
    "tensorrt": (("tensorrt",), "torch.compile with the target's backend"),
    "torch_tensorrt": (("torch-tensorrt", "torch_tensorrt"), "torch.compile with the target's backend"),
    "pynvml": (("pynvml", "nvidia-ml-py"), "torch.accelerator memory queries, or the vendor's monitoring tools"),
    "nvidia": (("nvidia-dali",), "a torch DataLoader on the host"),
}
_DIST_TO_IMPORT = {d: imp for imp, (dists, _) in CUDA_ONLY_PACKAGES.items() for d in dists}


def dependency_advice(requirement_name: str) -> tuple[str, str] | None:
    """(package, advice) if a requirements-file name is a CUDA-only package, else None."""
    n = requirement_name.lower().replace("_", "-")
    if n.startswith("cupy"):
        n = "cupy"
    imp = _DIST_TO_IMPORT.get(n) or _DIST_TO_IMPORT.get(n.replace("-", "_"))
    if imp is None:
        return None
    return n, CUDA_ONLY_PACKAGES[imp][1]


_STREAM_NAMES = {
    "Stream",
    "ExternalStream",
    "Event",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
    "CUDAGraph",
    "graph",
    "graphs",
    "make_graphed_callables",
    "StreamContext",
}
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast_mode.autocast"}
_SCALER = {"torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.GradScaler", "torch.amp.grad_scaler.GradScaler"}
# GradScaler and the wrappers training libraries build on it (timm.utils.NativeScaler)
_SCALER_NAMES = {"GradScaler", "NativeScaler", "NativeScalerWithGradNormCount"}
_DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}
_DYNAMIC_OPS = {"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere"}
_CAT = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack", "torch.dstack"}
_EXTENSIONS = {
    "torch.utils.cpp_extension.load_inline": "load_inline",
    "torch.utils.cpp_extension.CUDAExtension": "CUDAExtension",
    "cupy.RawKernel": "cupy.RawKernel",
    "cupy.RawModule": "cupy.RawModule",
    "cupy.ElementwiseKernel": "cupy.ElementwiseKernel",
    "cupy.ReductionKernel": "cupy.ReductionKernel",
    "pycuda.compiler.SourceModule": "pycuda SourceModule",
}
_TRITON_DECOS = {"triton.jit", "triton.autotune", "triton.heuristics", "torch.library.triton_op"}
_SYNC_METHODS = {"item", "tolist", "numpy"}
_SYNC_BUILTINS = {"float", "int", "bool"}
_CONDITION_TORCH = {
    "any",
    "all",
    "equal",
    "allclose",
    "isclose",
    "isnan",
    "isinf",
    "isfinite",
    "is_nonzero",
    "gt",
    "lt",
    "ge",
    "le",
    "eq",
    "ne",
    "count_nonzero",
    "logical_and",
    "logical_or",
    "logical_not",
}
_DEVICE_STR = re.compile(r"^cuda(?::\d+)?$")
_DEVICE_CALLS = {"to", "device", "Generator", "set_default_device", "get_device_module"}
_DEVICE_KEYWORDS = {"device", "map_location", "device_type"}
_GROUP_CALLS = {"init_process_group", "new_group", "new_subgroups"}


# --------------------------------------------------------------------------- shared helpers
def device_string(e: ast.AST | None) -> str | None:
    """The CUDA device string an expression spells (``"cuda"``, ``"cuda:0"``, ``f"cuda:{i}"``), or None."""
    if e is None:
        return None
    c = e.__class__
    if c is ast.Constant:
        v = e.value  # type: ignore[attr-defined]
        return v if isinstance(v, str) and _DEVICE_STR.match(v) else None
    if c is ast.JoinedStr:
        first = e.values[0] if e.values else None  # type: ignore[attr-defined]
        if first is not None and first.__class__ is ast.Constant and str(first.value).startswith("cuda:"):
            return "cuda:{...}"
        return None
    if c is ast.IfExp:
        return device_string(e.body) or device_string(e.orelse)  # type: ignore[attr-defined]
    if c is ast.BoolOp:
        for v in e.values:  # type: ignore[attr-defined]
            s = device_string(v)
            if s:
                return s
    return None


def nccl_string(e: ast.AST | None) -> bool:
    """True when an expression is (or may be) the string ``"nccl"`` (also ``"cpu:gloo,cuda:nccl"``)."""
    if e is None:
        return False
    if e.__class__ is ast.Constant:
        v = e.value
        return isinstance(v, str) and "nccl" in v.lower() and len(v) < 40
    if e.__class__ is ast.IfExp:
        return nccl_string(e.body) or nccl_string(e.orelse)
    return False


def bound_string(w: Walker, e: ast.AST) -> ast.AST | None:
    """The string literal a name was bound to in this scope or the module (``loc = f"cuda:{r}"``), or None."""
    if e.__class__ is not ast.Name:
        return None
    name = e.id
    return w.scope.strings.get(name) or (w.module.strings.get(name) if w.scope is not w.module else None)


def _argparse_default(node: ast.Call, word: str) -> ast.AST | None:
    """``parser.add_argument("--dist-backend", default=...)``: the default when an option string names ``word``."""
    names: list[str] = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    names += [str(k.value.value) for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)]
    if not any(word in str(n).lower() for n in names):
        return None
    return next((k.value for k in node.keywords if k.arg == "default"), None)


def _torch_cuda_head(q: str) -> tuple[str, str] | None:
    """For ``torch.cuda.X.Y``: (``X``, the rest after ``torch.cuda.``); None for other names."""
    if q == "torch.cuda":
        return "", ""
    if q.startswith("torch.cuda."):
        rest = q[len("torch.cuda.") :]
        return rest.split(".", 1)[0], rest
    return None


def _shown(q: str, called: bool) -> str:
    return f"`{q}{'()' if called else ''}`"


def _strings(e: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(e) if n.__class__ is ast.Constant and isinstance(n.value, str)]


def _string_lines(e: ast.AST) -> int:
    return sum(s.count("\n") + 1 for s in _strings(e) if "\n" in s or "__global__" in s)


# --------------------------------------------------------------------------- cuda-device
@check("cuda-device", ast.Call)
def cuda_device_call(w: Walker, node: ast.Call) -> None:
    attr, q = w.attr, w.q or ""
    if attr == "cuda" and node.func.__class__ is ast.Attribute and not q.startswith("torch.cuda"):
        w.hit(
            "cuda-device",
            node,
            "`.cuda()` raises on a TPU VM or Trainium host (no CUDA device; torch 2.9: 'Found no NVIDIA driver')",
            detail=".cuda()",
        )
    if attr in _DEVICE_CALLS or q == "torch.device":
        for a in node.args[:2]:
            _device_arg(w, a, "device string ")
    if q not in _AUTOCAST:
        for k in node.keywords:
            if k.arg in _DEVICE_KEYWORDS:
                _device_arg(w, k.value, f"{k.arg}=")
    if attr == "add_argument":
        d = _argparse_default(node, "device")
        s = device_string(d)
        if d is not None and s:
            w.hit("cuda-device", d, f'argparse default "{s}" for the device{_DEVICE_ON_HOST}', detail=s)
    got = _default_of(node) if attr in _LOOKUPS else None  # getattr(args, "device", "cuda")
    s = device_string(got[1]) if got is not None and "device" in got[0] else None
    if got is not None and s:
        w.hit("cuda-device", got[1], f'default "{s}" for `{got[0]}`{_DEVICE_ON_HOST}', detail=s)


_NEW_SHAPE = ": on TPU/Trainium a host sync, and one new compiled program per count"
_DEVICE_ON_HOST = ": on a TPU VM or Trainium host the first tensor moved there raises (no CUDA device)"


def _device_arg(w: Walker, a: ast.AST, what: str) -> None:
    s = device_string(a)
    if s:
        w.hit("cuda-device", a, f'{what}"{s}"{_DEVICE_ON_HOST}', detail=s)
        return
    lit = bound_string(w, a)
    s = device_string(lit)
    if lit is not None and s:
        name = a.id  # type: ignore[attr-defined]
        w.hit("cuda-device", lit, f'"{s}" reaches a device through `{name}`{_DEVICE_ON_HOST}', detail=s)


@check("cuda-device", ast.Dict)
def cuda_device_dict(w: Walker, node: ast.Dict) -> None:
    for k, v in zip(node.keys, node.values):
        if isinstance(k, ast.Constant) and isinstance(k.value, str) and "device" in k.value.lower():
            s = device_string(v)
            if s:
                w.hit("cuda-device", v, f'config "{k.value}": "{s}"{_DEVICE_ON_HOST}', detail=s)


@check("cuda-device", ast.Assign, ast.AnnAssign)
def cuda_device_assign(w: Walker, node: Any) -> None:
    for t in w.assign_targets(node):
        # `device = "cuda"`, and the same on an attribute: `self.device = "cuda" if ... else "cpu"`
        name = t.id if t.__class__ is ast.Name else t.attr if t.__class__ is ast.Attribute else ""
        low = name.lower()
        if "device" in low or low in ("dev", "map_location"):
            s = device_string(node.value)
            if s:
                shown = name if t.__class__ is ast.Name else ast.unparse(t)
                w.hit("cuda-device", node.value, f'`{shown} = "{s}"`{_DEVICE_ON_HOST}', detail=s)


@check("cuda-device", DEFAULTS)
def cuda_device_default(w: Walker, args: ast.arguments) -> None:
    for a, d in w.defaults(args):
        if "device" in a.arg.lower():
            s = device_string(d)
            if s:
                w.hit("cuda-device", d, f'default {a.arg}="{s}"{_DEVICE_ON_HOST}', detail=s)


# --------------------------------------------------------------------------- cuda-amp
@check("cuda-amp", ast.Call)
def cuda_amp_call(w: Walker, node: ast.Call) -> None:
    q, attr = w.q, w.attr
    if q is not None and q.startswith("torch."):
        if q in _AUTOCAST:
            _autocast(w, node, q)
        elif q in _SCALER:
            w.hit("cuda-amp", node, f"`{q}()`{_SCALER_ON_HOST}", detail=q)
        else:
            head = _torch_cuda_head(q)
            if head is not None and head[0] == "amp":
                w.hit("cuda-amp", node, f"{_shown(q, True)}{_AMP_ON_HOST}", detail=q)
    elif q is not None and attr in _SCALER_NAMES and q not in _EXTENSIONS:
        w.hit("cuda-amp", node, f"`{attr}()`{_SCALER_ON_HOST}", detail=attr)
    if attr == "half" and node.func.__class__ is ast.Attribute and not node.args:
        w.hit(
            "cuda-amp",
            node,
            "`.half()` gives float16 weights or activations; TPU and Trainium compute in bfloat16, and float16 "
            "without a loss scaler underflows",
            detail=".half()",
        )


@check("cuda-amp", ast.ImportFrom)
def cuda_amp_import(w: Walker, node: ast.ImportFrom) -> None:
    """``from torch.cuda.amp import autocast, GradScaler`` (or ``from torch.cuda import amp``): the line to port,
    since every use below it then reads as the device-neutral name."""
    if node.level or not node.module:
        return
    mod = node.module
    if mod == "torch.cuda.amp" or mod.startswith("torch.cuda.amp."):
        names = [a.name for a in node.names]
    elif mod == "torch.cuda" and any(a.name == "amp" for a in node.names):
        names = ["amp"]
    else:
        return
    shown = ", ".join(f"`{n}`" for n in names)
    w.hit(
        "cuda-amp",
        node,
        f"imports {shown} from CUDA's AMP namespace{_AMP_ON_HOST}; import them from `torch.amp` and pass the "
        "device type",
        detail=f"{mod}.{names[0]}" if mod != "torch.cuda" else "torch.cuda.amp",
    )


@check("cuda-amp", ast.Attribute)
def cuda_amp_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q or ""
    head = _torch_cuda_head(q)
    if head is not None and head[0] == "amp":
        w.hit("cuda-amp", node, f"{_shown(q, False)}{_AMP_ON_HOST}", detail=q)


_SCALER_ON_HOST = (
    " warns and disables itself on a TPU VM or Trainium host (no CUDA; torch 2.9), so `scale`/`step` pass "
    "through; with bf16 no scaler is needed"
)
_AUTOCAST_ON_HOST = (
    " warns and disables itself on a TPU VM or Trainium host (no CUDA; torch 2.9): the step silently runs in float32"
)
_AMP_ON_HOST = ": CUDA automatic mixed precision, which disables itself where there is no CUDA device"


def _autocast(w: Walker, node: ast.Call, q: str) -> None:
    device = node.args[0] if node.args else None
    dtype = node.args[1] if len(node.args) > 1 else None
    for k in node.keywords:
        if k.arg == "device_type":
            device = k.value
        elif k.arg == "dtype":
            dtype = k.value
    dev = device.value if isinstance(device, ast.Constant) else None
    dt = w.dotted(dtype) if dtype is not None else None
    fp16 = dt in ("torch.float16", "torch.half")
    if q == "torch.cuda.amp.autocast":
        w.hit("cuda-amp", node, f"`torch.cuda.amp.autocast()`{_AUTOCAST_ON_HOST}", detail=q)
    elif dev == "cuda" or fp16:
        what = ", ".join(x for x in (f'"{dev}"' if dev == "cuda" else "", "float16" if fp16 else "") if x)
        on_host = _AUTOCAST_ON_HOST if dev == "cuda" else ": float16 autocast; TPU and Trainium compute in bfloat16"
        w.hit("cuda-amp", node, f"`{q}({what})`{on_host}", detail=q)


# --------------------------------------------------------------------------- cuda-api
#: What a ``torch.cuda`` name does, as written, on a host without a CUDA device (a TPU VM, a Trainium host),
#: measured with torch 2.9.0 on such a host (tests/unit/test_scan_messages.py checks it when torch is
#: installed and no GPU is present); severity: error when the line stops or silently changes the run.
#: Names not listed raise there ("Found no NVIDIA driver on your system").
CUDA_ON_HOST: dict[str, tuple[str, str]] = {
    "is_available": (
        'returns False there: an `assert` on it stops the script, and `"cuda" if ... else "cpu"` silently '
        "runs everything on the host CPU",
        "error",
    ),
    "device_count": ("returns 0 there: a launcher that starts one process per GPU starts none", "error"),
    "is_bf16_supported": ("returns False there, so code that picks bf16 by it falls back to float16", "error"),
    "empty_cache": ("does nothing there (no CUDA memory to release)", "warning"),
    "manual_seed": ("does nothing there: the device's generator is not seeded", "warning"),
    "manual_seed_all": ("does nothing there: the device's generator is not seeded", "warning"),
    "memory_allocated": ("returns 0 there: memory logs and checks read zero", "warning"),
    "max_memory_allocated": ("returns 0 there: memory logs and checks read zero", "warning"),
    "OutOfMemoryError": (
        "names CUDA's out-of-memory error; the target reports running out of device memory its own way",
        "warning",
    ),
}
_CUDA_RAISES = ("raises there (no CUDA device: 'Found no NVIDIA driver on your system')", "error")
_CUDNN_SWITCH = ("does nothing there (a cuDNN/CUDA kernel switch)", "warning")


def cuda_on_host(q: str, called: bool) -> tuple[str, str]:
    """(what ``q`` as written does on a TPU VM or Trainium host, severity) for a torch.cuda/backends name."""
    if q.startswith("torch.backends."):
        return _CUDNN_SWITCH
    leaf = q.rsplit(".", 1)[-1]
    if leaf in CUDA_ON_HOST:
        return CUDA_ON_HOST[leaf]
    return _CUDA_RAISES if called else ("refers to CUDA's runtime; calls through it raise there", "warning")


def _cuda_api(w: Walker, node: ast.AST, q: str, called: bool) -> None:
    if q.startswith("torch.") and q not in _AUTOCAST and q not in _SCALER:
        head = _torch_cuda_head(q)
        if (head is not None and head[1] and head[0] not in ("amp", "nccl") and head[0] not in _STREAM_NAMES) or (
            head is None and q.startswith(("torch.backends.cudnn", "torch.backends.cuda"))
        ):
            what, sev = cuda_on_host(q, called)
            w.hit("cuda-api", node, f"{_shown(q, called)} {what}", detail=q, severity=sev)


@check("cuda-api", ast.Call)
def cuda_api_call(w: Walker, node: ast.Call) -> None:
    if w.q is not None:
        _cuda_api(w, node, w.q, True)
        if w.q in _DATA_PARALLEL:
            w.hit(
                "cuda-api",
                node,
                "`DataParallel` replicates over CUDA devices; on a TPU VM or Trainium host it finds none and runs "
                "the model unreplicated on one device (torch 2.9), so the batch is not split",
                detail="torch.nn.DataParallel",
            )


@check("cuda-api", ast.Attribute)
def cuda_api_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q
    if q is not None:
        _cuda_api(w, node, q, False)


@check("cuda-api", ast.Assign, ast.AnnAssign)
def cuda_module_bound(w: Walker, node: Any) -> None:
    """``device_mod = torch.cuda``: the file reaches CUDA's runtime through another name from here on."""
    value = getattr(node, "value", None)
    if value is not None and w.torch_path(value) == "torch.cuda":
        names = ", ".join(ast.unparse(t) for t in w.assign_targets(node))
        w.hit(
            "cuda-api",
            node,
            f"`{names} = torch.cuda`: calls through `{names}` reach CUDA's runtime, which is not there",
            detail="torch.cuda",
        )


# --------------------------------------------------------------------------- cuda-streams
def _cuda_streams(w: Walker, node: ast.AST, q: str, called: bool) -> None:
    head = _torch_cuda_head(q)
    if head is not None and head[0] in _STREAM_NAMES and q not in _AUTOCAST:
        if not called:
            what = "names a CUDA stream/event/graph, which does not exist there"
        elif head[0] == "Event":  # torch 2.9 without CUDA: the event is created, its record() raises
            what = "creates an event whose `record()` raises there (no CUDA device)"
        else:
            what = "raises there (no CUDA device)"
        w.hit("cuda-streams", node, f"{_shown(q, called)} {what}", detail=q)


@check("cuda-streams", ast.Call)
def cuda_streams_call(w: Walker, node: ast.Call) -> None:
    if w.q is not None:
        _cuda_streams(w, node, w.q, True)
    if w.attr in ("record_stream", "wait_stream") and node.func.__class__ is ast.Attribute:
        w.hit(
            "cuda-streams",
            node,
            f"`.{w.attr}()` is CUDA stream bookkeeping; there are no CUDA streams there",
            detail=w.attr,
        )


@check("cuda-streams", ast.Attribute)
def cuda_streams_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q
    if q is not None:
        _cuda_streams(w, node, q, False)


# --------------------------------------------------------------------------- nccl-backend
def _nccl_name(w: Walker, node: ast.AST, q: str, called: bool) -> None:
    head = _torch_cuda_head(q)
    if head is not None and head[0] == "nccl":
        w.hit("nccl-backend", node, f"{_shown(q, called)}: NCCL bindings{_NCCL_ON_HOST}", detail=q)
    elif q.startswith("torch.distributed.Backend.NCCL"):
        w.hit("nccl-backend", node, f"`{q}`{_NCCL_ON_HOST}", detail=q)


@check("nccl-backend", ast.Call)
def nccl_call(w: Walker, node: ast.Call) -> None:
    if w.q is not None:
        _nccl_name(w, node, w.q, True)
    for k in node.keywords:
        if k.arg == "backend":
            _nccl_arg(w, k.value, 'backend "nccl"')
    if w.attr in _GROUP_CALLS and node.args:
        _nccl_arg(w, node.args[0], f'`{w.attr}("nccl")`')
    if w.attr == "add_argument":
        d = _argparse_default(node, "backend")
        if d is not None and nccl_string(d):
            w.hit("nccl-backend", d, f'argparse default "nccl" for the backend{_NCCL_ON_HOST}', detail="nccl")
    got = _default_of(node) if w.attr in _LOOKUPS else None  # getattr(args, "dist_backend", "nccl")
    if got is not None and "backend" in got[0] and nccl_string(got[1]):
        w.hit("nccl-backend", got[1], f'default "nccl" for `{got[0]}`{_NCCL_ON_HOST}', detail="nccl")


_NCCL_ON_HOST = ": on a TPU VM or Trainium host init_process_group raises (NCCL needs CUDA devices)"


def _nccl_arg(w: Walker, a: ast.AST, what: str) -> None:
    if nccl_string(a):
        w.hit("nccl-backend", a, what + _NCCL_ON_HOST, detail="nccl")
        return
    lit = bound_string(w, a)
    if lit is not None and nccl_string(lit):
        name = a.id  # type: ignore[attr-defined]
        w.hit("nccl-backend", lit, f'"nccl" reaches the process group through `{name}`{_NCCL_ON_HOST}', detail="nccl")


@check("nccl-backend", ast.Dict)
def nccl_dict(w: Walker, node: ast.Dict) -> None:
    """``{"backend": "nccl"}``, and a table of backends per device type with no TPU or Trainium entry:
    ``{"cuda": "nccl", "xpu": "ccl"}`` (one with ``"tpu": "tpu_dist"`` or ``"neuron": "neuron"`` is ported)."""
    words = set(_strings(node))
    ported = bool(words & _PORTED_BACKENDS)
    for k, v in zip(node.keys, node.values):
        key = k.value.lower() if isinstance(k, ast.Constant) and isinstance(k.value, str) else ""
        if ("backend" in key and nccl_string(v)) or (key and not ported and _exact_nccl(v)):
            w.hit("nccl-backend", v, f'config "{k.value}": "nccl"{_NCCL_ON_HOST}', detail="nccl")  # type: ignore[union-attr]


#: keys or values of a table of backends that show it already names the TPU or Trainium one
_PORTED_BACKENDS = frozenset({"tpu", "tpu_dist", "xla", "neuron"})


def _exact_nccl(e: ast.AST | None) -> bool:
    """The string is a backend spec naming NCCL (``"nccl"``, ``"cpu:gloo,cuda:nccl"``), not a sentence."""
    if e is None or e.__class__ is not ast.Constant or not isinstance(e.value, str):
        return False
    return re.fullmatch(r"(?:[a-z]+:[a-z]+,)*(?:cuda:)?nccl(?:,[a-z]+:[a-z]+)*", e.value.lower()) is not None


_LOOKUPS = frozenset({"getattr", "get", "getenv"})


def _default_of(node: ast.Call) -> tuple[str, ast.AST] | None:
    """(key, default) of ``getattr(obj, "key", default)`` and ``mapping.get("key", default)``, else None."""
    f = node.func
    if f.__class__ is ast.Name and f.id == "getattr" and len(node.args) == 3:
        key, d = node.args[1], node.args[2]
    elif f.__class__ is ast.Attribute and f.attr in ("get", "getenv") and len(node.args) == 2:
        key, d = node.args
    else:
        return None
    if key.__class__ is ast.Constant and isinstance(key.value, str):
        return key.value.lower(), d
    return None


@check("nccl-backend", ast.Attribute)
def nccl_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q
    if q is not None:
        _nccl_name(w, node, q, False)


@check("nccl-backend", ast.Assign, ast.AnnAssign)
def nccl_assign(w: Walker, node: Any) -> None:
    """``backend = "nccl"``, and the same on an attribute or a key: ``args.dist_backend = "nccl"``."""
    for t in w.assign_targets(node):
        name = t.id if t.__class__ is ast.Name else t.attr if t.__class__ is ast.Attribute else ""
        if t.__class__ is ast.Subscript and t.slice.__class__ is ast.Constant and isinstance(t.slice.value, str):
            name = t.slice.value
        if "backend" in name.lower() and nccl_string(node.value):
            shown = name if t.__class__ is ast.Name else ast.unparse(t)
            w.hit("nccl-backend", node.value, f'`{shown} = "nccl"`{_NCCL_ON_HOST}', detail="nccl")


@check("nccl-backend", DEFAULTS)
def nccl_default(w: Walker, args: ast.arguments) -> None:
    for a, d in w.defaults(args):
        low = a.arg.lower()
        if "device" not in low and "backend" in low and nccl_string(d):
            w.hit("nccl-backend", d, f'default {a.arg}="nccl"{_NCCL_ON_HOST}', detail="nccl")


# --------------------------------------------------------------------------- cuda-only-dependency
@check("cuda-only-dependency", ast.Import, ast.ImportFrom)
def cuda_only_import(w: Walker, node: Any) -> None:
    if node.__class__ is ast.Import:
        modules = [a.name for a in node.names]
    else:
        if node.level or not node.module:
            return
        modules = [node.module]
    for module in modules:
        top = module.split(".", 1)[0]
        info = CUDA_ONLY_PACKAGES.get(top)
        if info is None or (top == "nvidia" and not module.startswith("nvidia.dali")):
            continue
        if top in w.own_packages:
            continue  # the package's own source importing itself (Liger-Kernel's `from liger_kernel.ops import`)
        key = ("cuda-only-dependency", top)
        if key in w.once:
            continue  # one finding per package per file
        w.once.add(key)
        optional = w.optional_import > 0
        if optional:
            what = f"optional import of `{module}` is skipped on a TPU VM or Trainium host (no CUDA build)"
        else:
            what = f"import of `{module}` fails on a TPU VM or Trainium host (CUDA only)"
        w.hit(
            "cuda-only-dependency",
            node,
            f"{what}; instead: {info[1]}",
            detail=top,
            severity="warning" if optional else "",
        )


@check("cuda-only-dependency", ast.Call, attrs={"setup"})
def cuda_only_setup(w: Walker, node: ast.Call) -> None:
    q = w.q
    if q is None or q.startswith("torch.") or q in _EXTENSIONS or w.attr != "setup" or not q.endswith("setup"):
        return
    for k in node.keywords:
        if k.arg not in ("install_requires", "extras_require", "setup_requires"):
            continue
        for s in _strings(k.value):
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", s)
            adv = dependency_advice(m.group(1)) if m else None
            if adv is not None:
                w.hit(
                    "cuda-only-dependency",
                    node,
                    f"`{s.strip()}` in {k.arg} has no TPU/Trainium build (CUDA only); instead: {adv[1]}",
                    adv[0],
                )


# --------------------------------------------------------------------------- triton-kernel
@check("triton-kernel", ast.FunctionDef, ast.AsyncFunctionDef)
def triton_kernel(w: Walker, node: Any) -> None:
    decos = node.decorator_list
    for d in decos:
        target = d.func if d.__class__ is ast.Call else d
        q = w.dotted(target) or ""
        if q in _TRITON_DECOS or (q.startswith("triton.") and q.endswith((".jit", ".autotune"))):
            first = min(x.lineno for x in decos)
            lines = (getattr(node, "end_lineno", None) or node.lineno) - first + 1
            w.hit(
                "triton-kernel",
                d,
                f"Triton kernel `{node.name}` ({lines} lines): Triton has no TPU or Trainium backend, so launching it fails there",
                detail=node.name,
                lines=lines,
            )
            return


# --------------------------------------------------------------------------- cuda-extension
@check("cuda-extension", ast.Call, attrs={*(q.rsplit(".", 1)[-1] for q in _EXTENSIONS), "load"})
def cuda_extension(w: Walker, node: ast.Call) -> None:
    q = w.q
    if q is None:
        return
    if q in _EXTENSIONS:
        if q != "torch.utils.cpp_extension.load_inline" or any(
            k.arg in ("cuda_sources", "with_cuda") for k in node.keywords
        ):
            _extension(w, node, _EXTENSIONS[q])
    elif q == "torch.utils.cpp_extension.load" and any(s.endswith((".cu", ".cuh")) for s in _strings(node)):
        _extension(w, node, "cpp_extension.load")


@check("cuda-extension", ast.Assign)
def cuda_extension_chosen(w: Walker, node: ast.Assign) -> None:
    """``Extension = CppExtension if cpu else CUDAExtension``: the class is chosen here and called later."""
    v = node.value
    for e in (v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,):
        if e.__class__ in (ast.Name, ast.Attribute) and w.dotted(e) == "torch.utils.cpp_extension.CUDAExtension":
            w.hit(
                "cuda-extension",
                e,
                "`CUDAExtension` builds CUDA kernels: without nvcc on a TPU VM or Trainium host the build fails or leaves them out",
                detail="CUDAExtension",
            )


def _extension(w: Walker, node: ast.Call, what: str) -> None:
    lines = 0
    for k in node.keywords:
        if k.arg in ("cuda_sources", "cuda_source") or (k.arg == "code" and what.startswith(("cupy", "pycuda"))):
            lines += _string_lines(k.value)
    if what.startswith(("cupy", "pycuda")) and node.args:
        lines += _string_lines(node.args[0])
    n = f" ({lines} lines of CUDA C++)" if lines else ""
    w.hit(
        "cuda-extension",
        node,
        f"`{what}` compiles a CUDA kernel{n}: there is no nvcc or CUDA device to build or run it on a TPU VM or Trainium host",
        detail=what,
        lines=lines,
    )


# --------------------------------------------------------------------------- dynamic-shape-op
@check("dynamic-shape-op", ast.Call, attrs={*_DYNAMIC_OPS, "where"})
def dynamic_shape_op(w: Walker, node: ast.Call) -> None:
    attr, q = w.attr, w.q or ""
    fcls = node.func.__class__
    if attr in _DYNAMIC_OPS and fcls in (ast.Attribute, ast.Name):
        if not q.startswith(("numpy.", "np.", "pandas.", "pd.")) and not any(k.arg == "size" for k in node.keywords):
            w.hit("dynamic-shape-op", node, f"`{attr}` has a data-dependent output shape{_NEW_SHAPE}", detail=attr)
    elif attr == "where" and q.startswith("torch.") and len(node.args) == 1 and not node.keywords:
        w.hit("dynamic-shape-op", node, f"one-argument `torch.where` is `nonzero`{_NEW_SHAPE}", detail="where")


# --------------------------------------------------------------------------- boolean-mask-index
@check("boolean-mask-index", ast.Subscript)
def boolean_mask_index(w: Walker, node: ast.Subscript) -> None:
    sl = node.slice
    elts = sl.elts if sl.__class__ is ast.Tuple else (sl,)
    for e in elts:
        if e.__class__ is not ast.Slice and w.is_mask(e):
            w.hit(
                "boolean-mask-index",
                # on the mask's line when the subscript spans lines (`x[\n    x.ge(t)\n]`)
                e if getattr(e, "lineno", node.lineno) != node.lineno else node,
                f"indexing with a boolean mask has a data-dependent shape{_NEW_SHAPE}",
                tensor_guess=True,
            )
            return


# --------------------------------------------------------------------------- variable-length-batch
@check("variable-length-batch", ast.Call)
def variable_length_batch(w: Walker, node: ast.Call) -> None:
    if w.attr == "pad_sequence" and not any(k.arg in ("padding_side",) for k in node.keywords):
        w.hit(
            "variable-length-batch",
            node,
            "`pad_sequence` pads to the longest in each batch: on TPU/Trainium one new compiled program per length",
        )
    for k in node.keywords:
        v = k.value
        if k.arg == "padding" and isinstance(v, ast.Constant) and (v.value is True or v.value == "longest"):
            w.hit(
                "variable-length-batch",
                v,
                f"padding={v.value!r} pads to the longest in each batch: on TPU/Trainium one new compiled program per length",
            )


# --------------------------------------------------------------------------- host-sync-in-loop
@check("host-sync-in-loop", ast.Call, attrs={*_SYNC_METHODS, "print", *_SYNC_BUILTINS})
def host_sync_in_loop(w: Walker, node: ast.Call) -> None:
    if w.scope.loops <= 0 and not w.scope.per_iteration:
        return
    attr, fcls = w.attr, node.func.__class__
    if attr in _SYNC_METHODS and fcls is ast.Attribute and not node.args:
        since = w.host_since(node.func.value)  # type: ignore[attr-defined]
        if since is not None and since < w.scope.loops:
            return  # `e.numpy()` for `e` in `t.cpu()`: copied to the host before the loop, nothing to wait for
        where = "in a loop" if w.scope.loops > 0 else f"in a function the loop on line {w.scope.per_iteration} calls"
        w.hit("host-sync-in-loop", node, f"`.{attr}()` {where} waits for the device every iteration{_SYNC}")
    elif fcls is ast.Name and attr == "print":
        for a in node.args:
            if _prints_tensor(w, a):
                w.hit(
                    "host-sync-in-loop",
                    node,
                    f"`print` of a tensor in a loop waits for the device every iteration{_SYNC}",
                    tensor_guess=True,
                )
                return
    elif fcls is ast.Name and attr in _SYNC_BUILTINS and len(node.args) == 1 and w.is_tensor(node.args[0]):
        w.hit(
            "host-sync-in-loop",
            node,
            f"`{attr}(tensor)` in a loop waits for the device every iteration{_SYNC}",
            tensor_guess=True,
        )


_SYNC = "; on TPU/Trainium each one also cuts the lazily traced step in two"


def _prints_tensor(w: Walker, a: ast.AST) -> bool:
    if a.__class__ is ast.JoinedStr:
        return any(v.__class__ is ast.FormattedValue and w.is_tensor(v.value) for v in a.values)
    return w.is_tensor(a)


# --------------------------------------------------------------------------- tensor-condition
@check("tensor-condition", ast.If, ast.IfExp, ast.While, ast.Assert)
def tensor_condition(w: Walker, node: Any) -> None:
    if _tensor_truth(w, node.test):
        w.hit(
            "tensor-condition",
            node,
            "a Python branch on a tensor's value waits for the device there, and breaks the compiled graph",
            tensor_guess=True,
        )


def _tensor_truth(w: Walker, e: ast.AST) -> bool:
    c = e.__class__
    if c is ast.BoolOp:
        return any(_tensor_truth(w, v) for v in e.values)  # type: ignore[attr-defined]
    if c is ast.UnaryOp and isinstance(e.op, ast.Not):  # type: ignore[attr-defined]
        return _tensor_truth(w, e.operand)  # type: ignore[attr-defined]
    if c is ast.IfExp:
        return _tensor_truth(w, e.body) or _tensor_truth(w, e.orelse)  # type: ignore[attr-defined]
    if c is ast.Name:
        return w.lookup_tensor(e.id)  # type: ignore[attr-defined]
    if c is ast.Compare:
        return w._tensor_compare(e)  # type: ignore[arg-type]
    if c is ast.Call:
        f = e.func  # type: ignore[attr-defined]
        q = w.dotted(f)
        if q is not None and q.startswith("torch.") and q[6:] in _CONDITION_TORCH:
            return True
        if f.__class__ is ast.Attribute and f.attr in ("any", "all", "equal", "allclose"):
            return w.is_tensor(f.value) or w.is_mask(f.value) or f.value.__class__ is ast.Compare
    return False


# --------------------------------------------------------------------------- growing-cache
@check("growing-cache", ast.Assign, ast.AnnAssign)
def growing_cache(w: Walker, node: Any) -> None:
    value = node.value
    calls = value.elts if value.__class__ is ast.Tuple else [value]
    targets = w.assign_targets(node)
    for c in calls:
        if c.__class__ is not ast.Call or not c.args:
            continue
        q = w.dotted(c.func)
        if q not in _CAT:
            continue
        seq = c.args[0]
        if seq.__class__ not in (ast.List, ast.Tuple):
            continue
        names = set()
        for t in targets:
            for n in t.elts if t.__class__ in (ast.Tuple, ast.List) else [t]:
                if n.__class__ in (ast.Name, ast.Attribute):
                    names.add(ast.unparse(n))
        for e in seq.elts:
            if e.__class__ not in (ast.Name, ast.Attribute):
                continue
            name = ast.unparse(e)
            fresh = w.scope.fresh[-1] if w.scope.fresh else ()
            if name in names and name not in fresh and (w.scope.loops > 0 or name in w.scope.params):
                where = "in a loop" if w.scope.loops > 0 else "from a parameter (called once per step)"
                w.hit(
                    "growing-cache",
                    c,
                    f"`{name}` grows by `{q}` {where}: a new shape each step, so TPU/Trainium compile a new program each step",
                    name,
                )
                return


_FROM_LIST = {"tensor", "as_tensor", "LongTensor", "FloatTensor", "IntTensor", "BoolTensor", "Tensor"}


@check("growing-cache", ast.Call, attrs={*_FROM_LIST, *(q.rsplit(".", 1)[-1] for q in _CAT)})
def growing_list_tensor(w: Walker, node: ast.Call) -> None:
    """``torch.as_tensor([output_ids])`` in a loop that also does ``output_ids.append(token)``: a tensor whose
    length follows a Python list that grows every iteration (and ``torch.cat(chunks)`` of such a list)."""
    q = w.q
    if not w.scope.loop_nodes or not node.args or q is None or not q.startswith("torch."):
        return
    a = node.args[0]
    names = [a.id] if a.__class__ is ast.Name else []
    if q[6:] in _FROM_LIST:
        names = _list_names(a)
    for name in names:
        if w.growing_list(name) is not None:
            w.hit(
                "growing-cache",
                node,
                f"`{q}` of `{name}`, a Python list that grows in this loop: one element longer each iteration, "
                "so TPU/Trainium compile a new program each step",
                detail=name,
            )
            return


def _list_names(e: ast.AST) -> list[str]:
    """Names whose length decides a tensor's built from ``e``: ``ids``, ``[ids]``, ``[[t] if c else ids]``."""
    c = e.__class__
    if c is ast.Name:
        return [e.id]  # type: ignore[attr-defined]
    if c in (ast.List, ast.Tuple):
        return [n for x in e.elts for n in _list_names(x)]  # type: ignore[attr-defined]
    if c is ast.IfExp:
        return _list_names(e.body) + _list_names(e.orelse)  # type: ignore[attr-defined]
    return []


# --------------------------------------------------------------------------- view-offset-in-loop
@check("view-offset-in-loop", ast.Subscript)
def view_offset_in_loop(w: Walker, node: ast.Subscript) -> None:
    lv = w.scope.loop_vars
    if lv and w.is_tensor(node.value) and not w.on_host(node.value):  # a host tensor has no compiled views
        for n in ast.walk(node.slice):
            if n.__class__ is ast.Name and any(n.id in vs for vs in lv):
                name = ast.unparse(node.value)
                w.hit(
                    "view-offset-in-loop",
                    node,
                    f"`{name}[...]` indexed by the loop variable `{n.id}`: a view at a new storage offset each step, "
                    "which TPU/Trainium compile anew",
                    detail=name,
                    tensor_guess=True,
                )
                return
