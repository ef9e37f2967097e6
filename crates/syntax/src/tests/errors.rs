//! Every kind of front-end error: the message and where it points.

use expect_test::{expect, Expect};

use crate::Program;

fn check(src: &str, expect: Expect) {
    let err = match Program::load(src) {
        Ok(mut prog) => match prog.entry(None).and_then(|d| prog.inline(d)) {
            Ok(_) => panic!("expected an error for {src:?}"),
            Err(e) => e,
        },
        Err(e) => e,
    };
    expect.assert_eq(&err.to_string());
}

#[test]
fn syntax_errors() {
    check("def f(x: real) = let y = x x", expect!["syntax error at line 1, column 28: expected `in` after the bound expression of `let`, found `x`"]);
    check("def f(x: real) = (x + 1", expect!["syntax error at line 1, column 24: expected `)` to close the parenthesis, found the end of the input"]);
    check("def f(x: real) =\n  x # 2", expect!["syntax error at line 2, column 5: expected `def` at the start of a definition, found the character `#`"]);
    check("def f(x) = x", expect!["syntax error at line 1, column 8: expected `:` after the parameter name (every parameter has a type), found `)`"]);
    check("def f(x: real) = if x > 0 then x", expect!["syntax error at line 1, column 33: expected `else` after the `then` branch (every `if` has an `else`), found the end of the input"]);
    check(
        "def f(x: real) = y + 1",
        expect!["syntax error at line 1, column 18: unknown name `y`"],
    );
    check("def f(x: real) = x < 1 < 2", expect!["syntax error at line 1, column 24: comparisons do not chain: write `a < b && b < c` instead of `a < b < c`"]);
    check("def f(A: [n]real) = map + A", expect!["syntax error at line 1, column 25: `map` needs a function of 1 argument(s); the operator `+` takes 2"]);
    check("def f(A: [n]real) = map2 (x. x) A A", expect!["syntax error at line 1, column 26: `map2` needs a function of 2 argument(s), this binder has 1"]);
    check("def f(A: [n]real) = reduce x 0 A", expect!["syntax error at line 1, column 28: expected the function argument of `reduce`: a binder such as `(x, y. e)` or an operator such as `+`, found `x`"]);
    check(
        "def f(x: real) = sin(x, x)",
        expect!["syntax error at line 1, column 18: `sin` takes 1 argument, 2 given"],
    );
    check(
        "def f(x: real) = x\ndef f(y: real) = y",
        expect!["syntax error at line 2, column 5: `f` is already defined"],
    );
    check("def f(exp: real) = exp", expect!["syntax error at line 1, column 7: `exp` is a built-in function and cannot name a variable"]);
    check(
        "def f(x: real, x: real) = x",
        expect!["syntax error at line 1, column 16: parameter `x` appears twice"],
    );
    check("def f(x: [n+]real) = x", expect!["syntax error at line 1, column 13: expected a number in a size (`n+1`, `n-1`), found `]`"]);
    check("def f(x: real) = (fun y: real -> y)(x)", expect!["syntax error at line 1, column 24: an annotated parameter needs parentheses: `fun (x: real) -> e`"]);
    check(
        "def f(x: real) = ()",
        expect!["syntax error at line 1, column 19: the language has no empty tuple `()`"],
    );
    check("def f(p: (real, real)) = p.1.0", expect!["syntax error at line 1, column 28: a projection needs a whole number, found `1.0` (write `(e.1).0` for nested projections)"]);
    check(
        "",
        expect!["syntax error: the program has no definition (`def f(x: real) = ...`)"],
    );
}

#[test]
fn type_errors() {
    check(
        "def f(A: [n]real, B: [m]real) = map2 * A B",
        expect!["type error at line 1, column 33: `map2` needs two arrays of the same size, but the first has type `[n]real` (size n) and the second `[m]real` (size m)"],
    );
    check("def f(x: real, A: [n]real) = x + A", expect!["type error at line 1, column 34: the right operand of `+` must be a real, but this has the array type `[n]real`"]);
    check("def f(x: real) = if x then x else 0", expect!["type error at line 1, column 21: the condition of `if` must be a condition (a comparison), but this has `real`"]);
    check("def f(x: real, A: [n]real) = if x > 0 then x else A", expect!["type error at line 1, column 30: the branches of `if` differ: `then` has type `real` but `else` has type `[n]real`"]);
    check(
        "def f(x: [n]real) = let s = foldl (c, a. (fst c + a, snd c + 1)) (0, 0) x in fst s / real(snd s)",
        expect!["type error at line 1, column 91: the argument of `real` must be an int, but this is a real (ints are int parameters, `len(A)`, elements of `iota`, whole-number literals, and `+ - * / %` of ints; `div(a, b)` divides whole numbers). A count kept in a loop's state (`foldl`, `scanl`, `iterate`, `iterate_while`) whose start is a whole-number literal is a real unless the steps use it as an int: start it from an int (`let zero: int = 0`) to count in ints, or leave out `real`"],
    );
    check("def f(x: real) = fst x", expect!["type error at line 1, column 18: `fst` needs a tuple with at least 1 components, but the operand has `real`"]);
    check("def f(A: [n]real) = reduce + (0, 0) A", expect!["type error at line 1, column 21: `reduce` needs a unit of the array's element type: the unit has type `(real, real)` but the elements have type `real`"]);
    check("def f(A: [n]real) = foldl (a, x. (a, x)) 0 A", expect!["type error at line 1, column 27: the function of `foldl` must return the accumulator's type `real`, but returns `(real, real)`"]);
    check("def f(x: real) = [x, (x, x)]", expect!["type error at line 1, column 22: array elements must have one type: the first has type `real`, this one `(real, real)`"]);
    check("def f(x: real) = let y: [3]real = x in y", expect!["type error at line 1, column 35: `y` is declared as `[3]real` but is bound to a value of type `real`"]);
    check("def f(x: real): [2]real = x", expect!["type error at line 1, column 27: `f` is declared to return `[2]real` but its body has type `real`"]);
    check("def f(x: real) = x > 1", expect!["type error at line 1, column 18: `f` returns a condition; a definition returns reals, tuples or arrays"]);
    check(
        "def g(A: [n]real, B: [n]real) = dot(A, B)\ndef f(A: [n]real, B: [m]real) = g(A, B)",
        expect!["type error at line 2, column 38: argument 2 of `g` should have type `[n]real`, but has type `[m]real` (size `n` is already n from an earlier argument, here it would be m)"],
    );
    check("def f(x: real) = (fun (y) -> y)(x)", expect!["type error at line 1, column 19: the parameter `y` of this `fun` needs a type annotation (`y: real`)"]);
    check(
        "def f(x: real) = x(1)",
        expect![
            "type error at line 1, column 18: only functions can be applied, but this has `real`"
        ],
    );
    check("def f(A: [n]real) = map (x. x > 0) A", expect!["type error at line 1, column 25: the function of `map` must compute a value made of reals, but it has `bool` (a condition)"]);
    check("def f(x: real) = []", expect!["type error at line 1, column 18: the type of an empty array literal `[]` cannot be inferred"]);
    check("def f(x: real): [k]real = [x]", expect!["type error at line 1, column 27: `f` is declared to return `[k]real` but its body has type `[1]real`"]);
}
