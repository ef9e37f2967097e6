//! Dropping the unread columns of stored maps (`unfad_opt::columns`) changes no value, not
//! even in the last bit: the columns kept are computed by the same operations.

use unfad_interp::{args_from_json, eval_func, value_to_json, Value};
use unfad_opt::columns::drop_unread_columns;
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::{generate, Features};

fn value(arena: &Arena, f: &Func, args: &[Value<f64>]) -> String {
    match eval_func(arena, f, args) {
        Ok(v) => value_to_json(&v).to_string(),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn dropping_unread_columns_of_random_gradients_changes_no_value() {
    let mut changed = 0;
    for (features, seeds) in [(Features::all(), 0..600), (Features::indexing(), 600..1000)] {
        for seed in seeds {
            let g = generate(seed, &features);
            let (mut prog, func) = load(&g.source);
            let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
            let types = func.param_types(&prog.arena);
            let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
            let rev = unfad_ad::reverse(&mut prog.arena, &func, &wrt).unwrap();
            let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &rev);
            let narrowed = drop_unread_columns(&mut prog.arena, &term);
            if narrowed.body == term.body {
                continue;
            }
            changed += 1;
            let shown = format!(
                "seed {seed}\n{}\nnarrowed:\n{}",
                print_func(&prog.arena, &term),
                print_func(&prog.arena, &narrowed)
            );
            unfad_opt::check_types(&mut prog.arena, &narrowed)
                .unwrap_or_else(|e| panic!("{e}\n{shown}"));
            assert_eq!(
                value(&prog.arena, &term, &args),
                value(&prog.arena, &narrowed, &args),
                "{shown}"
            );
        }
    }
    // The test means something only if columns are often dropped.
    assert!(
        changed >= 20,
        "columns were dropped in only {changed} gradients"
    );
}
