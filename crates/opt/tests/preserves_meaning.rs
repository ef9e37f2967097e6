//! Optimization never changes what a term computes: random programs, before and after.

use unfad_interp::{args_from_json, eval_func, value_to_json};
use unfad_syntax::{print_func, Program};
use unfad_testgen::{generate, Features};

fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-11 * (1.0 + x.abs().max(y.abs()))
        }
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| close(p, q)),
        // NaN and infinities: `0 * e -> 0` follows the smooth semantics, not IEEE.
        (String(_), _) | (_, String(_)) => true,
        _ => a == b,
    }
}

fn check(features: &Features, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let g = generate(seed, features);
        let mut prog = Program::load(&g.source).unwrap();
        let func = prog.inline(prog.entry(None).unwrap()).unwrap();
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let before = value_to_json(&eval_func(&prog.arena, &func, &args).unwrap());
        let opt = unfad_opt::optimize(&mut prog.arena, &func)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let after = value_to_json(&eval_func(&prog.arena, &opt, &args).unwrap_or_else(|e| {
            panic!(
                "seed {seed}: {e}\n{}\nbecame\n{}",
                g.source,
                print_func(&prog.arena, &opt)
            )
        }));
        assert!(
            close(&before, &after),
            "seed {seed}: {before} became {after}\n{}\noptimized:\n{}",
            g.source,
            print_func(&prog.arena, &opt)
        );
    }
}

#[test]
fn random_source_programs_keep_their_values() {
    check(&Features::all(), 0..1200);
    check(
        &Features {
            real_result: false,
            ..Features::all()
        },
        0..400,
    );
}
