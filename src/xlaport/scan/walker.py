"""One walk of a Python syntax tree that applies every rule at once.

:func:`analyse` takes a parsed module and returns raw hits ``(rule, line, col, message, detail, lines,
severity)``; :mod:`xlaport.scan.engine` turns them into findings, applies suppressions and
configuration. Nothing here imports or runs the code it looks at.

Static analysis cannot know types, so "is this a tensor?" is a small, local inference
(:meth:`Walker.is_tensor`): names bound in the same function to ``torch.*``/``F.*`` results, to methods
of tensors, to calls of things named like models or losses (``model(x)``, ``criterion(...)``), to
arithmetic on tensors, parameters annotated ``Tensor``, and the targets of ``for x, y in loader``.
Rules that need a tensor (``print(t)`` in a loop, ``if t:``, ``x[mask]``, ``sigmas[i]``) use it; rules
about a call's name (``.item()``, ``nonzero``) do not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["Hit", "analyse", "CUDA_ONLY_PACKAGES", "dependency_advice"]

# rule, line, col (0-based), message, detail (e.g. the torch.cuda name), lines (kernels), severity override
Hit = tuple[str, int, int, str, str, int, str]

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
# torch.X that do not return a tensor
_NOT_TENSOR_TORCH = {
    "device",
    "dtype",
    "Size",
    "no_grad",
    "enable_grad",
    "inference_mode",
    "set_grad_enabled",
    "manual_seed",
    "seed",
    "compile",
    "load",
    "save",
    "is_tensor",
    "is_storage",
    "is_grad_enabled",
    "is_floating_point",
    "is_complex",
    "numel",
    "typename",
    "get_default_dtype",
    "set_default_dtype",
    "set_default_device",
    "autocast",
    "use_deterministic_algorithms",
    "set_float32_matmul_precision",
    "set_printoptions",
    "get_rng_state",
    "Generator",
    "finfo",
    "iinfo",
    "broadcast_shapes",
    "cond",
}
_TENSOR_SUBMODULES = {"nn.functional", "linalg", "fft", "special", "masked", "sparse"}
_NOT_TENSOR_METHODS = {
    "item",
    "tolist",
    "numpy",
    "size",
    "dim",
    "ndimension",
    "numel",
    "nelement",
    "stride",
    "storage_offset",
    "data_ptr",
    "element_size",
    "is_contiguous",
    "is_floating_point",
    "is_complex",
    "get_device",
    "untyped_storage",
    "storage",
    "register_hook",
    "backward",
    "__len__",
    "keys",
    "values",
    "items",
    "state_dict",
    "parameters",
    "named_parameters",
    "append",
    "format",
    "join",
    "split",
    "startswith",
    "endswith",
}
_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
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
_MASK_CALLS = {"isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor", "bool"}
_MODEL_CALLEE = re.compile(
    r"^(?!(?:import|get|load|build|make|create|register|find|init|wrap|named|add|set)_)"
    r"(?:\w+_)?(?:model|net|network|module|encoder|decoder|criterion|loss|loss_fn|head|layer|block)s?$"
)
_LOADER = re.compile(r"loader|batches|batch_iter|dataset", re.I)
_DEVICE_STR = re.compile(r"^cuda(?::\d+)?$")
_SKIP_FIELDS = {"ctx", "op", "ops", "type_ignores"}


def _child_fields(cls: type) -> tuple[str, ...]:
    return tuple(f for f in getattr(cls, "_fields", ()) if f not in _SKIP_FIELDS)


_FIELDS: dict[type, tuple[str, ...]] = {}


class _Scope:
    __slots__ = ("loop_vars", "loops", "masks", "params", "tensors")

    def __init__(self) -> None:
        self.tensors: set[str] = set()
        self.masks: set[str] = set()
        self.params: set[str] = set()
        self.loops = 0
        self.loop_vars: list[set[str]] = []


class Walker:
    """Visits every node once; keeps just enough context (imports, scope, loops, try blocks)."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.aliases: dict[str, str] = {}
        self.module = _Scope()
        self.scope = self.module
        self.self_tensors: set[str] = set()
        self.optional_import = 0
        self._seen: set[tuple[str, int, int]] = set()
        self._deps: set[str] = set()
        self._handlers: dict[type, Any] = {
            ast.Import: self.v_import,
            ast.ImportFrom: self.v_importfrom,
            ast.Call: self.v_call,
            ast.Attribute: self.v_attribute,
            ast.Subscript: self.v_subscript,
            ast.Assign: self.v_assign,
            ast.AnnAssign: self.v_assign,
            ast.For: self.v_for,
            ast.AsyncFor: self.v_for,
            ast.While: self.v_while,
            ast.If: self.v_if,
            ast.IfExp: self.v_if,
            ast.Assert: self.v_assert,
            ast.FunctionDef: self.v_function,
            ast.AsyncFunctionDef: self.v_function,
            ast.Lambda: self.v_lambda,
            ast.Try: self.v_try,
            ast.ListComp: self.v_comp,
            ast.SetComp: self.v_comp,
            ast.GeneratorExp: self.v_comp,
            ast.DictComp: self.v_comp,
            ast.Name: self.v_leaf,
            ast.Constant: self.v_leaf,
        }
        if hasattr(ast, "TryStar"):
            self._handlers[ast.TryStar] = self.v_try

    # ------------------------------------------------------------------ traversal
    def visit(self, node: ast.AST) -> None:
        h = self._handlers.get(node.__class__)
        if h is not None:
            h(node)
        else:
            self.generic(node)

    def generic(self, node: ast.AST) -> None:
        cls = node.__class__
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _FIELDS[cls] = _child_fields(cls)
        visit = self.visit
        for f in fields:
            v = getattr(node, f, None)
            if v is None:
                continue
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, ast.AST):
                        visit(x)
            elif isinstance(v, ast.AST):
                visit(v)

    def visit_all(self, nodes: Iterable[ast.AST | None]) -> None:
        for n in nodes:
            if n is not None:
                self.visit(n)

    def v_leaf(self, node: ast.AST) -> None:
        return None

    # ------------------------------------------------------------------ hits
    def hit(self, rule: str, node: ast.AST, message: str, detail: str = "", lines: int = 0, severity: str = "") -> None:
        line = getattr(node, "lineno", 1) or 1
        col = getattr(node, "col_offset", 0) or 0
        key = (rule, line, col)
        if key in self._seen:
            return
        self._seen.add(key)
        self.hits.append((rule, line, col, message, detail, lines, severity))

    # ------------------------------------------------------------------ names
    def dotted(self, node: ast.AST) -> str | None:
        """``a.b.c`` with the first part resolved through the file's imports, or None."""
        parts = []
        while node.__class__ is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if node.__class__ is not ast.Name:
            return None
        head = self.aliases.get(node.id, node.id)
        if parts:
            parts.reverse()
            return head + "." + ".".join(parts)
        return head

    @staticmethod
    def _pure_chain(node: ast.AST) -> bool:
        while node.__class__ is ast.Attribute:
            node = node.value
        return node.__class__ is ast.Name

    @staticmethod
    def last_name(node: ast.AST) -> str:
        if node.__class__ is ast.Attribute:
            return node.attr
        if node.__class__ is ast.Name:
            return node.id
        return ""

    def lookup_tensor(self, name: str) -> bool:
        return name in self.scope.tensors or (self.scope is not self.module and name in self.module.tensors)

    def lookup_mask(self, name: str) -> bool:
        return name in self.scope.masks or (self.scope is not self.module and name in self.module.masks)

    # ------------------------------------------------------------------ tensor inference
    def is_tensor(self, e: ast.AST, depth: int = 0) -> bool:
        if depth > 8:
            return False
        c = e.__class__
        if c is ast.Name:
            return self.lookup_tensor(e.id)  # type: ignore[attr-defined]
        if c is ast.Call:
            f = e.func  # type: ignore[attr-defined]
            q = self.dotted(f)
            if q is not None and q.startswith("torch."):
                rest = q[6:]
                if "." not in rest:
                    return rest not in _NOT_TENSOR_TORCH and not rest[:1].isupper() and not rest.startswith("_")
                sub = rest.rsplit(".", 1)[0]
                return sub in _TENSOR_SUBMODULES
            if f.__class__ is ast.Attribute:
                if f.attr in _NOT_TENSOR_METHODS:
                    return False
                if self.is_tensor(f.value, depth + 1):
                    return True
            name = self.last_name(f)
            return bool(name) and name[0].islower() and _MODEL_CALLEE.search(name) is not None
        if c is ast.BinOp:
            return self.is_tensor(e.left, depth + 1) or self.is_tensor(e.right, depth + 1)  # type: ignore[attr-defined]
        if c is ast.UnaryOp:
            return not isinstance(e.op, ast.Not) and self.is_tensor(e.operand, depth + 1)  # type: ignore[attr-defined]
        if c is ast.Subscript:
            return self.is_tensor(e.value, depth + 1)  # type: ignore[attr-defined]
        if c is ast.Attribute:
            if e.attr in _TENSOR_ATTRS:  # type: ignore[attr-defined]
                return self.is_tensor(e.value, depth + 1)  # type: ignore[attr-defined]
            v = e.value  # type: ignore[attr-defined]
            return v.__class__ is ast.Name and v.id == "self" and e.attr in self.self_tensors  # type: ignore[attr-defined]
        if c is ast.Compare:
            return self._tensor_compare(e, depth)  # type: ignore[arg-type]
        if c is ast.IfExp:
            return self.is_tensor(e.body, depth + 1) or self.is_tensor(e.orelse, depth + 1)  # type: ignore[attr-defined]
        return False

    def _tensor_compare(self, e: ast.Compare, depth: int = 0) -> bool:
        if any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in e.ops):
            return False
        return any(self.is_tensor(x, depth + 1) for x in (e.left, *e.comparators))

    def is_mask(self, e: ast.AST) -> bool:
        """A boolean tensor built from the data: a comparison of a tensor, ``~m``, ``torch.isnan(...)``."""
        c = e.__class__
        if c is ast.Compare:
            return self._tensor_compare(e)  # type: ignore[arg-type]
        if c is ast.Name:
            return self.lookup_mask(e.id)  # type: ignore[attr-defined]
        if c is ast.UnaryOp and isinstance(e.op, ast.Invert):  # type: ignore[attr-defined]
            return self.is_mask(e.operand)  # type: ignore[attr-defined]
        if c is ast.BinOp and isinstance(e.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):  # type: ignore[attr-defined]
            return self.is_mask(e.left) or self.is_mask(e.right)  # type: ignore[attr-defined]
        if c is ast.Call:
            f = e.func  # type: ignore[attr-defined]
            name = self.last_name(f)
            if name in _MASK_CALLS:
                q = self.dotted(f)
                if q is not None and q.startswith("torch."):
                    return True
                return f.__class__ is ast.Attribute and self.is_tensor(f.value)
            if name in ("eq", "ne", "gt", "lt", "ge", "le") and f.__class__ is ast.Attribute:
                return self.is_tensor(f.value)
        return False

    def _bind(self, target: ast.AST, tensor: bool, mask: bool) -> None:
        c = target.__class__
        if c is ast.Name:
            name = target.id  # type: ignore[attr-defined]
            if tensor:
                self.scope.tensors.add(name)
            else:
                self.scope.tensors.discard(name)
            if mask:
                self.scope.masks.add(name)
            else:
                self.scope.masks.discard(name)
        elif c in (ast.Tuple, ast.List):
            for t in target.elts:  # type: ignore[attr-defined]
                self._bind(t, tensor, False)
        elif c is ast.Starred:
            self._bind(target.value, tensor, False)  # type: ignore[attr-defined]
        elif c is ast.Attribute:
            v = target.value  # type: ignore[attr-defined]
            if v.__class__ is ast.Name and v.id == "self" and tensor:
                self.self_tensors.add(target.attr)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ imports
    def _import_hit(self, node: ast.AST, module: str) -> None:
        top = module.split(".", 1)[0]
        info = CUDA_ONLY_PACKAGES.get(top)
        if info is None:
            return
        if top == "nvidia" and not module.startswith("nvidia.dali"):
            return
        if top in self._deps:
            return  # one finding per package per file
        self._deps.add(top)
        optional = self.optional_import > 0
        what = "optional import" if optional else "import"
        self.hit(
            "cuda-only-dependency",
            node,
            f"{what} of `{module}` (CUDA only); instead: {info[1]}",
            detail=top,
            severity="warning" if optional else "",
        )

    def v_import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".", 1)[0]
                self.aliases.setdefault(top, top)
            self._import_hit(node, a.name)

    def v_importfrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        mod = node.module
        for a in node.names:
            if a.name != "*":
                self.aliases[a.asname or a.name] = f"{mod}.{a.name}"
        self._import_hit(node, mod)

    def v_try(self, node: ast.AST) -> None:
        optional = any(_catches_import_error(h) for h in node.handlers)  # type: ignore[attr-defined]
        if optional:
            self.optional_import += 1
        self.visit_all(node.body)  # type: ignore[attr-defined]
        if optional:
            self.optional_import -= 1
        self.visit_all(node.handlers)  # type: ignore[attr-defined]
        self.visit_all(node.orelse)  # type: ignore[attr-defined]
        self.visit_all(node.finalbody)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ torch.cuda names
    def _cuda_name(self, node: ast.AST, q: str, called: bool) -> bool:
        """Report a ``torch.cuda.*`` / ``torch.backends.cud*`` name; True when it was one."""
        if q.startswith("torch.cuda.") or q == "torch.cuda":
            rest = q[len("torch.cuda.") :] if q != "torch.cuda" else ""
            head = rest.split(".", 1)[0]
            shown = f"`{q}{'()' if called else ''}`"
            if head == "amp":
                self.hit("cuda-amp", node, f"{shown}: CUDA automatic mixed precision", detail=q)
            elif head in _STREAM_NAMES:
                self.hit("cuda-streams", node, f"{shown}: CUDA stream/event/graph", detail=q)
            elif head == "nccl":
                self.hit("nccl-backend", node, f"{shown}: NCCL bindings", detail=q)
            elif rest:
                self.hit("cuda-api", node, shown, detail=q)
            return True
        if q.startswith(("torch.backends.cudnn", "torch.backends.cuda")):
            self.hit("cuda-api", node, f"`{q}`: a CUDA/cuDNN switch", detail=q)
            return True
        if q.startswith("torch.distributed.Backend.NCCL"):
            self.hit("nccl-backend", node, f"`{q}`", detail=q)
            return True
        return False

    def v_attribute(self, node: ast.Attribute) -> None:
        if self._pure_chain(node):
            q = self.dotted(node)
            if q is not None and q.startswith("torch."):
                self._cuda_name(node, q, called=False)
            return
        self.visit(node.value)

    # ------------------------------------------------------------------ device strings and nccl
    def _device_string(self, e: ast.AST | None) -> str | None:
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
            return self._device_string(e.body) or self._device_string(e.orelse)  # type: ignore[attr-defined]
        if c is ast.BoolOp:
            for v in e.values:  # type: ignore[attr-defined]
                s = self._device_string(v)
                if s:
                    return s
        return None

    @staticmethod
    def _nccl(e: ast.AST | None) -> bool:
        if e is None:
            return False
        if e.__class__ is ast.Constant:
            v = e.value
            return isinstance(v, str) and "nccl" in v.lower() and len(v) < 40
        if e.__class__ is ast.IfExp:
            return Walker._nccl(e.body) or Walker._nccl(e.orelse)
        return False

    # ------------------------------------------------------------------ calls
    def v_call(self, node: ast.Call) -> None:
        func = node.func
        fcls = func.__class__
        q = self.dotted(func) if fcls in (ast.Name, ast.Attribute) else None
        attr = func.attr if fcls is ast.Attribute else (func.id if fcls is ast.Name else "")  # type: ignore[attr-defined]
        scope = self.scope
        in_loop = scope.loops > 0
        handled_func = False

        if q is not None and q.startswith("torch."):
            if q in _AUTOCAST:
                self._autocast(node, q)
                handled_func = True
            elif q in _SCALER:
                self.hit("cuda-amp", node, f"`{q}()`: loss scaling for fp16", detail=q)
                handled_func = True
            elif q in _EXTENSIONS:
                if q != "torch.utils.cpp_extension.load_inline" or any(
                    k.arg in ("cuda_sources", "with_cuda") for k in node.keywords
                ):
                    self._extension(node, _EXTENSIONS[q])
                handled_func = True
            elif q == "torch.utils.cpp_extension.load":
                if any(_is_cuda_source(s) for s in _strings(node)):
                    self._extension(node, "cpp_extension.load")
                handled_func = True
            elif self._cuda_name(node, q, called=True):
                handled_func = True
        elif q is not None:
            if q in _EXTENSIONS:
                self._extension(node, _EXTENSIONS[q])
                handled_func = True
            elif attr == "GradScaler":
                self.hit("cuda-amp", node, "`GradScaler()`: loss scaling for fp16", detail="GradScaler")
                handled_func = True
            elif attr == "setup" and q.endswith("setup"):
                self._setup_requires(node)

        if attr in ("record_stream", "wait_stream") and fcls is ast.Attribute:
            self.hit("cuda-streams", node, f"`.{attr}()`: CUDA stream bookkeeping", detail=attr)
        if attr == "cuda" and fcls is ast.Attribute and not (q or "").startswith("torch.cuda"):
            self.hit("cuda-device", node, "`.cuda()` moves to a CUDA device", detail=".cuda()")
        elif attr == "half" and fcls is ast.Attribute and not node.args:
            self.hit("cuda-amp", node, "`.half()`: fp16 weights or activations", detail=".half()")
        elif attr in _DYNAMIC_OPS and fcls in (ast.Attribute, ast.Name):
            if not (q or "").startswith(("numpy.", "np.", "pandas.", "pd.")) and not any(
                k.arg == "size" for k in node.keywords
            ):
                self.hit("dynamic-shape-op", node, f"`{attr}` has a data-dependent output shape", detail=attr)
        elif attr == "pad_sequence" and not any(k.arg in ("padding_side",) for k in node.keywords):
            self.hit(
                "variable-length-batch", node, "`pad_sequence` pads to the longest in each batch: a shape per batch"
            )
        elif attr == "where" and (q or "").startswith("torch.") and len(node.args) == 1 and not node.keywords:
            self.hit("dynamic-shape-op", node, "one-argument `torch.where` is `nonzero`", detail="where")

        if in_loop:
            if attr in _SYNC_METHODS and fcls is ast.Attribute and not node.args:
                self.hit("host-sync-in-loop", node, f"`.{attr}()` in a loop copies to the host every iteration")
            elif fcls is ast.Name and attr == "print":
                for a in node.args:
                    if self._prints_tensor(a):
                        self.hit("host-sync-in-loop", node, "`print` of a tensor in a loop syncs every iteration")
                        break
            elif fcls is ast.Name and attr in _SYNC_BUILTINS and len(node.args) == 1 and self.is_tensor(node.args[0]):
                self.hit("host-sync-in-loop", node, f"`{attr}(tensor)` in a loop syncs every iteration")

        # device strings: torch.device("cuda"), x.to("cuda"), device="cuda", map_location="cuda"
        if attr in ("to", "device", "Generator", "set_default_device", "get_device_module") or q == "torch.device":
            for a in node.args[:2]:
                s = self._device_string(a)
                if s:
                    self.hit("cuda-device", a, f'device string "{s}"', detail=s)
        for k in node.keywords:
            if k.arg in ("device", "map_location", "device_type") and q not in _AUTOCAST:
                s = self._device_string(k.value)
                if s:
                    self.hit("cuda-device", k.value, f'{k.arg}="{s}"', detail=s)
            elif (
                k.arg == "padding"
                and isinstance(k.value, ast.Constant)
                and (k.value.value is True or k.value.value == "longest")
            ):
                self.hit(
                    "variable-length-batch", k.value, f"padding={k.value.value!r} pads to the longest in each batch"
                )
            elif k.arg == "backend" and self._nccl(k.value):
                self.hit("nccl-backend", k.value, 'backend "nccl"', detail="nccl")
        if attr in ("init_process_group", "new_group", "new_subgroups") and node.args and self._nccl(node.args[0]):
            self.hit("nccl-backend", node.args[0], f'`{attr}("nccl")`', detail="nccl")

        if not handled_func or not self._pure_chain(func):
            if fcls is ast.Attribute:
                if not self._pure_chain(func):
                    self.visit(func.value)  # type: ignore[attr-defined]
                elif not handled_func:
                    self.v_attribute(func)  # type: ignore[arg-type]
            elif fcls is not ast.Name:
                self.visit(func)
        self.visit_all(node.args)
        for k in node.keywords:
            self.visit(k.value)

    def _prints_tensor(self, a: ast.AST) -> bool:
        if a.__class__ is ast.JoinedStr:
            return any(v.__class__ is ast.FormattedValue and self.is_tensor(v.value) for v in a.values)
        return self.is_tensor(a)

    def _autocast(self, node: ast.Call, q: str) -> None:
        device = node.args[0] if node.args else None
        dtype = node.args[1] if len(node.args) > 1 else None
        for k in node.keywords:
            if k.arg == "device_type":
                device = k.value
            elif k.arg == "dtype":
                dtype = k.value
        dev = device.value if isinstance(device, ast.Constant) else None
        dt = self.dotted(dtype) if dtype is not None else None
        fp16 = dt in ("torch.float16", "torch.half")
        if q == "torch.cuda.amp.autocast":
            self.hit("cuda-amp", node, "`torch.cuda.amp.autocast()`: CUDA fp16 autocast", detail=q)
        elif dev == "cuda" or fp16:
            what = ", ".join(x for x in (f'"{dev}"' if dev == "cuda" else "", "float16" if fp16 else "") if x)
            self.hit("cuda-amp", node, f"`{q}({what})`: CUDA fp16 autocast", detail=q)

    def _extension(self, node: ast.Call, what: str) -> None:
        lines = 0
        for k in node.keywords:
            if k.arg in ("cuda_sources", "cuda_source") or (k.arg == "code" and what.startswith(("cupy", "pycuda"))):
                lines += _string_lines(k.value)
        if what.startswith(("cupy", "pycuda")) and node.args:
            lines += _string_lines(node.args[0])
        n = f" ({lines} lines of CUDA C++)" if lines else ""
        self.hit("cuda-extension", node, f"`{what}` compiles a CUDA kernel{n}", detail=what, lines=lines)

    def _setup_requires(self, node: ast.Call) -> None:
        for k in node.keywords:
            if k.arg not in ("install_requires", "extras_require", "setup_requires"):
                continue
            for s in _strings(k.value):
                m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", s)
                adv = dependency_advice(m.group(1)) if m else None
                if adv is not None:
                    self.hit(
                        "cuda-only-dependency", node, f"`{s.strip()}` in {k.arg} (CUDA only); instead: {adv[1]}", adv[0]
                    )

    # ------------------------------------------------------------------ subscripts
    def v_subscript(self, node: ast.Subscript) -> None:
        if node.ctx.__class__ is ast.Load:
            sl = node.slice
            elts = sl.elts if sl.__class__ is ast.Tuple else (sl,)
            for e in elts:
                if e.__class__ is not ast.Slice and self.is_mask(e):
                    self.hit("boolean-mask-index", node, "indexing with a boolean mask has a data-dependent shape")
                    break
            lv = self.scope.loop_vars
            if lv and self.is_tensor(node.value):
                for n in ast.walk(sl):
                    if n.__class__ is ast.Name and any(n.id in vs for vs in lv):
                        name = ast.unparse(node.value)
                        self.hit(
                            "view-offset-in-loop",
                            node,
                            f"`{name}[...]` indexed by the loop variable `{n.id}`: a new view offset per step",
                            detail=name,
                        )
                        break
        self.visit(node.value)
        self.visit(node.slice)

    # ------------------------------------------------------------------ assignments
    def v_assign(self, node: ast.AST) -> None:
        value = getattr(node, "value", None)
        targets = node.targets if node.__class__ is ast.Assign else [node.target]  # type: ignore[attr-defined]
        if value is not None:
            self.visit(value)
            self._growing(node, targets, value)
            tensor = self.is_tensor(value)
            mask = self.is_mask(value)
            for t in targets:
                self._bind(t, tensor or mask, mask)
                if t.__class__ is ast.Name:
                    low = t.id.lower()
                    if "device" in low or low in ("dev", "map_location"):
                        s = self._device_string(value)
                        if s:
                            self.hit("cuda-device", value, f'`{t.id} = "{s}"`', detail=s)
                    elif "backend" in low and self._nccl(value):
                        self.hit("nccl-backend", value, f'`{t.id} = "nccl"`', detail="nccl")
        elif node.__class__ is ast.AnnAssign and _annotated_tensor(node.annotation):
            for t in targets:
                self._bind(t, True, False)
        for t in targets:
            if t.__class__ is not ast.Name:
                self.visit(t)

    def _growing(self, node: ast.AST, targets: list[Any], value: ast.AST) -> None:
        calls = value.elts if value.__class__ is ast.Tuple else [value]
        for c in calls:
            if c.__class__ is not ast.Call or not c.args:
                continue
            q = self.dotted(c.func)
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
                if name in names and (self.scope.loops > 0 or name in self.scope.params):
                    where = "in a loop" if self.scope.loops > 0 else "from a parameter (called once per step)"
                    self.hit("growing-cache", c, f"`{name}` grows by `{q}` {where}: a new shape each step", name)
                    return

    # ------------------------------------------------------------------ loops
    def _loop_names(self, target: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(target) if n.__class__ is ast.Name}

    def v_for(self, node: ast.For) -> None:
        self.visit(node.iter)
        names = self._loop_names(node.target)
        it = node.iter
        src = self.last_name(it.func if it.__class__ is ast.Call else it)
        if (src and _LOADER.search(src)) or self.is_tensor(it):
            for n in names:
                self.scope.tensors.add(n)
        else:
            for n in names:
                self.scope.tensors.discard(n)
        s = self.scope
        s.loops += 1
        s.loop_vars.append(names)
        self.visit_all(node.body)
        s.loop_vars.pop()
        s.loops -= 1
        self.visit_all(node.orelse)

    def v_while(self, node: ast.While) -> None:
        s = self.scope
        s.loops += 1
        self._condition(node.test, node)
        self.visit(node.test)
        self.visit_all(node.body)
        s.loops -= 1
        self.visit_all(node.orelse)

    def v_comp(self, node: ast.AST) -> None:
        s = self.scope
        gens = node.generators  # type: ignore[attr-defined]
        for g in gens:
            self.visit(g.iter)
        s.loops += 1  # a host sync per element is still one per iteration
        for g in gens:
            self.visit_all(g.ifs)
        if node.__class__ is ast.DictComp:
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)  # type: ignore[attr-defined]
        s.loops -= 1

    # ------------------------------------------------------------------ conditions
    def _condition(self, test: ast.AST, node: ast.AST) -> None:
        if self._tensor_truth(test):
            self.hit("tensor-condition", node, "a Python branch on a tensor's value syncs with the host")

    def _tensor_truth(self, e: ast.AST) -> bool:
        c = e.__class__
        if c is ast.BoolOp:
            return any(self._tensor_truth(v) for v in e.values)  # type: ignore[attr-defined]
        if c is ast.UnaryOp and isinstance(e.op, ast.Not):  # type: ignore[attr-defined]
            return self._tensor_truth(e.operand)  # type: ignore[attr-defined]
        if c is ast.Name:
            return self.lookup_tensor(e.id)  # type: ignore[attr-defined]
        if c is ast.Compare:
            return self._tensor_compare(e)  # type: ignore[arg-type]
        if c is ast.Call:
            f = e.func  # type: ignore[attr-defined]
            q = self.dotted(f)
            if q is not None and q.startswith("torch.") and q[6:] in _CONDITION_TORCH:
                return True
            if f.__class__ is ast.Attribute and f.attr in ("any", "all", "equal", "allclose"):
                return self.is_tensor(f.value) or self.is_mask(f.value) or f.value.__class__ is ast.Compare
        return False

    def v_if(self, node: ast.AST) -> None:
        self._condition(node.test, node)  # type: ignore[attr-defined]
        self.generic(node)

    def v_assert(self, node: ast.Assert) -> None:
        self._condition(node.test, node)
        self.generic(node)

    # ------------------------------------------------------------------ functions
    def v_function(self, node: ast.AST) -> None:
        decos = node.decorator_list  # type: ignore[attr-defined]
        for d in decos:
            target = d.func if d.__class__ is ast.Call else d
            q = self.dotted(target) or ""
            if q in _TRITON_DECOS or (q.startswith("triton.") and q.endswith((".jit", ".autotune"))):
                first = min(x.lineno for x in decos)
                lines = (getattr(node, "end_lineno", None) or node.lineno) - first + 1  # type: ignore[attr-defined]
                self.hit(
                    "triton-kernel",
                    d,
                    f"Triton kernel `{node.name}` ({lines} lines)",  # type: ignore[attr-defined]
                    detail=node.name,  # type: ignore[attr-defined]
                    lines=lines,
                )
                break
        self.visit_all(decos)
        args = node.args  # type: ignore[attr-defined]
        self._defaults(args)
        if node.returns is not None:  # type: ignore[attr-defined]
            self.visit(node.returns)  # type: ignore[attr-defined]
        outer = self.scope
        inner = _Scope()
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [x for x in (args.vararg, args.kwarg) if x is not None]
        for a in every:
            inner.params.add(a.arg)
            if a.annotation is not None and _annotated_tensor(a.annotation):
                inner.tensors.add(a.arg)
        self.scope = inner
        try:
            self.visit_all(node.body)  # type: ignore[attr-defined]
        finally:
            self.scope = outer

    def _defaults(self, args: ast.arguments) -> None:
        positional = [*args.posonlyargs, *args.args]
        for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            self._default(a, d)
        for a, kd in zip(args.kwonlyargs, args.kw_defaults):
            if kd is not None:
                self._default(a, kd)

    def _default(self, a: ast.arg, d: ast.AST) -> None:
        if "device" in a.arg.lower():
            s = self._device_string(d)
            if s:
                self.hit("cuda-device", d, f'default {a.arg}="{s}"', detail=s)
        elif "backend" in a.arg.lower() and self._nccl(d):
            self.hit("nccl-backend", d, f'default {a.arg}="nccl"', detail="nccl")
        self.visit(d)

    def v_lambda(self, node: ast.Lambda) -> None:
        self._defaults(node.args)
        self.visit(node.body)


def _catches_import_error(h: ast.ExceptHandler) -> bool:
    if h.type is None:
        return True
    names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return any(
        isinstance(n, (ast.Name, ast.Attribute))
        and Walker.last_name(n) in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError")
        for n in names
    )


def _annotated_tensor(a: ast.AST) -> bool:
    if a.__class__ is ast.Constant and isinstance(a.value, str):
        return a.value.split(".")[-1] == "Tensor"
    return Walker.last_name(a) == "Tensor"


def _strings(e: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(e) if n.__class__ is ast.Constant and isinstance(n.value, str)]


def _is_cuda_source(s: str) -> bool:
    return s.endswith((".cu", ".cuh"))


def _string_lines(e: ast.AST) -> int:
    return sum(s.count("\n") + 1 for s in _strings(e) if "\n" in s or "__global__" in s)


def analyse(tree: ast.AST) -> list[Hit]:
    """Every rule's hits in one walk of ``tree``, in walk order."""
    w = Walker()
    w.visit(tree)
    return w.hits
