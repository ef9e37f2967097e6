"""Arrays in: float64 C-contiguous arrays are read in place; other layouts and dtypes are
converted (and counted by ``unfad.conversions()``)."""

import numpy as np

import unfad

DOT = "def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)"
MATRIX = "def f(W: [n][m]real) = reduce + 0 (map (r. reduce + 0 (map (x. x * x) r)) W)"


def test_contiguous_float64_is_not_copied():
    f = unfad.compile_grad(DOT)
    a = np.arange(1000.0)
    before = unfad.conversions()
    for _ in range(10):
        f(a, a)
    f(a[100:200], a[:100])  # a contiguous view is read in place too
    assert unfad.conversions() == before


def test_a_strided_view_is_converted_and_gives_the_right_result():
    f = unfad.compile_grad(DOT)
    a = np.arange(20.0)
    view = a[::2]
    assert not view.flags.c_contiguous
    before = unfad.conversions()
    value, (da, db) = f(view, np.ones(10))
    assert unfad.conversions() == before + 1
    assert value == float(view.sum())
    np.testing.assert_allclose(db, view)


def test_fortran_order_and_transposes_are_converted():
    f = unfad.compile_grad(MATRIX)
    w = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    before = unfad.conversions()
    value, (dw,) = f(w)
    assert unfad.conversions() == before + 1
    assert value == float((w * w).sum())
    np.testing.assert_allclose(dw, 2 * w)
    value_t, (dwt,) = f(w.T)
    assert dwt.shape == (3, 2)
    np.testing.assert_allclose(dwt, 2 * w.T)


def test_other_dtypes_and_lists_are_converted():
    f = unfad.compile_grad(DOT)
    before = unfad.conversions()
    assert f(np.arange(3, dtype=np.int32), np.ones(3, dtype=np.float32))[0] == 3.0
    assert f([1, 2, 3], (1.0, 1.0, 1.0))[0] == 6.0
    assert unfad.conversions() == before + 4


def test_the_arguments_are_not_changed():
    f = unfad.compile_grad(MATRIX)
    w = np.arange(6.0).reshape(2, 3)
    kept = w.copy()
    f(w)
    np.testing.assert_array_equal(w, kept)


def test_scalars_from_numpy_and_ints():
    f = unfad.compile_grad("def f(x: real, y: real) = x * y")
    assert f(np.float64(2.0), 3) == (6.0, (3.0, 2.0))
