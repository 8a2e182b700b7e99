"""One walk of a Python syntax tree that keeps the context every rule needs, and calls the rules' checks.

The walker knows no rule. It keeps what a check needs to judge a node (the file's imports, the function
scope, loop depth and loop variables, ``try`` blocks that catch ``ImportError``, the small tensor inference
below) and, at each node, calls the checks registered for that node's type (:func:`check`). A check is one
function for one rule and one node type, in :mod:`xlaport.scan.checks`; a new rule is such a function plus
its row in :data:`xlaport.scan.rules.RULES`.

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
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Hit", "Check", "CHECKS", "check", "checked_rules", "analyse", "Walker", "DEFAULTS"]

# rule, line, col (0-based), message, detail (e.g. the torch.cuda name), lines (kernels), severity override,
# confidence ("high", or "low" when the finding rests on a name taken for a tensor from its spelling alone)
Hit = tuple[str, int, int, str, str, int, str, str]
Check = Callable[["Walker", Any], None]

#: node type -> the (rule id, check) pairs called on each node of that type, in registration order.
CHECKS: dict[type, list[tuple[str, Check]]] = {}

#: A pseudo node type for checks on a function's (or lambda's) default values: the check receives the
#: ``ast.arguments`` node and reads :meth:`Walker.defaults`.
DEFAULTS = ast.arguments


#: a call check registered with ``attrs`` runs only on calls whose callee's last name is one of them
CALL_ATTRS: dict[Check, frozenset[str]] = {}


def check(rule_id: str, *node_types: type, attrs: Iterable[str] | None = None) -> Callable[[Check], Check]:
    """Register ``fn(walker, node)`` as rule ``rule_id``'s check on every node of ``node_types``.

    Checks run before the walker visits the node's children, so the context (scope, loops, imports)
    is the node's own. For ``ast.Call`` nodes, :attr:`Walker.q` and :attr:`Walker.attr` hold the callee's
    resolved dotted name and last name; for an ``ast.Attribute`` (only whole chains such as
    ``torch.cuda.synchronize`` under ``torch.`` reach checks) the chain's. ``attrs``: for ``ast.Call`` checks,
    the callee last names the check is about (``{"item", "tolist"}``); the walker skips other calls. The rule id
    must have a row in :data:`~xlaport.scan.rules.RULES`.
    """
    if not node_types:
        raise ValueError(f"check for {rule_id!r} names no node type")

    def register(fn: Check) -> Check:
        for t in node_types:
            CHECKS.setdefault(t, []).append((rule_id, fn))
        if attrs is not None:
            CALL_ATTRS[fn] = frozenset(attrs)
        return fn

    return register


def checked_rules() -> dict[str, set[str]]:
    """Rule id -> names of the node types it has a check on (for tests and ``--rules``)."""
    _load_checks()
    out: dict[str, set[str]] = {}
    for t, pairs in CHECKS.items():
        for rid, _ in pairs:
            out.setdefault(rid, set()).add(t.__name__)
    return out


def _load_checks() -> None:
    from . import checks  # noqa: F401  (registers the checks)


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
_LOADER = re.compile(r"loader|batches|batch_iter|dataset", re.I)
_SKIP_FIELDS = {"ctx", "op", "ops", "type_ignores"}


def _child_fields(cls: type) -> tuple[str, ...]:
    return tuple(f for f in getattr(cls, "_fields", ()) if f not in _SKIP_FIELDS)


_FIELDS: dict[type, tuple[str, ...]] = {}


class _Scope:
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
_SCHEDULES = frozenset({"sigmas", "timesteps", "alphas_cumprod"})
# Calls whose result is never a tensor even when a tensor is passed in.
_NOT_TENSOR_CALLS = frozenset(
    {
        "len", "isinstance", "issubclass", "hasattr", "getattr", "callable", "id", "type", "str", "repr",
        "format", "print", "int", "float", "bool", "complex", "range", "enumerate", "zip", "list", "tuple",
        "dict", "set", "frozenset", "sorted", "reversed", "iter", "next", "any", "all", "hash", "vars", "dir",
    }
)  # fmt: skip
_NOT_TENSOR_MODULES = ("math.", "numpy.", "np.", "os.", "json.", "time.", "random.", "re.", "sys.", "logging.")


_NO_CHECKS: list[tuple[str, Check]] = []


class Walker:
    """Visits every node once; keeps just enough context (imports, scope, loops, try blocks) for the checks."""

    def __init__(self, own_packages: frozenset[str] = frozenset()) -> None:
        _load_checks()
        self.hits: list[Hit] = []
        #: top-level packages of the scanned tree itself: importing them is not a dependency
        self.own_packages = own_packages
        #: set by :meth:`is_tensor` (and reset before each check) when a "tensor" rests on a name's spelling
        #: alone: that name (``model`` for ``out = model(x)``), for the finding's message
        self.guess = ""
        #: id of a loop statement -> names of Python lists that grow in its body (``ids.append(t)``)
        self._grown: dict[int, frozenset[str]] = {}
        self.aliases: dict[str, str] = {}
        #: names the file binds to a torch path by assignment (``device_mod = torch.cuda``, ``scope = autocast if
        #: ... else nullcontext``), so that a later rebinding to something else drops the alias again
        self._assigned_aliases: set[str] = set()
        self.module = _Scope()
        self.scope = self.module
        self.self_tensors: set[str] = set()
        self.optional_import = 0
        #: keys a check has already reported once per file (e.g. one finding per imported package)
        self.once: set[object] = set()
        #: the current call's callee: resolved dotted name (or None) and last name
        self.q: str | None = None
        self.attr = ""
        #: callee last name -> parameter positions (ints) and keywords that some call passed a tensor to
        self.tensor_args: dict[str, set[int | str]] = {}
        self._defs: list[ast.AST] = []
        self._rewalk: dict[int, set[str]] = {}
        #: names of the functions and methods (``self.name(...)``) a loop over a data loader calls, with the line
        self.loop_calls: dict[str, int] = {}
        #: id of a function walked again as one called every step -> the line of the call
        self._per_iteration: dict[int, int] = {}
        self._seen: set[tuple[str, int, int]] = set()
        self._checks = CHECKS
        self._handlers: dict[type, Any] = {
            ast.Import: self.v_import,
            ast.ImportFrom: self.v_import,
            ast.Call: self.v_call,
            ast.Attribute: self.v_attribute,
            ast.Subscript: self.v_subscript,
            ast.Assign: self.v_assign,
            ast.AnnAssign: self.v_assign,
            ast.For: self.v_for,
            ast.AsyncFor: self.v_for,
            ast.While: self.v_while,
            ast.If: self.v_checked,
            ast.IfExp: self.v_checked,
            ast.Assert: self.v_checked,
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
        # call checks: those for any callee, and those for given last names (looked up by the callee's)
        self._call_any: list[Check] = []
        self._call_by_attr: dict[str, list[Check]] = {}
        for _, fn in self._checks.get(ast.Call, _NO_CHECKS):
            names = CALL_ATTRS.get(fn)
            if names is None:
                self._call_any.append(fn)
            else:
                for n in names:
                    self._call_by_attr.setdefault(n, []).append(fn)
        for t in self._checks:  # a check on a node type without a handler: run it, then walk the children
            self._handlers.setdefault(t, self.v_checked)

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

    def run_checks(self, node: ast.AST, cls: type | None = None) -> None:
        for _, fn in self._checks.get(cls or node.__class__, _NO_CHECKS):
            self.guess = ""
            fn(self, node)

    def v_leaf(self, node: ast.AST) -> None:
        return None

    def v_checked(self, node: ast.AST) -> None:
        self.run_checks(node)
        self.generic(node)

    # ------------------------------------------------------------------ hits
    def hit(
        self,
        rule: str,
        node: ast.AST,
        message: str,
        detail: str = "",
        lines: int = 0,
        severity: str = "",
        tensor_guess: bool = False,
    ) -> None:
        """Report ``rule`` at ``node``; the first report of a rule at a line and column wins.

        ``tensor_guess``: the finding needs a value to be a tensor; when the inference took one for a tensor
        from a name's spelling alone (:attr:`guess`), the message says so and the confidence is low.
        """
        line = getattr(node, "lineno", 1) or 1
        col = getattr(node, "col_offset", 0) or 0
        if node.__class__ is ast.Call:
            f = node.func
            end = getattr(f, "end_lineno", None)
            if f.__class__ is ast.Attribute and end is not None and end > line:
                # `Model(...\n ...).cuda(rank)`: the finding belongs on the line of `.cuda`
                line, col = end, max((f.end_col_offset or 0) - len(f.attr), 0)
        key = (rule, line, col)
        if key in self._seen:
            return
        self._seen.add(key)
        confidence = "high"
        if tensor_guess and self.guess:
            confidence = "low"
            message += f" (a guess: the value is taken for a tensor only because of the name `{self.guess}`)"
        self.hits.append((rule, line, col, message, detail, lines, severity, confidence))

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

    # ------------------------------------------------------------------ values already on the host
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

    # ------------------------------------------------------------------ Python lists that grow in a loop
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

    # ------------------------------------------------------------------ imports
    def v_import(self, node: ast.AST) -> None:
        if node.__class__ is ast.Import:
            for a in node.names:
                if a.asname:
                    self.aliases[a.asname] = a.name
                else:
                    top = a.name.split(".", 1)[0]
                    self.aliases.setdefault(top, top)
        else:
            if node.level or not node.module:  # type: ignore[attr-defined]
                return
            mod = node.module  # type: ignore[attr-defined]
            for a in node.names:  # type: ignore[attr-defined]
                if a.name != "*":
                    self.aliases[a.asname or a.name] = f"{mod}.{a.name}"
        self.run_checks(node)

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

    # ------------------------------------------------------------------ names and calls
    def v_attribute(self, node: ast.Attribute) -> None:
        if self._pure_chain(node):
            q = self.dotted(node)
            if q is not None and q.startswith("torch."):
                self.q = q
                self.attr = node.attr
                self.run_checks(node)
            return
        self.visit(node.value)

    def v_call(self, node: ast.Call) -> None:
        func = node.func
        fcls = func.__class__
        self.q = self.dotted(func) if fcls in (ast.Name, ast.Attribute) else None
        self.attr = func.attr if fcls is ast.Attribute else (func.id if fcls is ast.Name else "")  # type: ignore[attr-defined]
        if self.scope.step_loops and self.attr and (fcls is ast.Name or _on_self(func)):
            self.loop_calls.setdefault(self.attr, node.lineno)
        for fn in self._call_any:
            self.guess = ""
            fn(self, node)
        attr = self.attr
        if attr in self._call_by_attr:
            for fn in self._call_by_attr[attr]:
                self.guess = ""
                fn(self, node)
        if attr and (fcls is ast.Name or (self.q is None or not self.q.startswith("torch."))):
            got: set[int | str] | None = None
            for i, a in enumerate(node.args):
                if a.__class__ is not ast.Starred and self.is_tensor(a):
                    got = got or set()
                    got.add(i)
            for k in node.keywords:
                if k.arg and self.is_tensor(k.value):
                    got = got or set()
                    got.add(k.arg)
            if got:
                self.tensor_args.setdefault(attr, set()).update(got)
        if fcls is not ast.Name:
            self.visit(func)
        self.visit_all(node.args)
        for k in node.keywords:
            self.visit(k.value)

    # ------------------------------------------------------------------ subscripts and assignments
    def v_subscript(self, node: ast.Subscript) -> None:
        if node.ctx.__class__ is ast.Load:
            self.run_checks(node)
        self.visit(node.value)
        self.visit(node.slice)

    @staticmethod
    def assign_targets(node: ast.AST) -> list[Any]:
        return node.targets if node.__class__ is ast.Assign else [node.target]  # type: ignore[attr-defined]

    def v_assign(self, node: ast.AST) -> None:
        value = getattr(node, "value", None)
        targets = self.assign_targets(node)
        if value is not None:
            self.visit(value)
            self.run_checks(node)
            self.guess = ""
            tensor = self.is_tensor(value)
            mask = self.is_mask(value)
            guessed = self.guess
            scope = self.scope
            host = self.on_host(value)
            for t in targets:
                self._bind(t, tensor or mask, mask, guessed)
                if t.__class__ is ast.Name:
                    self._bind_alias(t.id, value)
                    if host:
                        scope.host[t.id] = scope.loops
                    else:
                        scope.host.pop(t.id, None)
                    if _string_value(value):
                        scope.strings[t.id] = value
                    else:
                        scope.strings.pop(t.id, None)
                    if scope.fresh:
                        fresh = scope.fresh[-1]
                        refs = {n.id for n in ast.walk(value) if n.__class__ is ast.Name}
                        if t.id not in refs or t.id in fresh:
                            fresh.add(t.id)
                        else:
                            fresh.discard(t.id)
        elif node.__class__ is ast.AnnAssign and _annotated_tensor(node.annotation):
            for t in targets:
                self._bind(t, True, False)
        for t in targets:
            if t.__class__ is not ast.Name:
                self.visit(t)

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

    # ------------------------------------------------------------------ loops
    @staticmethod
    def _loop_names(target: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(target) if n.__class__ is ast.Name}

    def v_for(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.run_checks(node)
        names = self._loop_names(node.target)
        it = node.iter
        src = self.last_name(it.func if it.__class__ is ast.Call else it)
        s = self.scope
        self.guess = ""
        if self.is_tensor(it):
            s.tensors.update(names)
            origin = self.guess
        elif src and _LOADER.search(src):
            s.tensors.update(names)
            origin = src
        else:
            s.tensors.difference_update(names)
            origin = ""
        for n in names:
            if origin:
                s.guessed[n] = origin
            else:
                s.guessed.pop(n, None)
        self._bind_host(names, it)
        step = any(_LOADER.search(n) for n in _identifiers(it))
        s.loops += 1
        s.step_loops += step
        s.loop_vars.append(names)
        s.fresh.append(set(names))
        s.loop_nodes.append(node)
        self.visit_all(node.body)
        s.loop_nodes.pop()
        s.fresh.pop()
        s.loop_vars.pop()
        s.step_loops -= step
        s.loops -= 1
        self.visit_all(node.orelse)

    def v_while(self, node: ast.While) -> None:
        s = self.scope
        s.loops += 1
        s.fresh.append(set())
        s.loop_nodes.append(node)
        self.run_checks(node)
        self.visit(node.test)
        self.visit_all(node.body)
        s.loop_nodes.pop()
        s.fresh.pop()
        s.loops -= 1
        self.visit_all(node.orelse)

    def v_comp(self, node: ast.AST) -> None:
        s = self.scope
        gens = node.generators  # type: ignore[attr-defined]
        for g in gens:
            self.visit(g.iter)
            self._bind_host(self._loop_names(g.target), g.iter)
        s.loops += 1  # a host sync per element is still one per iteration
        for g in gens:
            self.visit_all(g.ifs)
        if node.__class__ is ast.DictComp:
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)  # type: ignore[attr-defined]
        s.loops -= 1

    # ------------------------------------------------------------------ functions
    def v_function(self, node: ast.AST) -> None:
        if id(node) not in self._rewalk and id(node) not in self._per_iteration:
            self._defs.append(node)
        self.run_checks(node)
        decos = node.decorator_list  # type: ignore[attr-defined]
        self.visit_all(decos)
        args = node.args  # type: ignore[attr-defined]
        self._visit_defaults(args)
        if node.returns is not None:  # type: ignore[attr-defined]
            self.visit(node.returns)  # type: ignore[attr-defined]
        outer = self.scope
        inner = _Scope()
        inner.per_iteration = self._per_iteration.get(id(node), 0)
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [x for x in (args.vararg, args.kwarg) if x is not None]
        extra = self._rewalk.get(id(node), set())
        for a in every:
            inner.params.add(a.arg)
            if a.arg in extra or (a.annotation is not None and _annotated_tensor(a.annotation)):
                inner.tensors.add(a.arg)
            elif a.arg in _SCHEDULES:
                inner.tensors.add(a.arg)
                inner.guessed[a.arg] = a.arg
        self.scope = inner
        try:
            self.visit_all(node.body)  # type: ignore[attr-defined]
        finally:
            self.scope = outer

    @staticmethod
    def defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.AST]]:
        """(parameter, default value) pairs of a function's or lambda's arguments."""
        positional = [*args.posonlyargs, *args.args]
        out: list[tuple[ast.arg, ast.AST]] = list(
            zip(positional[len(positional) - len(args.defaults) :], args.defaults)
        )
        out += [(a, kd) for a, kd in zip(args.kwonlyargs, args.kw_defaults) if kd is not None]
        return out

    def _visit_defaults(self, args: ast.arguments) -> None:
        if args.defaults or args.kw_defaults:
            self.run_checks(args, DEFAULTS)
            for _, d in self.defaults(args):
                self.visit(d)

    def v_lambda(self, node: ast.Lambda) -> None:
        self._visit_defaults(node.args)
        self.visit(node.body)


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


def _identifiers(e: ast.AST) -> list[str]:
    """The names and attribute names in an expression (``enumerate(self.train_loader)``: enumerate, self,
    train_loader)."""
    out = []
    for n in ast.walk(e):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
    return out


def _on_self(func: ast.AST) -> bool:
    """``self.name`` or ``cls.name``: a method of the class being defined."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")


def _cpu_device(e: ast.AST) -> bool:
    if e.__class__ is ast.Constant:
        return e.value == "cpu"
    if e.__class__ is ast.Call and e.args:  # torch.device("cpu")
        return Walker.last_name(e.func) == "device" and _cpu_device(e.args[0])
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


def _string_value(e: ast.AST) -> bool:
    c = e.__class__
    if c is ast.Constant:
        return isinstance(e.value, str)  # type: ignore[attr-defined]
    if c is ast.JoinedStr:
        return True
    if c is ast.IfExp:
        return _string_value(e.body) or _string_value(e.orelse)  # type: ignore[attr-defined]
    return False


def _tensor_params(fn: ast.AST, got: set[int | str]) -> set[str]:
    """The parameters of ``fn`` that calls passed a tensor to (positions shift past ``self``/``cls``)."""
    args = fn.args  # type: ignore[attr-defined]
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    static = any(Walker.last_name(d) == "staticmethod" for d in fn.decorator_list)  # type: ignore[attr-defined]
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


def analyse(tree: ast.AST, own_packages: frozenset[str] = frozenset()) -> list[Hit]:
    """Every rule's hits in one walk of ``tree``, in walk order.

    A function whose parameters some call in the same file passes tensors to (and that the first walk
    did not know as tensors) is walked once more with them known, so ``def sort(a, b): ... if a < b``
    called as ``sort(t0, t1)`` is seen as a branch on tensors. Hits are reported once. ``own_packages``: the
    top-level packages of the tree being scanned (its imports of itself are not dependencies).
    """
    w = Walker(own_packages)
    w.visit(tree)
    if w.tensor_args:
        todo = []
        for fn in w._defs:
            got = w.tensor_args.get(fn.name)  # type: ignore[attr-defined]
            if got:
                params = _tensor_params(fn, got)
                if params:
                    todo.append((fn, params))
        for fn, params in todo:
            w._rewalk[id(fn)] = params
            w.scope = w.module
            w.visit(fn)
    # a function a loop over a data loader calls every step (``self._train_batch(X, y)``): its host syncs are
    # per step too, so it is walked once more as if inside that loop (only host-sync-in-loop reads this)
    for fn in [f for f in w._defs if f.name in w.loop_calls]:  # type: ignore[attr-defined]
        w._per_iteration[id(fn)] = w.loop_calls[fn.name]  # type: ignore[attr-defined]
        w.scope = w.module
        w.visit(fn)
    return w.hits
