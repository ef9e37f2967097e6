"""Values and gradients against NumPy and finite differences, for every kind of parameter."""

import numpy as np
import pytest

import unfad
from conftest import finite_difference

DOT = "def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)"


def test_dot_value_and_gradient():
    f = unfad.compile_grad(DOT)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(10), rng.standard_normal(10)
    value, (da, db) = f(a, b)
    assert isinstance(value, float)
    assert value == pytest.approx(float(a @ b))
    np.testing.assert_allclose(da, b)
    np.testing.assert_allclose(db, a)
    assert da.dtype == np.float64 and da.shape == a.shape


def test_by_name_gives_a_dict():
    f = unfad.compile_grad(DOT)
    value, grads = f.by_name(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert value == 11.0
    assert list(grads) == ["A", "B"]
    np.testing.assert_allclose(grads["A"], [3.0, 4.0])


def test_wrt_and_entry():
    src = DOT + "\ndef other(x: real) = x * x"
    f = unfad.compile_grad(src, entry="dot", wrt=["B"])
    assert f.params == ["A", "B"] and f.wrt == ["B"]
    value, grads = f(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert value == 11.0 and len(grads) == 1
    np.testing.assert_allclose(grads[0], [1.0, 2.0])
    g = unfad.compile_grad(src, wrt="x")
    assert g(3.0) == (9.0, (6.0,))


def test_a_nonlinear_program_against_finite_differences():
    src = """
def loss(W: [n][m]real, x: [m]real, b: real) =
  reduce + 0 (map (r. tanh (reduce + 0 (map2 * r x) + b) * tanh (reduce + 0 (map2 * r x) + b)) W)
"""
    f = unfad.compile_grad(src)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((4, 3)), rng.standard_normal(3), 0.3]

    def reference(W, x, b):
        return float(np.sum(np.tanh(W @ x + b) ** 2))

    value, grads = f(*args)
    assert value == pytest.approx(reference(*args), rel=1e-12)
    assert grads[0].shape == (4, 3) and isinstance(grads[2], float)
    for i in range(3):
        np.testing.assert_allclose(
            grads[i], finite_difference(reference, args, i), rtol=1e-6, atol=1e-8
        )


def test_tuples_and_arrays_of_tuples():
    src = """
def f(P: [n](real, real), t: (real, [m]real)) =
  reduce + 0 (map (p. fst p * snd p * snd p) P) + fst t * reduce + 0 (snd t)
"""
    f = unfad.compile_grad(src)
    value, (dP, dt) = f([(1.0, 2.0), (3.0, 4.0)], (2.0, np.array([1.0, 2.0, 3.0])))
    assert value == 1 * 4 + 3 * 16 + 2 * 6
    assert dP == [(4.0, 4.0), (16.0, 24.0)]
    assert dt[0] == 6.0
    np.testing.assert_allclose(dt[1], [2.0, 2.0, 2.0])


def test_compile_gives_the_value_in_its_type():
    scale = unfad.compile("def f(A: [n][m]real, x: real) = map (r. map (y. y * x) r) A")
    out = scale(np.arange(6.0).reshape(2, 3), 2.0)
    np.testing.assert_allclose(out, np.arange(6.0).reshape(2, 3) * 2)
    pair = unfad.compile("def f(x: real, y: real) = (x + y, x * y)")
    assert pair(2.0, 3.0) == (5.0, 6.0)
    dot = unfad.compile(DOT)
    assert dot([1.0, 2.0], [3.0, 4.0]) == 11.0


def test_empty_arrays():
    f = unfad.compile_grad(DOT)
    value, (da, db) = f(np.zeros(0), np.zeros(0))
    assert value == 0.0 and da.shape == (0,)


def test_emit_and_cost():
    f = unfad.compile_grad(DOT)
    for stage in ["source", "unf", "target", "optimized", "clif"]:
        assert f.emit(stage)
    assert "map2" in f.emit("optimized")
    c = f.cost({"n": 1000})
    assert c["sizes"] == {"n": 1000}
    assert c["holds"] and c["p"] >= 0 and c["gradient"]["total"] >= c["primal"]["total"]
    assert f.cost()["sizes"] == {"n": 100}
    g = unfad.compile(DOT)
    assert "reduce" in g.emit("source") and g.emit("clif")
    assert "gradient" not in g.cost()
