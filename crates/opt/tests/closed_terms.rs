//! `check_closed`: the optimized term reads only its parameters and what it binds. It
//! holds for the optimized gradients of random programs, and it catches a term that reads
//! a variable bound nowhere in it (as a rewrite that moved a use out of its binder's scope
//! would leave).

use unfad_opt::{check_closed, optimize, OptError};
use unfad_syntax::{Func, Node};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

#[test]
fn optimized_gradients_of_random_programs_are_closed() {
    for seed in 0..200 {
        let source = generate(seed, &Features::all()).source;
        let (mut prog, func) = load(&source);
        let all: Vec<usize> = (0..func.params.len()).collect();
        let rev = unfad_ad::reverse_weakened(&mut prog.arena, &func, &all).unwrap();
        let opt = optimize(&mut prog.arena, &rev).unwrap();
        assert_eq!(
            check_closed(&prog.arena, &opt),
            Ok(()),
            "seed {seed}:\n{source}"
        );
    }
}

#[test]
fn a_variable_bound_nowhere_is_reported_by_name() {
    let (mut prog, func) = load("def f(x: real): real = let y = x * x in y + x");
    assert_eq!(check_closed(&prog.arena, &func), Ok(()));
    // The body without its `let`: `y + x`, where `y` is bound nowhere.
    let Node::Let(_, _, rest) = prog.arena[func.body] else {
        panic!("the body is a let");
    };
    let open = Func {
        body: rest,
        ..func.clone()
    };
    assert_eq!(
        check_closed(&prog.arena, &open),
        Err(OptError::Unbound("y".into()))
    );
    // A parameter dropped from the list: `x` is read but is no longer a parameter.
    let body = prog.arena.add(Node::Var(func.params[0]));
    let no_params = Func {
        params: vec![],
        body,
        ..func
    };
    assert_eq!(
        check_closed(&prog.arena, &no_params),
        Err(OptError::Unbound("x".into()))
    );
}
