"""Directional derivatives, Hessian-vector products and dense Hessians against closed
forms written with NumPy, and their errors."""

import numpy as np
import pytest

import unfad

LOGSUMEXP = """
def logsumexp(x: [n]real) =
  let m = reduce max (-1e300) x in
  m + log(sum(map (xi. exp(xi - m)) x))
"""

# f(x, y) = y * sum(x^2) + y^3: gradient (2 y x, sum(x^2) + 3 y^2),
# Hessian [[2 y I, 2 x], [2 x^T, 6 y]].
CUBIC = "def cubic(x: [n]real, y: real) = y * reduce + 0 (map (a. a * a) x) + y * y * y"


def cubic_hessian(x, y):
    n = len(x)
    h = np.zeros((n + 1, n + 1))
    h[:n, :n] = 2 * y * np.eye(n)
    h[:n, n] = h[n, :n] = 2 * x
    h[n, n] = 6 * y
    return h


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


# jvp


def test_jvp_of_a_scalar_function():
    f = unfad.compile_jvp(
        "def f(x: real, A: [n]real) = reduce + 0 (map (a. sin(a * x)) A)"
    )
    assert f.params == ["x", "A"] and f.wrt == ["x", "A"]
    rng = np.random.default_rng(0)
    x, a, dx, da = 0.7, rng.standard_normal(5), -0.3, rng.standard_normal(5)
    value, tangent = f(x, a, tangents=(dx, da))
    assert isinstance(value, float) and isinstance(tangent, float)
    assert value == pytest.approx(float(np.sin(a * x).sum()), rel=1e-13)
    assert tangent == pytest.approx(float(np.cos(a * x) @ (a * dx + x * da)), rel=1e-12)


def test_jvp_of_an_array_valued_function():
    f = unfad.compile_jvp("def f(A: [n][m]real, x: real) = map (r. map (a. a * a * x) r) A")
    rng = np.random.default_rng(1)
    a, da = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    value, tangent = f(a, 2.0, tangents=(da, 0.5))
    assert value.shape == tangent.shape == (3, 4) and tangent.dtype == np.float64
    np.testing.assert_allclose(value, a * a * 2.0, rtol=1e-14)
    np.testing.assert_allclose(tangent, 2 * a * 2.0 * da + a * a * 0.5, rtol=1e-13)


def test_jvp_of_a_tuple_result():
    f = unfad.compile_jvp("def f(x: real, y: real) = (x + y, x * y)")
    assert f(2.0, 3.0, tangents=(1.0, 0.0)) == ((5.0, 6.0), (1.0, 3.0))


def test_jvp_tangents_by_name_and_wrt():
    src = "def f(x: real, A: [n]real) = x * reduce + 0 (map (a. a * a) A)"
    f = unfad.compile_jvp(src)
    a = np.array([1.0, 2.0])
    assert f(3.0, a, tangents={"A": np.array([1.0, 0.0]), "x": 1.0}) == (15.0, 5.0 + 6.0)
    g = unfad.compile_jvp(src, wrt="A")
    assert g.wrt == ["A"]
    assert g(3.0, a, tangents=(np.array([0.0, 1.0]),)) == (15.0, 12.0)


# hvp


def test_hvp_of_a_cubic():
    f = unfad.compile_hvp(CUBIC)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(4), 0.8
    vx, vy = rng.standard_normal(4), -1.5
    value, (gx, gy), (hx, hy) = f(x, y, direction=(vx, vy))
    assert value == pytest.approx(y * float(x @ x) + y**3, rel=1e-13)
    np.testing.assert_allclose(gx, 2 * y * x, rtol=1e-13)
    assert gy == pytest.approx(float(x @ x) + 3 * y * y, rel=1e-13)
    hv = cubic_hessian(x, y) @ np.append(vx, vy)
    assert hx.shape == (4,) and isinstance(hy, float)
    np.testing.assert_allclose(hx, hv[:4], rtol=1e-12)
    assert hy == pytest.approx(hv[4], rel=1e-12)


def test_hvp_of_logsumexp():
    f = unfad.compile_hvp(LOGSUMEXP)
    rng = np.random.default_rng(3)
    x, v = rng.standard_normal(6), rng.standard_normal(6)
    value, (g,), (hv,) = f(x, direction=(v,))
    p = softmax(x)
    assert value == pytest.approx(float(np.log(np.exp(x).sum())), rel=1e-13)
    np.testing.assert_allclose(g, p, rtol=1e-12)
    np.testing.assert_allclose(hv, p * v - p * (p @ v), rtol=1e-10, atol=1e-14)


def test_hvp_by_name_and_wrt():
    f = unfad.compile_hvp(CUBIC, wrt=["y"])
    x = np.array([1.0, 2.0])
    value, grads, hvps = f.by_name(x, 2.0, direction={"y": 1.0})
    assert value == 2.0 * 5.0 + 8.0
    assert grads == {"y": 5.0 + 12.0} and hvps == {"y": 12.0}


# hessian


def test_hessian_of_a_cubic():
    f = unfad.compile_hessian(CUBIC)
    x, y = np.array([0.5, -1.0, 2.0]), 1.5
    value, (gx, gy), h = f(x, y)
    assert value == pytest.approx(y * float(x @ x) + y**3)
    np.testing.assert_allclose(gx, 2 * y * x)
    assert h.shape == (4, 4) and h.dtype == np.float64
    np.testing.assert_allclose(h, cubic_hessian(x, y), rtol=1e-12, atol=1e-14)


def test_hessian_of_logsumexp():
    f = unfad.compile_hessian(LOGSUMEXP)
    x = np.random.default_rng(4).standard_normal(5)
    value, (g,), h = f(x)
    p = softmax(x)
    np.testing.assert_allclose(g, p, rtol=1e-12)
    np.testing.assert_allclose(h, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-14)


def test_hessian_flattens_matrices_row_major_in_parameter_order():
    # f(W, c) = c * sum(W^2): d2f/dW2 = 2 c I, d2f/dW dc = 2 W (row-major), d2f/dc2 = 0.
    f = unfad.compile_hessian("def f(W: [n][m]real, c: real) = c * sum(map (r. sum(map (a. a * a) r)) W)")
    w = np.arange(6.0).reshape(2, 3)
    value, grads, h = f.by_name(w, 2.0)
    assert list(grads) == ["W", "c"] and grads["W"].shape == (2, 3)
    expected = np.zeros((7, 7))
    expected[:6, :6] = 4.0 * np.eye(6)
    expected[:6, 6] = expected[6, :6] = 2 * w.ravel()
    np.testing.assert_allclose(h, expected)
    g = unfad.compile_hessian(CUBIC, wrt="x")
    _, (gx,), hx = g(np.array([1.0, 2.0]), 3.0)
    np.testing.assert_allclose(hx, 6.0 * np.eye(2))


# errors


def test_a_tangent_of_the_wrong_shape_names_its_parameter():
    f = unfad.compile_jvp("def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)")
    a = np.ones(3)
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, a, tangents=(a, np.ones(4)))
    assert e.value.parameter == "B" and "(4,)" in str(e.value) and "(3,)" in str(e.value)
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, a, tangents=(a, "abc"))
    assert e.value.parameter == "B" and "tangent" in str(e.value)
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, a, tangents=(a,))
    assert e.value.parameter is None and "A, B" in str(e.value)
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, a, tangents={"A": a})
    assert e.value.parameter == "B"
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, a, tangents={"A": a, "B": a, "C": a})
    assert "'C'" in str(e.value)
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, a, tangents=a)
    assert "tuple" in str(e.value)
    with pytest.raises(unfad.ArgumentError) as e:
        f(a, np.ones(4), tangents=(a, a))
    assert e.value.parameter == "B"
    with pytest.raises(TypeError):
        f(a, a)  # the tangents are required


def test_a_direction_of_the_wrong_shape_names_its_parameter():
    f = unfad.compile_hvp(CUBIC)
    with pytest.raises(unfad.ArgumentError) as e:
        f(np.ones(3), 1.0, direction=(np.ones((3, 1)), 1.0))
    assert e.value.parameter == "x" and "(3, 1)" in str(e.value)
    with pytest.raises(unfad.ArgumentError) as e:
        f(np.ones(3), 1.0, direction=(np.ones(3), np.ones(3)))
    assert e.value.parameter == "y"


def test_hessian_argument_errors_name_the_parameter():
    f = unfad.compile_hessian(CUBIC)
    with pytest.raises(unfad.ArgumentError) as e:
        f(np.ones((2, 2)), 1.0)
    assert e.value.parameter == "x"
    with pytest.raises(unfad.ArgumentError) as e:
        f(np.ones(2))
    assert e.value.parameter is None


def test_second_order_needs_a_real_result_and_known_parameters():
    with pytest.raises(unfad.ProgramError):
        unfad.compile_hvp("def f(A: [n]real) = A")
    with pytest.raises(unfad.ProgramError):
        unfad.compile_hessian("def f(A: [n]real) = A")
    with pytest.raises(unfad.ArgumentError):
        unfad.compile_jvp(CUBIC, wrt=["z"])
    with pytest.raises(unfad.ProgramError) as e:
        unfad.compile_jvp(CUBIC, entry="nope")
    assert e.value.line is None


def test_tuple_parameters_and_ints_take_no_tangent():
    f = unfad.compile_jvp("def f(k: int, t: (real, [m]real)) = fst t * sum(snd t)")
    assert f.wrt == ["t"]
    t = (3.0, np.array([1.0, 2.0]))
    assert f(2, t, tangents=((1.0, np.array([0.0, 1.0])),)) == (9.0, 3.0 + 3.0)
    with pytest.raises(unfad.ArgumentError) as e:
        f(2, t, tangents=((1.0, np.ones(3)),))
    assert e.value.parameter == "t" and "(3,)" in str(e.value)


def test_a_dense_hessian_of_too_many_inputs_is_refused():
    f = unfad.compile_hessian(LOGSUMEXP)
    with pytest.raises(unfad.ArgumentError) as e:
        f(np.zeros(5000))
    assert "Hessian-vector product" in str(e.value)
