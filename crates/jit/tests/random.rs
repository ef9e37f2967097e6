//! Native code against the interpreter on random well-typed programs (from
//! `unfad-testgen`, ints and indexing included), and on the optimized gradients of random
//! programs.

mod common;

use common::{check_func, check_random_gradients, check_random_primals, gradient, higher_order};
use unfad_testgen::{generate, Features};

#[test]
fn random_primal_programs_agree_with_the_interpreter() {
    let any_result = Features {
        real_result: false,
        ..Features::all()
    };
    let indexing_any = Features {
        real_result: false,
        ..Features::indexing()
    };
    for (features, seeds) in [
        (any_result, 0..300),
        (Features::all(), 300..500),
        (indexing_any, 500..700),
    ] {
        check_random_primals(&features, seeds);
    }
}

#[test]
fn random_gradients_agree_with_the_interpreter() {
    let mut checked = 0;
    for (features, seeds) in [
        (Features::core(), 0..150),
        (Features::all(), 150..300),
        (Features::indexing(), 300..500),
    ] {
        checked += check_random_gradients(&features, seeds);
    }
    eprintln!("{checked} random gradients checked");
    assert!(
        checked >= 100,
        "only {checked} random gradients could be made"
    );
}

#[test]
fn random_gradients_that_once_failed_to_compile() {
    // Elements that are unevaluated maps, bound to a parameter read twice ("an unevaluated
    // map is read twice"), and maps substituted at several uses with one set of binders
    // ("the variable is not bound"): seeds of `Features::all` past the ranges above.
    for seed in [
        3015, 3233, 3518, 3906, 4039, 4040, 4081, 4279, 4316, 4857, 4969, 5933,
    ] {
        let g = generate(seed, &Features::all());
        let (prog, func) = gradient(&g.source).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        eprintln!("gradient, seed {seed}");
        check_func(&prog.arena, &func, &g.input);
    }
}

#[test]
fn random_tangents_and_hessian_vector_products_agree_with_the_interpreter() {
    let mut checked = 0;
    let any_result = Features {
        real_result: false,
        ..Features::all()
    };
    for (features, seeds) in [
        (any_result, 0..100),
        (Features::all(), 100..250),
        (Features::indexing(), 250..400),
    ] {
        for seed in seeds {
            let g = generate(seed, &features);
            let (prog, funcs, input) =
                higher_order(&g.source, &g.input).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            for f in &funcs {
                eprintln!("forward mode, seed {seed}");
                check_func(&prog.arena, f, &input);
                checked += 1;
            }
        }
    }
    assert!(checked >= 500, "only {checked} functions checked");
}
