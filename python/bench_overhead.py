"""Call overhead of the Python door: the per-call time of ``f(A, B)`` from Python (call to
result, NumPy arrays in and out) against the facade's native call alone
(``GradFunction.time_native``: ``GradFn::call_into`` repeated in Rust on the same
arguments), on arrays of 10 elements; and JAX's ``jit(value_and_grad)`` beside it when JAX
is importable.

    python python/bench_overhead.py            # after `pip install ./python` (a release build)
    python python/bench_overhead.py --json     # the same figures as JSON (for perf-report)
"""

import json
import os
import sys
import timeit

import numpy as np

# Run as a script, Python puts this folder first on the path, where the source package
# `unfad/` (without its compiled `_native`) would hide the installed one: look there last.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [_HERE]

import unfad  # noqa: E402

DOT = "def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)"
N = 10


def per_call(call, seconds=0.5):
    """The best of five means of ``call()``, each over enough calls to last ``seconds / 5``."""
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    number = max(number, int(number * seconds / 5 / 0.2))
    return min(timer.repeat(repeat=5, number=number)) / number


def main():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(N), rng.standard_normal(N)
    f = unfad.compile_grad(DOT)
    python = per_call(lambda: f(a, b))
    native = min(f.time_native(a, b, number=200_000) for _ in range(5))
    rows = [
        ("unfad native call (Rust, GradFn::call_into)", native),
        ("unfad from Python: f(A, B)", python),
        ("  overhead of the Python door", python - native),
    ]
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        g = jax.jit(jax.value_and_grad(lambda x, y: jnp.dot(x, y), argnums=(0, 1)))
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        jax.block_until_ready(g(ja, jb))
        rows.append(
            ("JAX jit(value_and_grad), jax arrays", per_call(lambda: jax.block_until_ready(g(ja, jb))))
        )
        rows.append(
            ("JAX jit(value_and_grad), NumPy arrays", per_call(lambda: jax.block_until_ready(g(a, b))))
        )
    except ImportError:
        rows.append(("JAX jit(value_and_grad)", None))
    if "--json" in sys.argv[1:]:
        print(json.dumps({"n": N, "rows": [[name, t] for name, t in rows]}))
        return
    print(f"dot of two arrays of {N} elements, value and gradient, per call:")
    print(f"| {'call':<46} | {'us':>8} |")
    print(f"|{'-' * 48}|{'-' * 10}|")
    for name, t in rows:
        shown = "not installed" if t is None else f"{t * 1e6:8.3f}"
        print(f"| {name:<46} | {shown:>8} |")


if __name__ == "__main__":
    main()
