//! `unfad_opt::dead`: dropping what nothing reads changes no value, bit for bit.

mod common;

use common::value;

use unfad_interp::args_from_json;
use unfad_opt::dead::drop_dead_code;
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

/// Whether `drop_dead_code` changed the entry of `source` (asserting its value did not).
fn keeps_values(source: &str, input: &serde_json::Value) -> bool {
    let (mut prog, func) = load(source);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, input).unwrap();
    let live = drop_dead_code(&mut prog.arena, &func);
    if live.body == func.body {
        return false;
    }
    let (before, after) = (
        value(&prog.arena, &func, &args),
        value(&prog.arena, &live, &args),
    );
    assert_eq!(
        before,
        after,
        "{source}\nwithout dead code:\n{}",
        print_func(&prog.arena, &live)
    );
    unfad_opt::check_types(&mut prog.arena, &live)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &live)));
    unfad_opt::check_closed(&prog.arena, &live)
        .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &live)));
    true
}

/// The random program `source` with its entry's value paired with dead work: its own
/// result computed again inside an unread tuple component, an unused `let` and a stored
/// map's unread column (every random program's entry is renamed `inner` and called).
fn with_dead_code(source: &str) -> Option<String> {
    let (prog, func) = load(source);
    let name = func.name.clone();
    let params: Vec<String> = func
        .params
        .iter()
        .map(|&p| prog.arena.var_name(p).to_string())
        .collect();
    let typed: Vec<String> = func
        .params
        .iter()
        .map(|&p| {
            let ty = prog.arena.var_type(p)?;
            Some(format!("{}: {ty}", prog.arena.var_name(p)))
        })
        .collect::<Option<_>>()?;
    let real = params
        .iter()
        .zip(&func.params)
        .find(|(_, &p)| prog.arena.var_type(p) == Some(&unfad_syntax::Type::Real))?
        .0
        .clone();
    let args = params.join(", ");
    Some(format!(
        "{source}\n\ndef wrapped({}): {} =\n  let unused = {name}({args}) in\n  let pairs = map (t. (t * {real}, ({name}({args}), t))) [1, 2, 3] in\n  let (kept, dropped) = ({name}({args}), sin({real})) in\n  let total = sum(map (p. fst p) pairs) in\n  fst (kept, total + dropped)\n",
        typed.join(", "),
        func.ret,
    ))
}

#[test]
fn dropping_dead_code_of_random_programs_changes_no_value() {
    let mut changed = 0;
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        changed += keeps_values(&g.source, &g.input) as usize;
        if let Some(src) = with_dead_code(&g.source) {
            assert!(keeps_values(&src, &g.input), "nothing dropped from\n{src}");
            changed += 1;
        }
    }
    assert!(changed >= 200, "only {changed} programs had dead code");
}
