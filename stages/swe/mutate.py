"""Bug candidates for synthetic SWE tasks (SWE-smith style): one small program mutation per
candidate, made on the concrete syntax tree (libcst), so the rest of the file keeps its exact
text (comments, formatting) and the diff shows only the injected change.

Kinds (`KINDS`): `operator` (arithmetic, comparison and boolean operators swapped for a close
one), `constant` (an integer off by one, True <-> False), `remove_condition` (an `if` without
`else` whose body now always runs), `remove_statement` (one statement of a block removed),
`swap_arguments` (the first two positional arguments of a call swapped), `off_by_one` (a slice
bound or a `range` bound moved by one). Only code inside functions is mutated: module-level
constants and class bodies are configuration more than logic, and a mutation there breaks
import far more often than it makes a good task. Docstrings are never touched.

`candidates(source, path)` lists every mutation of a module as `Mutation`s (deterministic order);
`bug_diff`/`fix_diff` are the unified diffs that inject and undo it (the task's gold patch is the
fix). Whether a mutation makes a good task is decided by running the tests (`synth.py`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

KINDS = ("operator", "constant", "remove_condition", "remove_statement", "swap_arguments", "off_by_one")

# Swaps a reader would believe were typed by mistake (same arity, same types mostly).
_BINARY = {
    cst.Add: cst.Subtract, cst.Subtract: cst.Add, cst.Multiply: cst.FloorDivide,
    cst.FloorDivide: cst.Multiply, cst.Modulo: cst.FloorDivide, cst.BitAnd: cst.BitOr, cst.BitOr: cst.BitAnd,
    cst.LeftShift: cst.RightShift, cst.RightShift: cst.LeftShift,
}
_COMPARE = {
    cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.In: cst.NotIn, cst.NotIn: cst.In,
    cst.Is: cst.IsNot, cst.IsNot: cst.Is,
}
_BOOLEAN = {cst.And: cst.Or, cst.Or: cst.And}


@dataclass(frozen=True)
class Mutation:
    kind: str
    path: str
    line: int  # 1-based line of the mutated node in the original file
    function: str  # qualified name of the enclosing function (Class.method)
    before: str  # the node's code before and after (for the recipe and the visibility check)
    after: str
    original: str  # the whole module before and after
    mutated: str

    @property
    def bug_diff(self) -> str:
        return unified_diff(self.path, self.original, self.mutated)

    @property
    def fix_diff(self) -> str:
        return unified_diff(self.path, self.mutated, self.original)

    def recipe(self) -> dict[str, object]:
        return {"kind": self.kind, "path": self.path, "line": self.line, "function": self.function,
                "before": self.before, "after": self.after}


def unified_diff(path: str, a: str, b: str) -> str:
    """A `git apply`-able diff of one file (a/ b/ prefixes, as git writes them)."""
    lines = difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}", n=3)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return f"diff --git a/{path} b/{path}\n" + "".join(out) if out else ""


# A site: (kind, node) -> replacement node, or a sentinel that removes / flattens a statement.
Rewrite = Callable[[cst.CSTNode], cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel]


class _Sites(cst.CSTTransformer):
    """Walks a module once; numbers every mutable site in order; when `target` is a site's
    number, applies that site's rewrite (so listing and applying share one traversal rule)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, target: int = -1) -> None:
        super().__init__()
        self.target = target
        self.sites: list[tuple[str, int, str, str, str]] = []  # kind, line, function, before, after
        self._scope: list[str] = []
        self._functions = 0
        self._elifs: set[int] = set()
        self._module: cst.Module | None = None

    # -- scope --------------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scope.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self._scope.pop()
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scope.append(node.name.value)
        self._functions += 1

    def leave_FunctionDef(self, original, updated):
        self._scope.pop()
        self._functions -= 1
        return updated

    # -- sites --------------------------------------------------------------------------------
    def _site(self, kind: str, original: cst.CSTNode, replacement):
        """Record a site; return the replacement if it is the target, else None."""
        if not self._functions:
            return None
        index = len(self.sites)
        line = self.get_metadata(PositionProvider, original).start.line
        before = self._code(original)
        after = self._code(replacement) if isinstance(replacement, cst.CSTNode) else ""
        self.sites.append((kind, line, ".".join(self._scope), before, after))
        return replacement if index == self.target else None

    def _code(self, node: cst.CSTNode) -> str:
        assert self._module is not None
        return self._module.code_for_node(node).strip()

    def leave_BinaryOperation(self, original, updated):
        swap = _BINARY.get(type(original.operator))
        strings = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
        if swap is None or isinstance(original.left, strings) or isinstance(original.right, strings):
            return updated  # "a" - "b" is no plausible slip
        op = swap(whitespace_before=original.operator.whitespace_before,
                  whitespace_after=original.operator.whitespace_after)
        return self._site("operator", original, original.with_changes(operator=op)) or updated

    def leave_Comparison(self, original, updated):
        if len(original.comparisons) != 1:  # chained comparisons: one operator of several is noise
            return updated
        target = original.comparisons[0]
        swap = _COMPARE.get(type(target.operator))
        if swap is None:
            return updated
        op = target.operator
        kwargs = {"whitespace_before": op.whitespace_before, "whitespace_after": op.whitespace_after}
        if swap in (cst.NotIn, cst.IsNot):
            kwargs["whitespace_between"] = cst.SimpleWhitespace(" ")
        new = original.with_changes(comparisons=[target.with_changes(operator=swap(**kwargs))])
        return self._site("operator", original, new) or updated

    def leave_BooleanOperation(self, original, updated):
        swap = _BOOLEAN[type(original.operator)]
        op = swap(whitespace_before=original.operator.whitespace_before,
                  whitespace_after=original.operator.whitespace_after)
        return self._site("operator", original, original.with_changes(operator=op)) or updated

    def leave_Integer(self, original, updated):
        try:
            value = int(original.value.replace("_", ""), 0)
        except ValueError:
            return updated
        return self._site("constant", original, cst.Integer(str(value + 1))) or updated

    def leave_Name(self, original, updated):
        flip = {"True": "False", "False": "True"}.get(original.value)
        if flip is None:
            return updated
        return self._site("constant", original, cst.Name(flip)) or updated

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):  # an `elif`: it cannot be replaced by statements
            self._elifs.add(id(node.orelse))

    def leave_If(self, original, updated):
        if original.orelse is not None or not isinstance(original.body, cst.IndentedBlock) or id(original) in self._elifs:
            return updated
        body = list(original.body.body)
        return self._site("remove_condition", original, cst.FlattenSentinel(body)) or updated

    def leave_IndentedBlock(self, original, updated):
        """remove_statement: drop one statement of a block that keeps at least one other (so the
        block stays valid); never a docstring, a return (it changes the result trivially: None)
        or a nested definition."""
        if not self._functions or len(updated.body) < 2:
            return updated
        body = list(updated.body)
        for i, stmt in enumerate(original.body):
            if not self._removable(stmt, first=i == 0):
                continue
            index = len(self.sites)
            line = self.get_metadata(PositionProvider, stmt).start.line
            self.sites.append(("remove_statement", line, ".".join(self._scope), self._code(stmt), ""))
            if index == self.target:
                return updated.with_changes(body=body[:i] + body[i + 1:])
        return updated

    @staticmethod
    def _removable(stmt: cst.BaseStatement, *, first: bool) -> bool:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        if first and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString | cst.ConcatenatedString):
            return False  # a docstring
        return isinstance(small, cst.Assign | cst.AugAssign | cst.Expr | cst.AnnAssign) and not (
            isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis)
        )

    def leave_Call(self, original, updated):
        if isinstance(original.func, cst.Name) and original.func.value == "range":
            site = self._range_site(original, updated)
            if site is not None:
                return site
        positional = [a for a in original.args if a.keyword is None and not a.star]
        if len(positional) < 2 or any(a.star for a in original.args):
            return updated
        i, j = original.args.index(positional[0]), original.args.index(positional[1])
        a, b = original.args[i], original.args[j]
        if self._code(a.value) == self._code(b.value):
            return updated
        args = list(original.args)
        args[i], args[j] = b.with_changes(comma=a.comma), a.with_changes(comma=b.comma)
        return self._site("swap_arguments", original, original.with_changes(args=args)) or updated

    def _range_site(self, original: cst.Call, updated: cst.Call):
        if not original.args or len(original.args) > 2 or any(a.keyword or a.star for a in original.args):
            return None
        stop = original.args[-1]
        moved = stop.with_changes(value=cst.BinaryOperation(stop.value, cst.Add(), cst.Integer("1")))
        new = original.with_changes(args=[*original.args[:-1], moved])
        return self._site("off_by_one", original, new) or None

    def leave_Slice(self, original, updated):
        bound = original.upper if original.upper is not None else original.lower
        if bound is None or original.step is not None:
            return updated
        field = "upper" if original.upper is not None else "lower"
        if isinstance(bound, cst.UnaryOperation) or (isinstance(bound, cst.Integer) and bound.value == "0"):
            return updated
        moved = cst.BinaryOperation(bound, cst.Subtract(), cst.Integer("1")) if field == "upper" \
            else cst.BinaryOperation(bound, cst.Add(), cst.Integer("1"))
        return self._site("off_by_one", original, original.with_changes(**{field: moved})) or updated


def _walk(source: str, target: int) -> tuple[str, list[tuple[str, int, str, str, str]]]:
    wrapper = MetadataWrapper(cst.parse_module(source))
    sites = _Sites(target)
    mutated = wrapper.visit(sites)
    return mutated.code, sites.sites


@dataclass(frozen=True)
class Site:
    """A mutable place in a module (what `apply` needs to make its Mutation)."""

    index: int
    kind: str
    line: int
    function: str
    before: str
    after: str


def sites(source: str, kinds: tuple[str, ...] = KINDS) -> list[Site]:
    """Every mutable site of a module: one traversal, cheap (making a mutation is a second one).
    Raises libcst.ParserSyntaxError for a file that does not parse."""
    _, found = _walk(source, -1)
    return [Site(i, *x) for i, x in enumerate(found) if x[0] in kinds]


def apply(source: str, path: str, site: Site) -> Mutation | None:
    mutated, _ = _walk(source, site.index)
    if mutated == source:
        return None
    return Mutation(site.kind, path, site.line, site.function, site.before, site.after, source, mutated)


def candidates(source: str, path: str, kinds: tuple[str, ...] = KINDS) -> Iterator[Mutation]:
    """Every single-site mutation of `source` (a module's text), in traversal order."""
    for site in sites(source, kinds):
        if (m := apply(source, path, site)) is not None:
            yield m


class _Replace(cst.CSTTransformer):
    """Swap the function named `qualname` (Class.method) for `new`."""

    def __init__(self, qualname: str, new: cst.FunctionDef) -> None:
        super().__init__()
        self.target, self.new, self.scope, self.done = qualname, new, [], False

    def visit_ClassDef(self, node):
        self.scope.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.scope.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.scope.append(node.name.value)

    def leave_FunctionDef(self, original, updated):
        name = ".".join(self.scope)
        self.scope.pop()
        if name == self.target and not self.done:
            self.done = True
            return self.new.with_changes(leading_lines=original.leading_lines)
        return updated


def functions(source: str) -> list[tuple[str, str]]:
    """(qualified name, code) of every function in a module, outermost first."""
    out: list[tuple[str, str]] = []
    module = cst.parse_module(source)

    class _List(cst.CSTVisitor):
        scope: list[str] = []

        def visit_ClassDef(self, node):
            self.scope.append(node.name.value)

        def leave_ClassDef(self, node):
            self.scope.pop()

        def visit_FunctionDef(self, node):
            self.scope.append(node.name.value)
            out.append((".".join(self.scope), module.code_for_node(node).strip("\n")))

        def leave_FunctionDef(self, node):
            self.scope.pop()

    _List.scope = []
    module.visit(_List())
    return out


def replace_function(source: str, path: str, qualname: str, new_code: str, kind: str = "llm_rewrite") -> Mutation | None:
    """The module with function `qualname` replaced by `new_code` (an LLM's rewrite), as a
    Mutation; None when the code is not one function of that name or changes nothing."""
    try:
        parsed = cst.parse_module(new_code.strip("\n") + "\n")
    except cst.ParserSyntaxError:
        return None
    defs = [s for s in parsed.body if isinstance(s, cst.FunctionDef)]
    if len(defs) != 1 or defs[0].name.value != qualname.rsplit(".", 1)[-1]:
        return None
    module = cst.parse_module(source)
    # re-indent inside classes: libcst renders a FunctionDef at the depth it is placed
    swap = _Replace(qualname, defs[0])
    mutated = module.visit(swap).code
    if not swap.done or mutated == source:
        return None
    before = dict(functions(source)).get(qualname, "")
    return Mutation(kind, path, _line_of(source, qualname), qualname, before, new_code.strip(), source, mutated)


def _line_of(source: str, qualname: str) -> int:
    name = qualname.rsplit(".", 1)[-1]
    for i, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith(("def " + name + "(", "async def " + name + "(")):
            return i
    return 0
