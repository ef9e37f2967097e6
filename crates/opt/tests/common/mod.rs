//! Set-up shared by the optimizer's tests: the settled gradient the passes after it run
//! on, and a term's value as the interpreter prints it.

// Each test file uses some of these.
#![allow(dead_code)]

use unfad_interp::args_from_json;
use unfad_interp::{eval_func, value_to_json, Value};
use unfad_syntax::{print_func, Arena, Func, Program};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// The value of `f` at `args` as JSON text, or the interpreter's error: two terms have the
/// same value, bit for bit, when these are equal.
pub fn value(arena: &Arena, f: &Func, args: &[Value<f64>]) -> String {
    match eval_func(arena, f, args) {
        Ok(v) => value_to_json(&v).to_string(),
        Err(e) => format!("error: {e}"),
    }
}

/// The gradient of `src` with respect to every parameter holding reals, as `optimize` has
/// it before joining consumers, hoisting and joining sibling folds; and that term after
/// `pass`. Also the source function, whose parameters the arguments are read for.
pub fn before_and_after(
    src: &str,
    pass: fn(&mut Arena, &Func) -> Func,
) -> (Program, Func, Func, Func) {
    let (mut prog, func) = load(src);
    let types = func.param_types(&prog.arena);
    let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    let rev = unfad_ad::reverse(&mut prog.arena, &func, &wrt).unwrap();
    let term = unfad_opt::optimize_before_hoisting(&mut prog.arena, &rev);
    let after = pass(&mut prog.arena, &term);
    (prog, func, term, after)
}

/// The function of `src` after `pass`, printed, or "unchanged" when the pass returns the
/// same term: what the snapshot tests of one pass compare.
pub fn after_pass(src: &str, pass: fn(&mut Arena, &Func) -> Func) -> String {
    let (mut prog, func) = load(src);
    let after = pass(&mut prog.arena, &func);
    if after.body == func.body {
        "unchanged".into()
    } else {
        unfad_syntax::print_func(&prog.arena, &after)
    }
}

/// `pass` applied to the simplified gradients of random programs (`features` over
/// `seeds`) keeps every value, bit for bit, and the types; returns how many it changed.
pub fn keeps_values(
    pass: fn(&mut Arena, &Func) -> Func,
    before: fn(&mut Arena, &Func) -> Func,
    runs: &[(Features, std::ops::Range<u64>)],
) -> usize {
    let mut changed = 0;
    for (features, seeds) in runs {
        for seed in seeds.clone() {
            let g = generate(seed, features);
            let (mut prog, func) = load(&g.source);
            let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
            let types = func.param_types(&prog.arena);
            let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
            let rev = unfad_ad::reverse(&mut prog.arena, &func, &wrt).unwrap();
            let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
            let term = before(&mut prog.arena, &term);
            let after = pass(&mut prog.arena, &term);
            if after.body == term.body {
                continue;
            }
            changed += 1;
            let shown = format!(
                "seed {seed}\n{}\nafter:\n{}",
                print_func(&prog.arena, &term),
                print_func(&prog.arena, &after)
            );
            unfad_opt::check_types(&mut prog.arena, &after)
                .unwrap_or_else(|e| panic!("{e}\n{shown}"));
            assert_eq!(
                value(&prog.arena, &term, &args),
                value(&prog.arena, &after, &args),
                "{shown}"
            );
        }
    }
    changed
}
