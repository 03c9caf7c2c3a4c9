"""The shared notation of elementwise math: what an elementwise op computes, written once in
its definition and printed by each backend in its own language.

    x1 * (1 - square(x0))        TanhGrad: its inputs are x0, x1, ...

An expression holds the inputs x0, x1..., numbers, the operators `+ - * / **`, unary `-`,
one comparison (`== != < <= > >=`, giving a bool), and calls of the FUNCTIONS below; nothing
else parses. Its meaning is NumPy's (the op's reference kernel): `/` divides as
`np.true_divide` does, a comparison is elementwise, and each function is documented with
what it computes. `parse` checks the text once, when the op is registered (op definitions
are staticgrad's own code: no user text is ever an expression).

A printer turns an expression into a format string of its language with `{0}`, `{1}`... for
the inputs: `NUMPY` here (`np.tanh({0})`, which the reference kernels and the NumPy backend
use), a C-style one in codegen/c_expr.py. Parentheses are the fewest that keep the tree, by
Python's precedences, which C's agree with for these operators (C has no `**`: a C printer
writes it as a call).
"""

from __future__ import annotations

import ast
import copy
import math

# name: (number of arguments, what it computes)
FUNCTIONS: dict[str, tuple[int, str]] = {
    "abs": (1, "|x|"),
    "sign": (1, "-1, 0 or 1 by the sign of x (NaN for NaN)"),
    "square": (1, "x * x"),
    "sqrt": (1, "the square root"),
    "exp": (1, "e ** x"),
    "expm1": (1, "e ** x - 1, accurate near 0"),
    "log": (1, "the natural logarithm"),
    "log1p": (1, "log(1 + x), accurate near 0"),
    "sin": (1, "the sine"),
    "cos": (1, "the cosine"),
    "tan": (1, "the tangent"),
    "tanh": (1, "the hyperbolic tangent"),
    "sigmoid": (1, "1 / (1 + exp(-x))"),
    "softplus": (1, "log(1 + exp(x)), without overflow"),
    "erf": (1, "the error function"),
    "erfc": (1, "1 - erf(x), accurate where erf(x) is near 1"),
    "elu": (1, "x where x > 0, else expm1(x)"),
    "floor": (1, "the largest integer not above x"),
    "ceil": (1, "the smallest integer not below x"),
    "round": (1, "the nearest integer, halves to the even one"),
    "rint": (1, "the nearest integer, halves to the even one"),
    "isnan": (1, "x is NaN (a bool)"),
    "isinf": (1, "x is +inf or -inf (a bool)"),
    "isfinite": (1, "x is neither NaN nor infinite (a bool)"),
    "logical_not": (1, "not x (bools)"),
    "maximum": (2, "the larger of x and y; NaN if either is"),
    "minimum": (2, "the smaller of x and y; NaN if either is"),
    "logical_and": (2, "x and y (bools)"),
    "logical_or": (2, "x or y (bools)"),
    "select": (3, "x where c holds, else y (c, x, y)"),
    "clip": (3, "minimum(maximum(x, lo), hi) (x, lo, hi)"),
}

_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


class Expr:
    """A checked expression of `arity` inputs (x0 ... x{arity-1} all used, in any order)."""

    __slots__ = ("text", "tree", "arity")

    def __init__(self, text: str, tree: ast.Expression, arity: int):
        self.text, self.tree, self.arity = text, tree, arity

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def functions(self) -> set[str]:
        """The names of the functions it calls."""
        return {n.func.id for n in ast.walk(self.tree) if isinstance(n, ast.Call)}


def parse(text: str) -> Expr:
    """The expression `text`, checked; ValueError naming what is not of the notation."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"expression {text!r} does not parse: {e.msg}") from None
    inputs = set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        _check(node, text, inputs, called)
    arity = len(inputs)
    if inputs != set(range(arity)):
        raise ValueError(f"expression {text!r} must use its inputs x0 ... x{arity - 1}, each "
                         f"at least once; it uses {sorted(inputs)}")
    return Expr(text, tree, arity)


def _check(node, text: str, inputs: set, called: set) -> None:
    if isinstance(node, (ast.Expression, ast.Load, ast.USub, *_BINARY, *_COMPARE)):
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, _BINARY):
        if isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant):
            # (1 / 2 would be 0.5 in NumPy and 0 in C: numbers are written computed)
            raise ValueError(f"expression {text!r}: write {ast.unparse(node)!r} as its value")
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) and \
            math.isfinite(node.value):
        return
    if isinstance(node, ast.Name):
        name = node.id
        if name.startswith("x") and name[1:].isdigit() and name[1:] == str(int(name[1:])):
            inputs.add(int(name[1:]))
            return
        if name in FUNCTIONS and id(node) in called:
            return  # (a call's function: checked with the call; never a value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        known = FUNCTIONS.get(node.func.id)
        if known is not None:
            if len(node.args) != known[0]:
                raise ValueError(f"expression {text!r}: {node.func.id} takes {known[0]} "
                                 f"argument(s), got {len(node.args)}")
            return
    raise ValueError(f"expression {text!r}: {ast.unparse(node)!r} is not of the notation "
                     "(inputs x0, x1..., numbers, + - * / **, unary -, one comparison, and "
                     "the functions of ops.expr.FUNCTIONS)")


class Printer:
    """Prints expressions as format strings of a language; `functions` maps each function
    of the notation to its spelling there (a callable's name: "np.tanh")."""

    def __init__(self, functions: dict[str, str]):
        missing = set(FUNCTIONS) - set(functions)
        if missing:
            raise ValueError(f"a printer must spell every function; missing {sorted(missing)}")
        self.functions = functions

    def format(self, expr: Expr) -> str:
        """`expr` as a format string of this language, `{i}` standing for input i."""
        tree = copy.deepcopy(expr.tree)  # (the renamer rewrites the tree it is given)
        return ast.unparse(self.rewrite(_Renamer(self.functions).visit(tree)))

    def rewrite(self, tree: ast.AST) -> ast.AST:
        """A hook for a language whose operators differ (C's `**`)."""
        return tree


class _Renamer(ast.NodeTransformer):
    """x3 -> {3}; a function -> its spelling (ast.unparse prints a Name's id as it is)."""

    def __init__(self, functions: dict[str, str]):
        self.functions = functions

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        node.func = ast.Name(self.functions[node.func.id], ast.Load())
        return node

    def visit_Name(self, node):
        return ast.Name("{" + node.id[1:] + "}", ast.Load())


# The NumPy spelling: what the reference kernels evaluate and the NumPy backend prints.
NUMPY = Printer({
    "abs": "np.abs", "sign": "np.sign", "square": "np.square", "sqrt": "np.sqrt",
    "exp": "np.exp", "expm1": "np.expm1", "log": "np.log", "log1p": "rt.log1p",
    "sin": "np.sin", "cos": "np.cos", "tan": "np.tan", "tanh": "np.tanh",
    "sigmoid": "rt.sigmoid", "softplus": "rt.softplus", "erf": "rt.erf", "erfc": "rt.erfc",
    "elu": "rt.elu", "floor": "np.floor", "ceil": "np.ceil", "round": "np.round",
    "rint": "np.rint", "isnan": "np.isnan", "isinf": "np.isinf", "isfinite": "np.isfinite",
    "logical_not": "np.logical_not", "maximum": "np.maximum",
    "minimum": "np.minimum", "logical_and": "np.logical_and", "logical_or": "np.logical_or",
    "select": "rt.select", "clip": "rt.clip",
})
