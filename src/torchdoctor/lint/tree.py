"""One parsed file as the checks see it: one walk that calls every check, and the facts they ask
about (names, parents, attribute assignments), each computed once per file and only when asked.

Hand-written walk rather than libcst's `visit`: libcst rebuilds every node it visits (a new
dataclass, validated) so that transformers can replace children, which costs more than the checks
themselves; the checks only read. Its metadata providers are used where they are the semantics
(`ScopeProvider`, the name resolution), and only for files where a check asks a name; the
qualified name of one node is asked of its scope instead of resolving every node of the file
(`QualifiedNameProvider`), which on a generated file of 100,000 assignments to one name is
quadratic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator, Sequence
from functools import cache
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedName, ScopeProvider
from libcst.metadata.scope_provider import Scope


class SourceTree:
    """A parsed module with its facts computed on first use (the tree is never changed)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        # The module is parsed for this tree alone, so libcst's defensive deep copy is skipped;
        # nodes keep their identity, which the fixes rely on.
        self._wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self._scopes: Any = None
        self._parents: dict[cst.CSTNode, cst.CSTNode] | None = None
        self._attribute_values: dict[str, list[cst.BaseExpression]] | None = None

    def scope(self, node: cst.CSTNode) -> Scope | None:
        """The scope `node` is in (libcst's `ScopeProvider`, resolved for the file on first use)."""
        if self._scopes is None:
            self._scopes = self._wrapper.resolve(ScopeProvider)
        return self._scopes.get(node)

    def qualified_names(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        """Every qualified name `node` may have: what `QualifiedNameProvider` gives that node."""
        scope = self.scope(node)
        return scope.get_qualified_names_for(node) if scope is not None else set()

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node holding `node` (None for the module), from one walk of the file."""
        if self._parents is None:
            self._parents = {child: holder for holder in walk(self.module) for child in children(holder)}
        return self._parents.get(node)

    def attribute_values(self, attr: str) -> list[cst.BaseExpression]:
        """Every value assigned to `<anything>.<attr>` (`self.loader = ...`) in the file."""
        if self._attribute_values is None:
            index: dict[str, list[cst.BaseExpression]] = {}
            for node in walk(self.module):
                if isinstance(node, cst.Assign):
                    for target in node.targets:
                        if isinstance(target.target, cst.Attribute):
                            index.setdefault(target.target.attr.value, []).append(node.value)
            self._attribute_values = index
        return self._attribute_values.get(attr, [])

    def starts(self, nodes: Sequence[cst.CSTNode]) -> list[tuple[int, int]]:
        """(line, 0-based column) where each of `nodes` starts, as libcst's `PositionProvider`
        places it (resolved for the whole file, so asked only when there is something to place)."""
        positions = self._wrapper.resolve(PositionProvider)
        return [(positions[n].start.line, positions[n].start.column) for n in nodes]

    def visit(self, visitors: Sequence[object]) -> None:
        """Run `visitors` over the file (:func:`visit`)."""
        visit(self.module, visitors)


def visit(root: cst.CSTNode, visitors: Sequence[object]) -> None:
    """Call each visitor's `visit_<NodeType>(node)` for `root` and every node under it, parents
    before children, in one walk (a visitor's return value is ignored: every node is visited)."""
    handlers: dict[str, list[Callable[[cst.CSTNode], object]]] = {}
    for visitor in visitors:
        for name in dir(type(visitor)):
            if name.startswith("visit_"):
                handlers.setdefault(name[len("visit_"):], []).append(getattr(visitor, name))
    for node in walk(root):
        for handler in handlers.get(type(node).__name__, ()):
            handler(node)


def walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and every node under it, parents first, children in field order; iterative, so a
    deep tree does not recurse."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes held directly by `node`'s fields, in field order."""
    found: list[cst.CSTNode] = []
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(item for item in value if isinstance(item, cst.CSTNode))
    return found


@cache
def _field_names(node_type: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(node_type))
