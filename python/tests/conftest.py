"""Shared helpers of the pytest suite: finite differences with NumPy."""

import numpy as np


def finite_difference(value, args, i, h=1e-6):
    """The gradient of ``value(*args)`` with respect to argument ``i`` (an array or a
    float) by central differences."""
    x = args[i]
    if isinstance(x, float):
        def at(d):
            moved = list(args)
            moved[i] = x + d
            return value(*moved)
        return (at(h) - at(-h)) / (2 * h)
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[k] += h
        minus[k] -= h
        moved_plus, moved_minus = list(args), list(args)
        moved_plus[i], moved_minus[i] = plus, minus
        grad[k] = (value(*moved_plus) - value(*moved_minus)) / (2 * h)
    return grad
