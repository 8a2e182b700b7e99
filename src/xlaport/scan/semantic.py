"""What a name holds at a point of the walk: the file's imports and aliases, the function scopes, and the small,
local inference of tensors, masks and host values the rules judge by. :class:`Semantic` is the walker's base
(:mod:`xlaport.scan.walker`); it knows no rule and no traversal order beyond what the walker tells it.

Static analysis cannot know types, so "is this a tensor?" is a small, local inference
(:meth:`Semantic.is_tensor`): names bound in the same function to ``torch.*``/``F.*`` results, to methods
of tensors, to calls of things named like models or losses (``model(x)``, ``criterion(...)``), to
arithmetic on tensors, parameters annotated ``Tensor``, a module's ``.weight``/``.bias``, and the targets of
``for x, y in loader``. "Is this on the host?" (:meth:`Semantic.on_host`) follows the common conversions:
``.cpu()``, ``.numpy()``, ``.to("cpu")``, NumPy, and torch factories given no device. Aliases
(:attr:`Semantic.aliases`) come from imports and from assignments of torch paths, conditional expressions
included (``device_mod = torch.cuda``, ``scope = autocast if ... else nullcontext``), and on ``self``
(``self.dev = torch.cuda``, then ``self.dev.Stream()``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["LOADER", "SCHEDULES", "Scope", "Semantic", "annotated_tensor", "string_value", "tensor_params"]

# ---- tensor inference
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
_MASK_CALLS = {"isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor", "bool"}
_MODEL_CALLEE = re.compile(
    r"^(?!(?:import|get|load|build|make|create|register|find|init|wrap|named|add|set)_)"
    r"(?:\w+_)?(?:model|net|network|module|encoder|decoder|criterion|loss|loss_fn|head|layer|block)s?$"
)
LOADER = re.compile(r"loader|batches|batch_iter|dataset", re.I)


class Scope:
    __slots__ = (
        "fresh",
        "guessed",
        "host",
        "loop_nodes",
        "loop_vars",
        "loops",
        "masks",
        "params",
        "per_iteration",
        "step_loops",
        "strings",
        "tensors",
    )

    def __init__(self) -> None:
        self.tensors: set[str] = set()
        #: how many enclosing loops iterate over a data loader (``for x, y in loader``): one step each
        self.step_loops = 0
        #: for a function a loop over a data loader in this file calls every step, the line of that call
        self.per_iteration = 0
        #: the names in ``tensors`` known as tensors only from a name's spelling (``for x, y in loader``,
        #: ``out = model(x)``, a parameter named ``sigmas``), with that name (``loader``, ``model``, ``sigmas``)
        self.guessed: dict[str, str] = {}
        #: names bound to a value already on the host (``t.cpu()``, ``t.numpy()``, ``np.array(...)``), with the
        #: loop depth where they were bound: reading them later (``.numpy()``, ``.item()``) waits for nothing
        self.host: dict[str, int] = {}
        #: the enclosing ``for``/``while`` statements, outermost first
        self.loop_nodes: list[ast.AST] = []
        self.masks: set[str] = set()
        self.params: set[str] = set()
        self.loops = 0
        self.loop_vars: list[set[str]] = []
        #: per enclosing loop, names given a new value earlier in this iteration that does not depend on
        #: the previous iteration's value (the loop's own targets, ``z = torch.randn(...)``)
        self.fresh: list[set[str]] = []
        #: names bound to a string literal (or f-string) in this scope, with the literal's node
        self.strings: dict[str, ast.AST] = {}


# Diffusion schedules: a sampler's parameter with one of these names is a tensor of noise levels.
SCHEDULES = frozenset({"sigmas", "timesteps", "alphas_cumprod"})
# Calls whose result is never a tensor even when a tensor is passed in.
_NOT_TENSOR_CALLS = frozenset(
    {
        "len", "isinstance", "issubclass", "hasattr", "getattr", "callable", "id", "type", "str", "repr",
        "format", "print", "int", "float", "bool", "complex", "range", "enumerate", "zip", "list", "tuple",
        "dict", "set", "frozenset", "sorted", "reversed", "iter", "next", "any", "all", "hash", "vars", "dir",
    }
)  # fmt: skip
_NOT_TENSOR_MODULES = ("math.", "numpy.", "np.", "os.", "json.", "time.", "random.", "re.", "sys.", "logging.")


class Semantic:
    """Imports, aliases, scopes and the tensor/mask/host inference, updated by the walker as it goes."""

    def __init__(self) -> None:
        #: set by :meth:`is_tensor` (and reset before each check) when a "tensor" rests on a name's spelling
        #: alone: that name (``model`` for ``out = model(x)``), for the finding's message
        self.guess = ""
        #: id of a loop statement -> names of Python lists that grow in its body (``ids.append(t)``)
        self._grown: dict[int, frozenset[str]] = {}
        self.aliases: dict[str, str] = {}
        #: names the file binds to a torch path by assignment (``device_mod = torch.cuda``, ``scope = autocast if
        #: ... else nullcontext``), so that a later rebinding to something else drops the alias again
        self._assigned_aliases: set[str] = set()
        self.module = Scope()
        self.scope = self.module
        self.self_tensors: set[str] = set()

    def dotted(self, node: ast.AST) -> str | None:
        """``a.b.c`` with the first part resolved through the file's imports, or None."""
        parts = []
        while node.__class__ is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if node.__class__ is not ast.Name:
            return None
        name = node.id
        if name == "self" and parts and f"self.{parts[-1]}" in self.aliases:  # `self.dev = torch.cuda`
            name = f"self.{parts.pop()}"
        head = self.aliases.get(name, name)
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
        s = self.scope
        if name in s.tensors:
            if name in s.guessed:
                self.guess = s.guessed[name]
            return True
        if s is not self.module and name in self.module.tensors:
            if name in self.module.guessed:
                self.guess = self.module.guessed[name]
            return True
        return False

    def lookup_mask(self, name: str) -> bool:
        return name in self.scope.masks or (self.scope is not self.module and name in self.module.masks)

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
            if not name or not name[0].islower():
                return False
            if _MODEL_CALLEE.search(name) is not None:
                self.guess = name
                return True
            # a helper of this codebase called with a tensor returns one (`to_d(x, sigma, d)`)
            if (
                name in _NOT_TENSOR_CALLS
                or name.startswith(("is_", "has_"))
                or (q or "").startswith(_NOT_TENSOR_MODULES)
            ):
                return False
            return any(self.is_tensor(a, depth + 1) for a in e.args)  # type: ignore[attr-defined]
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
            if e.attr in _PARAMETERS and v.__class__ is ast.Attribute:  # type: ignore[attr-defined]
                self.guess = e.attr  # type: ignore[attr-defined]
                return True  # `self.layer.weight`: a module's parameter
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

    def on_host(self, e: ast.AST) -> bool:
        """A value already copied to the host: ``t.cpu()``, ``t.to("cpu")``, ``t.numpy()``, ``np.asarray(...)``,
        or a name bound to one (or an element of one)."""
        c = e.__class__
        if c is ast.Name:
            return e.id in self.scope.host  # type: ignore[attr-defined]
        if c is ast.Subscript:
            return self.on_host(e.value)  # type: ignore[attr-defined]
        if c is ast.Call:
            f = e.func  # type: ignore[attr-defined]
            if f.__class__ is ast.Attribute:
                if f.attr in _HOST_METHODS and not e.args:  # type: ignore[attr-defined]
                    return True
                if f.attr == "to" and e.args and _cpu_device(e.args[0]):  # type: ignore[attr-defined]
                    return True
                if f.attr in _KEEPS_PLACE:
                    return self.on_host(f.value)
            q = self.dotted(f)
            if q in _HOST_FACTORIES and not any(k.arg == "device" for k in e.keywords):  # type: ignore[attr-defined]
                return True  # `torch.zeros(shape)` with no device: made in host memory
            return q is not None and q.startswith(("numpy.", "np."))
        return False

    def host_since(self, e: ast.AST) -> int | None:
        """For a receiver that is a name (or an element of one) bound to a host value: the loop depth where
        it was bound; None otherwise."""
        while e.__class__ is ast.Subscript:
            e = e.value
        if e.__class__ is ast.Name:
            return self.scope.host.get(e.id)
        return None

    def _bind_host(self, names: set[str], it: ast.AST) -> None:
        """``for e in host_values``: the loop's targets are on the host too, since before the loop."""
        host = self.scope.host
        if self.on_host(it):
            for n in names:
                host[n] = self.scope.loops
        else:
            for n in names:
                host.pop(n, None)

    def growing_list(self, name: str) -> ast.AST | None:
        """The innermost enclosing loop whose body grows the Python list ``name`` (``name.append(...)``,
        ``name += [...]``) without starting it afresh at the top of each iteration, or None."""
        for loop in reversed(self.scope.loop_nodes):
            grown = self._grown.get(id(loop))
            if grown is None:
                grown = self._grown[id(loop)] = _grown_lists(loop)
            if name in grown:
                return loop
        return None

    def _bind(self, target: ast.AST, tensor: bool, mask: bool, guessed: str = "") -> None:
        c = target.__class__
        if c is ast.Name:
            name = target.id  # type: ignore[attr-defined]
            if tensor:
                self.scope.tensors.add(name)
            else:
                self.scope.tensors.discard(name)
            if tensor and guessed:
                self.scope.guessed[name] = guessed
            else:
                self.scope.guessed.pop(name, None)
            if mask:
                self.scope.masks.add(name)
            else:
                self.scope.masks.discard(name)
        elif c in (ast.Tuple, ast.List):
            for t in target.elts:  # type: ignore[attr-defined]
                self._bind(t, tensor, False, guessed)
        elif c is ast.Starred:
            self._bind(target.value, tensor, False, guessed)  # type: ignore[attr-defined]
        elif c is ast.Attribute:
            v = target.value  # type: ignore[attr-defined]
            if v.__class__ is ast.Name and v.id == "self" and tensor:
                self.self_tensors.add(target.attr)  # type: ignore[attr-defined]

    @staticmethod
    def assign_targets(node: ast.AST) -> list[Any]:
        return node.targets if node.__class__ is ast.Assign else [node.target]  # type: ignore[attr-defined]

    def torch_path(self, e: ast.AST) -> str | None:
        """The torch path an expression names (``torch.cuda``, an imported ``autocast``), through the branches of a
        conditional expression (the first that names one), or None."""
        if e.__class__ is ast.IfExp:
            return self.torch_path(e.body) or self.torch_path(e.orelse)
        if e.__class__ in (ast.Name, ast.Attribute) and self._pure_chain(e):
            q = self.dotted(e)
            if q is not None and (q == "torch" or q.startswith("torch.")):
                return q
        return None

    def _bind_alias(self, name: str, value: ast.AST) -> None:
        """``name = torch.cuda`` (or ``= autocast if ... else nullcontext``) makes ``name.X`` read as the torch path."""
        q = self.torch_path(value)
        if q is not None:
            held = self.aliases.get(name, "") if name in self._assigned_aliases else ""
            if held.startswith("torch.cuda") and not q.startswith("torch.cuda"):
                return  # `if cuda: m = torch.cuda` / `elif npu: m = torch.npu`: either may hold, CUDA's must be ported
            self.aliases[name] = q
            self._assigned_aliases.add(name)
        elif name in self._assigned_aliases:
            self.aliases.pop(name, None)
            self._assigned_aliases.discard(name)


_HOST_METHODS = frozenset({"cpu", "numpy", "tolist"})
#: methods whose result stays where the receiver is (``t.cpu().float()`` is still on the host)
_KEEPS_PLACE = frozenset({"float", "double", "half", "long", "int", "bool", "detach", "clone", "contiguous", "squeeze"})
_GROW_METHODS = frozenset({"append", "extend", "insert"})
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


#: torch factories that, given no ``device=``, make their tensor in host memory
_HOST_FACTORIES = frozenset(
    f"torch.{n}"
    for n in ("zeros", "ones", "empty", "full", "tensor", "as_tensor", "arange", "from_numpy", "randn", "rand")
)
#: attributes that name a module's parameters (``self.layer.weight``), read off another attribute
_PARAMETERS = frozenset({"weight", "bias"})


def _cpu_device(e: ast.AST) -> bool:
    if e.__class__ is ast.Constant:
        return e.value == "cpu"
    if e.__class__ is ast.Call and e.args:  # torch.device("cpu")
        return Semantic.last_name(e.func) == "device" and _cpu_device(e.args[0])
    return False


def _grown_lists(loop: ast.AST) -> frozenset[str]:
    """Names of Python lists that grow in ``loop``'s body and are not rebound by a statement of the body
    itself (``ids = []`` at the top of each iteration starts them afresh)."""
    grown: set[str] = set()
    reset: set[str] = set()
    for st in loop.body:  # type: ignore[attr-defined]
        if st.__class__ is ast.Assign:
            refs = {n.id for n in ast.walk(st.value) if n.__class__ is ast.Name}
            reset.update(t.id for t in st.targets if t.__class__ is ast.Name and t.id not in refs)
    stack: list[ast.AST] = list(loop.body)  # type: ignore[attr-defined]
    while stack:
        n = stack.pop()
        c = n.__class__
        if c in _NESTED:
            continue
        if c is ast.Call:
            f = n.func  # type: ignore[attr-defined]
            if f.__class__ is ast.Attribute and f.attr in _GROW_METHODS and f.value.__class__ is ast.Name:
                grown.add(f.value.id)
        elif c is ast.AugAssign:
            t, v = n.target, n.value  # type: ignore[attr-defined]
            if t.__class__ is ast.Name and isinstance(n.op, ast.Add) and v.__class__ in (ast.List, ast.ListComp):  # type: ignore[attr-defined]
                grown.add(t.id)
        elif c is ast.Assign:
            v = n.value  # type: ignore[attr-defined]
            left = v.left if v.__class__ is ast.BinOp and isinstance(v.op, ast.Add) else None
            if (
                left is not None
                and left.__class__ is ast.Name
                and v.right.__class__ in (ast.List, ast.ListComp)
                and any(t.__class__ is ast.Name and t.id == left.id for t in n.targets)  # type: ignore[attr-defined]
            ):
                grown.add(left.id)
        stack.extend(ast.iter_child_nodes(n))
    return frozenset(grown - reset)


def annotated_tensor(a: ast.AST) -> bool:
    if a.__class__ is ast.Constant and isinstance(a.value, str):
        return a.value.split(".")[-1] == "Tensor"
    return Semantic.last_name(a) == "Tensor"


def string_value(e: ast.AST) -> bool:
    c = e.__class__
    if c is ast.Constant:
        return isinstance(e.value, str)  # type: ignore[attr-defined]
    if c is ast.JoinedStr:
        return True
    if c is ast.IfExp:
        return string_value(e.body) or string_value(e.orelse)  # type: ignore[attr-defined]
    return False


def tensor_params(fn: ast.AST, got: set[int | str]) -> set[str]:
    """The parameters of ``fn`` that calls passed a tensor to (positions shift past ``self``/``cls``)."""
    args = fn.args  # type: ignore[attr-defined]
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    static = any(Semantic.last_name(d) == "staticmethod" for d in fn.decorator_list)  # type: ignore[attr-defined]
    if positional and positional[0] in ("self", "cls") and not static:
        positional = positional[1:]
    names = set(positional) | {a.arg for a in args.kwonlyargs}
    out = set()
    for g in got:
        if isinstance(g, int):
            if g < len(positional):
                out.add(positional[g])
        elif g in names:
            out.add(g)
    return out
