"""What a lint check is: a code, a message, and a libcst visitor that proves the pattern.

Code policy (documented in docs/lint.md): `TDL` + a layer digit + two digits. The layer digit is
the diagnosis layer the check backs: 1 data, 2 compute, 3 memory, 4 scale, 5 config. A code, once
released, keeps its meaning forever; a retired check leaves its code unused.

A visitor is a :class:`LintVisitor` subclass with `CHECKS` (the codes it can emit) and
`visit_<NodeType>` methods, called for every such node of one
:class:`~torchdoctor.lint.tree.SourceTree` (for facts of the whole program it asks about the
other modules through a :class:`~torchdoctor.lint.program.ProgramView`); it appends
:class:`Hit`s: a hit names the node where the pattern was proven and, for a safe autofix, the
node to put in its place. Names are resolved with libcst's scope analysis (the qualified names
`QualifiedNameProvider` gives): a hit requires exactly one qualified name, from an import or a
builtin, so a user's own `DataLoader` or a shadowed `torch` is never flagged (precision over
recall).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import libcst as cst
from libcst.metadata import QualifiedNameSource

from torchdoctor.lint.program import ModuleFact, ProgramView
from torchdoctor.lint.tree import SourceTree

#: Layer digit of a code -> the diagnosis layer it backs.
LAYERS = {"1": "data", "2": "compute", "3": "memory", "4": "scale", "5": "config"}
CODE_PREFIX = "TDL"


@dataclass(frozen=True)
class Check:
    """One lint code. `message` is the text shown; `topic` names the measured problem it hints at."""

    code: str
    topic: str
    message: str

    @property
    def layer(self) -> str:
        return LAYERS[self.code[len(CODE_PREFIX)]]

    @property
    def rule_hint(self) -> str:
        """`<layer>.<topic>`, e.g. `data.num_workers`: the diagnosis rule family this check backs."""
        return f"{self.layer}.{self.topic}"


@dataclass(frozen=True)
class Hit:
    """A proven occurrence: `node` locates it; `replacement`, when set, is the safe autofix."""

    check: Check
    node: cst.CSTNode
    replacement: cst.CSTNode | None = None
    subject: str = ""

    @property
    def message(self) -> str:
        """The check's message with `{subject}` (what was seen, e.g. `.item()`) filled in."""
        return self.check.message.format(subject=self.subject)


class LintVisitor:
    """Base of every check visitor: qualified-name and scope helpers, and `hit()`.

    All visitors of a file run in one walk of it (:meth:`SourceTree.visit`), so each sees the
    whole `tree` (for file-wide facts) from its constructor, and its `program` (for facts that any
    module of the user's program may establish, see :meth:`in_program`).
    """

    CHECKS: ClassVar[tuple[Check, ...]] = ()
    TRIGGERS: ClassVar[tuple[tuple[str, ...], ...]] = ()
    """Text that every hit's source contains: each group names alternatives, one of which must
    occur in the file (a qualified name's last part, a method name). A file that lacks a group
    cannot hold the pattern, so the visitor, and the name resolution it needs, is skipped; a
    visitor without groups always runs."""

    @classmethod
    def may_apply(cls, source: str) -> bool:
        """`source` holds every text group of :attr:`TRIGGERS` (a cheap test before parsing)."""
        return all(any(text in source for text in group) for group in cls.TRIGGERS)

    def __init__(self, tree: SourceTree, program: ProgramView | None = None) -> None:
        self.hits: list[Hit] = []
        self.tree = tree
        self.module = tree.module
        self.program = program or ProgramView()
        self._in_program: dict[ModuleFact, bool] = {}

    def in_program(self, fact: ModuleFact) -> bool:
        """`fact` holds for this file or for another module of its program (read only when this
        file alone does not settle it, and only when a check asks)."""
        if fact not in self._in_program:
            self._in_program[fact] = fact(self.module) or self.program.any_companion(fact)
        return self._in_program[fact]

    def hit(
        self,
        check: Check,
        node: cst.CSTNode,
        replacement: cst.CSTNode | None = None,
        subject: str = "",
    ) -> None:
        self.hits.append(Hit(check, node, replacement, subject))

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        """The one imported or builtin qualified name of `node` (a Call resolves its callee)."""
        if isinstance(node, cst.Call):
            node = node.func
        names = self.tree.qualified_names(node)
        proven = {
            q.name
            for q in names
            if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)
        }
        if len(names) != 1 or len(proven) != 1:
            return None
        return proven.pop()

    def attribute_values(self, attr: str) -> list[cst.BaseExpression]:
        """Every value assigned to `<anything>.<attr>` (`self.loader = ...`) anywhere in the file."""
        return self.tree.attribute_values(attr)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.tree.parent(node)

    def ancestors(self, node: cst.CSTNode):
        """Enclosing nodes, innermost first, stopping at the enclosing function, class or module."""
        current = self.parent(node)
        while current is not None:
            yield current
            if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
                return
            current = self.parent(current)

    def enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop whose body (not its header) runs `node` in the same function."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.For, cst.While)) and child is ancestor.body:
                return ancestor
            child = ancestor
        return None

    def enclosing_loops(self, node: cst.CSTNode):
        """Every loop whose body runs `node` in the same function, innermost first."""
        loop = self.enclosing_loop(node)
        while loop is not None:
            yield loop
            loop = self.enclosing_loop(loop)

    def assigned_values(self, name: cst.Name) -> list[cst.BaseExpression] | None:
        """Every value bound to `name` in its scope, or None unless each binding is `name = value`.

        None also when a binding is anything else (a parameter, a loop target, an import, an
        augmented assignment), so callers can require that *every* binding proves a property.
        """
        scope = self.tree.scope(name)
        if scope is None or name.value not in scope:
            return None
        values: list[cst.BaseExpression] = []
        for assignment in scope[name.value]:
            target = getattr(assignment, "node", None)
            holder = self.parent(target) if isinstance(target, cst.Name) else None
            assign = self.parent(holder) if isinstance(holder, cst.AssignTarget) else None
            if not isinstance(assign, cst.Assign) or holder.target is not target:
                return None
            values.append(assign.value)
        return values or None
