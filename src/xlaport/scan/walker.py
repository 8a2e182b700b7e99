"""One walk of a Python syntax tree that keeps the context every rule needs, and calls the rules' checks.

The walker knows no rule. It keeps what a check needs to judge a node (the file's imports, the function
scope, loop depth and loop variables, ``try`` blocks that catch ``ImportError``; the names' meanings come from
its base, :class:`~xlaport.scan.semantic.Semantic`) and, at each node, calls the checks registered for that
node's type (:func:`xlaport.scan.registry.check`). A check is one function for one rule and one node type, in
that rule's module under :mod:`xlaport.scan.rules`.

:func:`analyse` takes a parsed module and returns :class:`~xlaport.scan.registry.Hit` records;
:mod:`xlaport.scan.engine` turns them into findings, applies suppressions and configuration. Nothing here
imports or runs the code it looks at.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from .registry import CALL_ATTRS, CHECKS, DEFAULTS, Check, Hit
from .semantic import LOADER, SCHEDULES, Scope, Semantic, annotated_tensor, string_value, tensor_params

__all__ = ["Walker", "analyse"]

_SKIP_FIELDS = {"ctx", "op", "ops", "type_ignores"}


def _child_fields(cls: type) -> tuple[str, ...]:
    return tuple(f for f in getattr(cls, "_fields", ()) if f not in _SKIP_FIELDS)


_FIELDS: dict[type, tuple[str, ...]] = {}

_NO_CHECKS: list[tuple[str, Check]] = []


class Walker(Semantic):
    """Visits every node once; keeps just enough context (imports, scope, loops, try blocks) for the checks."""

    def __init__(self, own_packages: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.hits: list[Hit] = []
        #: top-level packages of the scanned tree itself: importing them is not a dependency
        self.own_packages = own_packages
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
        #: callee name -> positions and keywords some loop passed its loop variable to (``denoise(x, sigmas, i)``)
        self.index_calls: dict[str, set[int | str]] = {}
        #: id of a function walked again with parameters that hold a caller's loop variable -> those parameters
        self._index_params: dict[int, set[str]] = {}
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
        self.hits.append(Hit(rule, line, col, message, detail, lines, severity, confidence))

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
        if self.scope.loop_vars and self.attr and (fcls is ast.Name or _on_self(func)):
            self._note_loop_index_args(node)
            if self.scope.step_loops:
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

    def _note_loop_index_args(self, node: ast.Call) -> None:
        """Record which arguments of a same-file call are the enclosing loops' variables."""
        lv = self.scope.loop_vars
        got: set[int | str] = set()
        for i, a in enumerate(node.args):
            if a.__class__ is ast.Name and any(a.id in vs for vs in lv):
                got.add(i)
        for k in node.keywords:
            if k.arg and k.value.__class__ is ast.Name and any(k.value.id in vs for vs in lv):
                got.add(k.arg)
        if got:
            self.index_calls.setdefault(self.attr, set()).update(got)

    def v_subscript(self, node: ast.Subscript) -> None:
        if node.ctx.__class__ is ast.Load:
            self.run_checks(node)
        self.visit(node.value)
        self.visit(node.slice)

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
                if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self":
                    self._bind_alias(f"self.{t.attr}", value)  # `self.dev = torch.cuda`, then `self.dev.Stream()`
                if t.__class__ is ast.Name:
                    self._bind_alias(t.id, value)
                    if host:
                        scope.host[t.id] = scope.loops
                    else:
                        scope.host.pop(t.id, None)
                    if string_value(value):
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
        elif node.__class__ is ast.AnnAssign and annotated_tensor(node.annotation):
            for t in targets:
                self._bind(t, True, False)
        for t in targets:
            if t.__class__ is not ast.Name:
                self.visit(t)

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
        elif src and LOADER.search(src):
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
        step = any(LOADER.search(n) for n in _identifiers(it))
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

    def v_function(self, node: ast.AST) -> None:
        if not (id(node) in self._rewalk or id(node) in self._per_iteration or id(node) in self._index_params):
            self._defs.append(node)
        self.run_checks(node)
        decos = node.decorator_list  # type: ignore[attr-defined]
        self.visit_all(decos)
        args = node.args  # type: ignore[attr-defined]
        self._visit_defaults(args)
        if node.returns is not None:  # type: ignore[attr-defined]
            self.visit(node.returns)  # type: ignore[attr-defined]
        outer = self.scope
        inner = Scope()
        inner.per_iteration = self._per_iteration.get(id(node), 0)
        if id(node) in self._index_params:  # called with a loop's variable: its parameter indexes per step too
            inner.loop_vars.append(set(self._index_params[id(node)]))
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [x for x in (args.vararg, args.kwarg) if x is not None]
        extra = self._rewalk.get(id(node), set())
        for a in every:
            inner.params.add(a.arg)
            if a.arg in extra or (a.annotation is not None and annotated_tensor(a.annotation)):
                inner.tensors.add(a.arg)
            elif a.arg in SCHEDULES:
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


def _subscripts_with(fn: ast.AST, names: set[str]) -> bool:
    """Whether ``fn`` indexes anything with one of ``names`` (only then is a walk with them as loop variables
    worth its time)."""
    for n in ast.walk(fn):
        if n.__class__ is ast.Subscript:
            sl = n.slice
            if any(m.__class__ is ast.Name and m.id in names for m in ast.walk(sl)):
                return True
    return False


def _catches_import_error(h: ast.ExceptHandler) -> bool:
    if h.type is None:
        return True
    names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return any(
        isinstance(n, (ast.Name, ast.Attribute))
        and Walker.last_name(n) in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError")
        for n in names
    )


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


def analyse(tree: ast.AST, own_packages: frozenset[str] = frozenset()) -> list[Hit]:
    """Every rule's hits in one walk of ``tree``, in walk order.

    A function the first walk learned something about from its callers in the same file is walked once more
    with that known: so ``def sort(a, b): ... if a < b`` called as ``sort(t0, t1)`` is seen as a branch on
    tensors. Hits are reported once. ``own_packages``: the
    top-level packages of the tree being scanned (its imports of itself are not dependencies).
    """
    w = Walker(own_packages)
    w.visit(tree)
    # One more walk of each function the first walk learned something about, with all of it known at once:
    # - parameters a call in the same file passes tensors to (``sort(t0, t1)`` for ``def sort(a, b)``);
    # - a function a loop over a data loader calls every step (``self._train_batch(X, y)``): its host syncs are
    #   per step too (only host-sync-in-loop reads this);
    # - parameters a loop passes its variable to (``step(x, sigmas, i)``): indexing with them is a view at a new
    #   offset each step, so they are taken for loop variables.
    todo = []
    for fn in w._defs:
        name = fn.name  # type: ignore[attr-defined]
        tensors = tensor_params(fn, w.tensor_args[name]) if name in w.tensor_args else set()
        index = tensor_params(fn, w.index_calls[name]) if name in w.index_calls else set()
        if index and not _subscripts_with(fn, index):
            index = set()
        if tensors:
            w._rewalk[id(fn)] = tensors
        if index:
            w._index_params[id(fn)] = index
        if name in w.loop_calls:
            w._per_iteration[id(fn)] = w.loop_calls[name]
        if tensors or index or name in w.loop_calls:
            todo.append(fn)
    for fn in todo:
        w.scope = w.module
        w.visit(fn)
    return w.hits
