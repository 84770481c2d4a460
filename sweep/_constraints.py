"""Constraints between parameters, e.g. ``"fast < slow"``, evaluated on whole arrays.

Only a safe subset of Python expressions is accepted: parameter names, numeric and boolean
literals, arithmetic (``+ - * / // % **``), comparisons (chained too), ``and``, ``or``,
``not`` and unary minus. Nothing is ever passed to ``eval``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.errors import GridError, close_matches

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


class Constraint:
    """A parsed boolean expression over parameter names.

    Parameters
    ----------
    text : str
        The expression, e.g. ``"fast < slow"`` or ``"slow - fast >= 5 and fee <= 0.01"``.
    names : collection of str
        The grid's parameter names; any other name is an error.
    """

    def __init__(self, text: str, names: Collection[str]) -> None:
        if not isinstance(text, str) or not text.strip():
            raise GridError(f"grid.where: expected a non-empty expression string, got {text!r}")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise GridError(f"grid.where: cannot parse constraint {text!r}: {exc.msg}") from exc
        self.text = text.strip()
        self._names = frozenset(names)
        self.uses: frozenset[str] = frozenset()
        self._check(tree.body)
        self._tree = tree.body

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id not in self._names:
                raise GridError(
                    f"grid.where: constraint {self.text!r} uses {node.id!r}, which is not a "
                    f"grid parameter (parameters: {sorted(self._names)})."
                    + close_matches(node.id, self._names)
                )
            self.uses = self.uses | {node.id}
            return
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | bool):
                raise GridError(
                    f"grid.where: constraint {self.text!r}: only numeric and boolean literals "
                    f"are allowed, got {node.value!r}"
                )
            return
        allowed = (
            (isinstance(node, ast.BinOp) and type(node.op) in _BINARY)
            or (isinstance(node, ast.Compare) and all(type(o) in _COMPARE for o in node.ops))
            or isinstance(node, ast.BoolOp)
            or (
                isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.UAdd)
            )
        )
        if not allowed:
            raise GridError(
                f"grid.where: constraint {self.text!r} uses an unsupported construct "
                f"({type(node).__name__}); use names, numbers, arithmetic, comparisons, "
                "and/or/not"
            )
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.operator | ast.cmpop | ast.boolop | ast.unaryop):
                self._check(child)

    def evaluate(self, values: Mapping[str, NDArray[Any]]) -> NDArray[np.bool_]:
        """Evaluate the constraint element-wise.

        Parameters
        ----------
        values : mapping of str to ndarray
            Equal-length arrays of parameter values.

        Returns
        -------
        ndarray of bool
            True where the constraint holds.
        """
        with np.errstate(all="ignore"):
            result = self._eval(self._tree, values)
        return np.asarray(result, dtype=bool)

    def _eval(self, node: ast.AST, values: Mapping[str, NDArray[Any]]) -> Any:
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](
                self._eval(node.left, values), self._eval(node.right, values)
            )
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, values)
            if isinstance(node.op, ast.Not):
                return np.logical_not(operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BoolOp):
            parts = [np.asarray(self._eval(v, values), dtype=bool) for v in node.values]
            combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            combined = parts[0]
            for part in parts[1:]:
                combined = combine(combined, part)
            return combined
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, values)
            out: Any = True
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self._eval(comparator, values)
                out = np.logical_and(out, _COMPARE[type(op)](left, right))
                left = right
            return out
        raise AssertionError(f"unreachable: {type(node).__name__}")  # pragma: no cover
