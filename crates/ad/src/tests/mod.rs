//! Tests of reverse mode: one `check` helper per stage, many small cases.

mod deep;
mod derivatives;
mod direct;
mod errors;
mod extrema;
mod numeric;
mod properties;
mod unf;

use unfad_interp::{args_from_json, eval_func, Value};
use unfad_syntax::{typeck, Arena, Func};

/// Load a program and inline its entry point (shared with the other crates' tests).
pub(crate) use unfad_test_support::load;

use crate::checks::{check_linear, check_unique_binders};

/// An entry point of the crate: `reverse`, `gradient` or their UNF versions.
pub(crate) type Pipeline = fn(&mut Arena, &Func, &[usize]) -> Result<Func, crate::AdError>;

/// Every generated term type-checks, uses its continuations linearly and binds every
/// variable once.
pub(crate) fn assert_well_formed(arena: &mut Arena, func: &Func) {
    if let Err(e) = typeck::infer(arena, &typeck::NoSource, func.body) {
        panic!(
            "ill-typed result: {e}\n{}",
            unfad_syntax::print_func(arena, func)
        );
    }
    let text = || unfad_syntax::print_func(arena, func);
    let t = arena.type_of(func.body).cloned();
    assert_eq!(t.as_ref(), Some(&func.ret), "{}", text());
    if let Err(e) = check_linear(arena, func.body) {
        panic!("{e}\n{}", text());
    }
    if let Err(e) = check_unique_binders(arena, func.body) {
        panic!("{e}\n{}", text());
    }
}

/// The arguments of `func` from JSON text.
pub(crate) fn args(arena: &Arena, func: &Func, json: &str) -> Vec<Value<f64>> {
    let j: serde_json::Value = serde_json::from_str(json).unwrap();
    args_from_json(arena, func, &j).unwrap().0
}

/// Evaluate a result `(value, g1, ..., gk)` into the value and the flat gradients.
pub(crate) fn eval_reverse(arena: &Arena, rev: &Func, args: &[Value<f64>]) -> (f64, Vec<Vec<f64>>) {
    let out = eval_func(arena, rev, args).unwrap_or_else(|e| panic!("{e}"));
    let Value::Tuple(items) = out else {
        panic!("not a tuple: {out}")
    };
    let v = items[0].as_real().expect("the value is a real");
    (v, items[1..].iter().map(|g| g.leaves()).collect())
}
