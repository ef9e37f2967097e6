"""One compiled function called from many threads at once gives each its own result."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import unfad


def test_many_threads_call_one_function():
    f = unfad.compile_grad(
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 (a, b. sin(a) * b) A B)"
    )
    rng = np.random.default_rng(2)
    cases = [(rng.standard_normal(n), rng.standard_normal(n)) for n in range(1, 65)]

    def run(case):
        a, b = case
        results = []
        for _ in range(50):
            value, (da, db) = f(a, b)
            results.append((value, da, db))
        return results

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(run, cases))
    for (a, b), results in zip(cases, outcomes):
        for value, da, db in results:
            assert abs(value - float(np.sin(a) @ b)) < 1e-12
            np.testing.assert_allclose(da, np.cos(a) * b, rtol=1e-13)
            np.testing.assert_allclose(db, np.sin(a), rtol=1e-13)


def test_compiling_from_many_threads():
    def compile_one(k):
        f = unfad.compile_grad(f"def f(x: real) = x * x * {k}.0")
        return f(2.0)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(compile_one, range(16)))
    assert results == [(4.0 * k, (4.0 * k,)) for k in range(16)]


def test_the_gil_is_released_during_the_native_call():
    """A Python thread keeps counting while a long native call runs: with the GIL held
    it could not run at all until the call returned."""
    import threading

    f = unfad.compile_grad("def f(A: [n]real) = reduce + 0 (map (a. sin(cos(a))) A)")
    a = np.linspace(0.0, 1.0, 4_000_000)
    f(a)  # warm
    count, stop = [0], threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=counter)
    thread.start()
    try:
        counted = []
        for _ in range(3):
            start = count[0]
            f(a)
            counted.append(count[0] - start)
    finally:
        stop.set()
        thread.join()
    assert max(counted) > 1000, counted


def test_many_threads_call_the_second_order_functions():
    src = "def f(A: [n]real, y: real) = y * reduce + 0 (map (a. a * a * a) A)"
    jvp, hvp, hessian = unfad.compile_jvp(src), unfad.compile_hvp(src), unfad.compile_hessian(src)
    rng = np.random.default_rng(3)
    cases = [(rng.standard_normal(n), rng.standard_normal(n)) for n in range(1, 33)]

    def run(case):
        a, v = case
        return [
            (jvp(a, 2.0, tangents=(v, 0.0)), hvp(a, 2.0, direction=(v, 1.0)), hessian(a, 2.0))
            for _ in range(10)
        ]

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(run, cases))
    for (a, v), results in zip(cases, outcomes):
        n = len(a)
        h = np.zeros((n + 1, n + 1))
        h[:n, :n] = np.diag(6 * 2.0 * a)
        h[:n, n] = h[n, :n] = 3 * a * a
        for (value, tangent), (_, (ga, gy), (ha, hy)), (_, _, dense) in results:
            assert value == pytest.approx(2.0 * float((a**3).sum()), rel=1e-13)
            assert tangent == pytest.approx(float(6.0 * a * a @ v), rel=1e-12)
            np.testing.assert_allclose(ga, 6.0 * a * a, rtol=1e-13)
            hv = h @ np.append(v, 1.0)
            np.testing.assert_allclose(ha, hv[:n], rtol=1e-12, atol=1e-14)
            assert hy == pytest.approx(hv[n], rel=1e-12)
            np.testing.assert_allclose(dense, h, rtol=1e-12, atol=1e-14)
