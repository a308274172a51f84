"""Output sizes of a library compiled for dynamic input sizes, at call time.

A library whose inputs have dynamic dims (``lowerline.compile(...,
dynamic=...)``) writes outputs whose sizes follow them: torch.export gives
each output dim as a sympy expression of the input dims' symbols
(``s31``, ``2*s31``, ``FloorDiv(s31, 2) + 1``), and the caller allocates the
outputs. The metadata keeps each expression as text and where each symbol is
read: ``{symbol: (argument, dim)}``.

``SizeFunction`` turns those texts into one Python function from the
arguments' shapes to the outputs' shapes. The text comes from the cache, so
it is parsed, never ``eval``-ed: integers, symbols, ``+ - * // %`` and the
few functions torch's symbolic shapes print (``FloorDiv``, ``CeilToInt``,
``FloorToInt``, ``IntTrueDiv``, ``Max``, ``Min``, ``Mod``, ``floor``,
``ceiling``) and nothing else; any other text is refused when the library
is loaded.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

Shape = tuple[int, ...]
# A dim as the metadata holds it: a static size, or the text of a size expression.
Dim = int | str

_BINARY: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "FloorDiv": operator.floordiv,
    "CeilToInt": math.ceil,
    "FloorToInt": math.floor,
    "IntTrueDiv": operator.truediv,
    "Mod": operator.mod,
    "PythonMod": operator.mod,
    "Max": max,
    "Min": min,
    "floor": math.floor,
    "ceiling": math.ceil,
}


class SizeExpressionError(ValueError):
    """A size expression lowerline cannot evaluate."""


def _evaluator(node: ast.AST, text: str) -> Callable[[dict[str, int]], Any]:
    """``node`` as a function of the symbols' values."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
        return lambda _: value
    if isinstance(node, ast.Name):
        name = node.id
        return lambda symbols: symbols[name]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _evaluator(node.operand, text)
        return lambda symbols: -inner(symbols)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        apply = _BINARY[type(node.op)]
        left, right = _evaluator(node.left, text), _evaluator(node.right, text)
        return lambda symbols: apply(left(symbols), right(symbols))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        function = _FUNCTIONS[node.func.id]
        parts = [_evaluator(arg, text) for arg in node.args]
        # No int() here: IntTrueDiv's float must reach CeilToInt as it is.
        return lambda symbols: function(*(part(symbols) for part in parts))
    raise SizeExpressionError(f"size expression {text!r}: cannot evaluate {ast.dump(node)}")


def symbols_of(text: str) -> set[str]:
    """The symbols a size expression reads (SyntaxError if it does not parse)."""
    tree = ast.parse(text, mode="eval")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def compile_dim(text: str) -> Callable[[dict[str, int]], int]:
    """A size expression's text as a function of its symbols' values."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise SizeExpressionError(f"size expression {text!r} does not parse: {err}") from None
    body = _evaluator(tree.body, text)
    return lambda symbols: int(body(symbols))


class SizeFunction:
    """The outputs' shapes from the arguments' shapes, for one library.

    ``outputs``: each result's dims (ints or expression texts); ``symbols``:
    where each symbol is read, ``{symbol: (argument position, dim)}``.
    """

    def __init__(self, outputs: Sequence[Sequence[Dim]], symbols: dict[str, Sequence[int]]):
        self._reads = [(name, int(place[0]), int(place[1])) for name, place in symbols.items()]
        self._dims: list[list[Any]] = []
        for dims in outputs:
            self._dims.append([dim if isinstance(dim, int) else self._dim(dim) for dim in dims])

    def _dim(self, text: str) -> Callable[[dict[str, int]], int]:
        known = {name for name, _, _ in self._reads}
        unknown = sorted(symbols_of(text) - known)
        if unknown:
            raise SizeExpressionError(
                f"output size {text!r} depends on {', '.join(unknown)}, which no input dim gives"
            )
        return compile_dim(text)

    def __call__(self, shapes: Sequence[Shape]) -> list[Shape]:
        symbols = {name: shapes[argument][dim] for name, argument, dim in self._reads}
        return [
            tuple(dim if isinstance(dim, int) else dim(symbols) for dim in dims)
            for dims in self._dims
        ]


def valid_dim(size: object, symbols: set[str]) -> bool:
    """Whether ``size`` is a dim a manifest may hold: an int, or the text of
    a size expression that reads some of ``symbols`` and nothing else."""
    if type(size) is int:
        return True
    if not isinstance(size, str):
        return False
    try:
        compile_dim(size)
        used = symbols_of(size)
    except (SizeExpressionError, SyntaxError):
        return False
    return bool(used) and used <= symbols


def is_dynamic(shape: Sequence[Dim]) -> bool:
    return any(isinstance(dim, str) for dim in shape)
