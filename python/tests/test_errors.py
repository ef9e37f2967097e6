"""Every kind of error is an exception of unfad, with its attributes."""

import numpy as np
import pytest

import unfad

DOT = "def dot(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)"


@pytest.fixture(scope="module")
def dot():
    return unfad.compile_grad(DOT)


def test_syntax_error_has_line_and_column():
    with pytest.raises(unfad.ProgramError) as e:
        unfad.compile_grad("def f(x: real) =\n  x +* 2")
    assert isinstance(e.value, unfad.Error)
    assert e.value.kind == "syntax error"
    assert (e.value.line, e.value.column) == (2, 6)
    assert "line 2" in str(e.value)


def test_type_error_has_line_and_column():
    with pytest.raises(unfad.ProgramError) as e:
        unfad.compile_grad("def f(A: [n]real) = A + 1")
    assert e.value.kind == "type error" and e.value.line == 1 and e.value.column > 1


def test_a_gradient_needs_a_real_result():
    with pytest.raises(unfad.ProgramError) as e:
        unfad.compile_grad("def f(A: [n]real) = A")
    assert "real" in str(e.value)


def test_missing_entry_point():
    with pytest.raises(unfad.ProgramError) as e:
        unfad.compile_grad(DOT, entry="nope")
    assert e.value.line is None


def test_wrt_naming_no_parameter():
    with pytest.raises(unfad.ArgumentError):
        unfad.compile_grad(DOT, wrt=["C"])


def test_number_of_arguments(dot):
    with pytest.raises(unfad.ArgumentError) as e:
        dot(np.ones(3))
    assert e.value.parameter is None and "A, B" in str(e.value)


def test_sizes_that_disagree_name_the_parameter_and_the_sizes(dot):
    with pytest.raises(unfad.ArgumentError) as e:
        dot(np.ones(3), np.ones(4))
    assert e.value.parameter == "B"
    assert "4" in str(e.value) and "3" in str(e.value)


def test_rank(dot):
    with pytest.raises(unfad.ArgumentError) as e:
        dot(np.ones((3, 2)), np.ones(3))
    assert e.value.parameter == "A" and "(3, 2)" in str(e.value)


@pytest.mark.parametrize("dtype", [np.complex128, np.bool_, object, "U3"])
def test_dtypes_that_hold_no_reals_are_refused(dot, dtype):
    with pytest.raises(unfad.ArgumentError) as e:
        dot(np.ones(3), np.zeros(3, dtype=dtype))
    assert e.value.parameter == "B" and "dtype" in str(e.value)


def test_wrong_kinds_of_value(dot):
    with pytest.raises(unfad.ArgumentError) as e:
        dot("abc", np.ones(3))
    assert e.value.parameter == "A"
    with pytest.raises(unfad.ArgumentError):
        dot(np.ones(3), None)
    f = unfad.compile_grad("def f(x: real, t: (real, real)) = x * fst t * snd t")
    with pytest.raises(unfad.ArgumentError) as e:
        f(np.ones(2), (1.0, 2.0))
    assert e.value.parameter == "x"
    with pytest.raises(unfad.ArgumentError) as e:
        f(1.0, (1.0, 2.0, 3.0))
    assert e.value.parameter == "t"


def test_unknown_stage_and_size(dot):
    with pytest.raises(unfad.ArgumentError):
        dot.emit("assembly")
    with pytest.raises(unfad.ArgumentError):
        dot.cost({"q": 3})
    with pytest.raises(unfad.ArgumentError):
        unfad.compile(DOT).emit("unf")


def test_every_exception_is_an_unfad_error():
    for cls in [unfad.ProgramError, unfad.ArgumentError, unfad.InternalError]:
        assert issubclass(cls, unfad.Error)
