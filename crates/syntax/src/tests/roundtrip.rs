//! `parse(print(t))` is `t` up to the names of bound variables.

use std::collections::HashMap;

use crate::{alpha_eq, print_func, Program};

/// Print the entry point of `src`, parse the printout, and compare the two terms.
pub(crate) fn assert_round_trip(src: &str) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    let printed = print_func(&prog.arena, &func);
    let mut again = Program::load(&printed)
        .unwrap_or_else(|e| panic!("printed program does not load: {e}\n{printed}"));
    let func2 = again.inline(again.entry(None).unwrap()).unwrap();
    let free: HashMap<_, _> = func
        .params
        .iter()
        .copied()
        .zip(func2.params.iter().copied())
        .collect();
    assert!(
        alpha_eq(&prog.arena, func.body, &again.arena, func2.body, &free),
        "round trip changed the term:\n{printed}\nbecame\n{}",
        print_func(&again.arena, &func2)
    );
    assert_eq!(func.ret, func2.ret);
}

#[test]
fn hand_written_programs_round_trip() {
    for src in [
        "def f(x: real) = -(-x) - -2 + (0 - 1) * -x",
        "def f(p: (real, (real, real))) = (snd p).1 + fst (snd p) + (fst p)",
        "def f(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))",
        "def f(x: real) = let Y = fun (a: real, B: [2]real) -> (a, B) in fst Y(x, [x, x])",
        "def f(x: real) = (fun (Y: (real) -> real) -> Y(x))(fun (z: real) -> z)",
        "def f(x: real) = if x > 0 then if x < 1 then 1 else 2 else let y = x in y",
        "def f(A: [n](real, [m]real)) = map (p. (fst p, map (q. q * fst p) (snd p))) A",
        "def f(x: real) = 1 + (let y = x in y) * 2 + (if x > 0 then x else 0)",
    ] {
        assert_round_trip(src);
    }
}
