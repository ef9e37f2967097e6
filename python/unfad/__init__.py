"""unfad: reverse-mode automatic differentiation of array programs, compiled to native
code in milliseconds, called on NumPy arrays; directional derivatives (forward mode),
Hessian-vector products and Hessians too.

    >>> import numpy as np, unfad
    >>> f = unfad.compile_grad("def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)")
    >>> value, (dA, dB) = f(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    >>> value, dA
    (32.0, array([4., 5., 6.]))

See docs/python.md in the repository for the whole API.
"""

from ._errors import ArgumentError, Error, InternalError, ProgramError
from ._native import (
    Function,
    GradFunction,
    HessianFunction,
    HvpFunction,
    JvpFunction,
    compile,
    compile_grad,
    compile_hessian,
    compile_hvp,
    compile_jvp,
    conversions,
)

__all__ = [
    "compile_grad",
    "compile",
    "compile_jvp",
    "compile_hvp",
    "compile_hessian",
    "GradFunction",
    "Function",
    "JvpFunction",
    "HvpFunction",
    "HessianFunction",
    "conversions",
    "Error",
    "ProgramError",
    "ArgumentError",
    "InternalError",
]
