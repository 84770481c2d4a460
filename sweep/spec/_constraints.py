"""Constraints between parameters, e.g. ``"fast < slow"``, evaluated on whole arrays.

Only a safe subset of Python expressions is accepted: parameter names, numeric and boolean
literals, arithmetic (``+ - * / // % **``), comparisons (chained too), ``and``, ``or``,
``not`` and unary minus. Nothing is ever passed to ``eval``.

Every expression is bounded before it is evaluated: at most :data:`MAX_CHARS` characters,
:data:`MAX_NODES` parts and :data:`MAX_DEPTH` levels of nesting, literals of magnitude at
most :data:`MAX_LITERAL`; exponents of ``**`` are checked at most :data:`MAX_EXPONENT` in
magnitude as they are evaluated. Arithmetic is done in float64 (so ``x ** -1`` works on
integer parameters and nothing wraps around); comparisons of parameters with each other are
exact. Division by zero, an invalid operation or an overflow is an error naming the
expression, never a silent inf or NaN.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.errors import GridError, close_matches

#: Longest constraint text.
MAX_CHARS = 1000
#: Most syntax-tree nodes (names, literals, operations) in one constraint.
MAX_NODES = 200
#: Deepest nesting of operations in one constraint.
MAX_DEPTH = 32
#: Largest magnitude of a numeric literal (float64 holds integers exactly below 2^53).
MAX_LITERAL = 1e15
#: Largest magnitude of an exponent of ``**``.
MAX_EXPONENT = 64

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
        self.text = text.strip()
        if len(self.text) > MAX_CHARS:
            raise GridError(
                f"grid.where: constraint {_shown(self.text)} is {len(self.text):,} characters "
                f"long; expected at most {MAX_CHARS:,} characters"
            )
        try:
            tree = ast.parse(self.text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            reason = exc.msg if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
            raise GridError(
                f"grid.where: cannot parse constraint {_shown(self.text)}: {reason}"
            ) from exc
        self._names = frozenset(names)
        self.uses: frozenset[str] = frozenset()
        self._check_size(tree.body)
        self._check(tree.body)
        self._tree = tree.body

    def _check_size(self, root: ast.AST) -> None:
        """Refuse a tree with too many nodes or too deep a nesting (without recursing)."""
        nodes, deepest = 0, 0
        stack = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            nodes += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                raise GridError(
                    f"grid.where: constraint {_shown(self.text)} is nested more than "
                    f"{MAX_DEPTH} levels deep; expected at most {MAX_DEPTH} levels"
                )
            if nodes > MAX_NODES:
                raise GridError(
                    f"grid.where: constraint {_shown(self.text)} has more than {MAX_NODES} "
                    f"parts (names, numbers, operations); expected at most {MAX_NODES}"
                )
            stack.extend((child, depth + 1) for child in _operands(node))

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id not in self._names:
                raise GridError(
                    f"grid.where: constraint {_shown(self.text)} uses {node.id!r}, which is not a "
                    f"grid parameter (parameters: {sorted(self._names)})."
                    + close_matches(node.id, self._names)
                )
            self.uses = self.uses | {node.id}
            return
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | bool):
                raise GridError(
                    f"grid.where: constraint {_shown(self.text)}: only numeric and boolean "
                    f"literals are allowed, got {node.value!r}"
                )
            if not isinstance(node.value, bool) and not abs(node.value) <= MAX_LITERAL:
                given = ast.get_source_segment(self.text, node) or repr(node.value)
                raise GridError(
                    f"grid.where: constraint {_shown(self.text)}: expected numeric literals of "
                    f"magnitude at most {MAX_LITERAL:g}, got {_shown(given)}"
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
                f"grid.where: constraint {_shown(self.text)} uses an unsupported construct "
                f"({type(node).__name__}); use names, numbers, arithmetic, comparisons, "
                "and/or/not"
            )
        for child in _operands(node):
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
        try:
            with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"):
                result = self._eval(self._tree, values)
            return np.asarray(result, dtype=bool)
        except GridError:
            raise
        except (ArithmeticError, ValueError, TypeError, MemoryError) as exc:
            raise GridError(
                f"grid.where: constraint {_shown(self.text)} cannot be evaluated: {exc}"
            ) from exc

    def _eval(self, node: ast.AST, values: Mapping[str, NDArray[Any]]) -> Any:
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BinOp):
            return self._eval_binary(node, values)
        if isinstance(node, ast.UnaryOp):
            return self._eval_unary(node, values)
        if isinstance(node, ast.BoolOp):
            return self._eval_bool(node, values)
        if isinstance(node, ast.Compare):
            return self._eval_compare(node, values)
        raise AssertionError(f"unreachable: {type(node).__name__}")  # pragma: no cover

    def _eval_binary(self, node: ast.BinOp, values: Mapping[str, NDArray[Any]]) -> Any:
        """Arithmetic in float64; the exponent of ``**`` bounded first."""
        left = _as_float(self._eval(node.left, values))
        right = _as_float(self._eval(node.right, values))
        if isinstance(node.op, ast.Pow):
            self._check_exponent(right)
        return _BINARY[type(node.op)](left, right)

    def _eval_unary(self, node: ast.UnaryOp, values: Mapping[str, NDArray[Any]]) -> Any:
        operand = self._eval(node.operand, values)
        if isinstance(node.op, ast.Not):
            return np.logical_not(operand)
        return -_as_float(operand) if isinstance(node.op, ast.USub) else operand

    def _eval_bool(self, node: ast.BoolOp, values: Mapping[str, NDArray[Any]]) -> Any:
        """``and`` / ``or`` element-wise, left to right (every operand evaluated)."""
        parts = [np.asarray(self._eval(v, values), dtype=bool) for v in node.values]
        combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        combined = parts[0]
        for part in parts[1:]:
            combined = combine(combined, part)
        return combined

    def _eval_compare(self, node: ast.Compare, values: Mapping[str, NDArray[Any]]) -> Any:
        """A chain ``a < b <= c`` as ``(a < b) & (b <= c)``."""
        left = self._eval(node.left, values)
        out: Any = True
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._eval(comparator, values)
            out = np.logical_and(out, _COMPARE[type(op)](left, right))
            left = right
        return out

    def _check_exponent(self, exponent: Any) -> None:
        largest = float(np.max(np.abs(exponent))) if np.size(exponent) else 0.0
        if not largest <= MAX_EXPONENT:
            raise GridError(
                f"grid.where: constraint {_shown(self.text)}: expected exponents of ** at most "
                f"{MAX_EXPONENT} in magnitude, got {largest:g}"
            )


def _operands(node: ast.AST) -> list[ast.AST]:
    """The child expressions of a node (operators themselves left out)."""
    return [
        child
        for child in ast.iter_child_nodes(node)
        if not isinstance(
            child, ast.operator | ast.cmpop | ast.boolop | ast.unaryop | ast.expr_context
        )
    ]


def _as_float(value: Any) -> Any:
    """An operand of arithmetic as float64 (integers and booleans converted)."""
    return np.asarray(value, dtype=np.float64)


def _shown(text: str) -> str:
    """A constraint's text for a message, cut after 60 characters."""
    return repr(text) if len(text) <= 60 else repr(text[:60]) + f"... ({len(text):,} characters)"
