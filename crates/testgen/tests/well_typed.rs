//! Every generated program loads (parses and type-checks) and evaluates to a finite value.

use unfad_interp::{args_from_json, eval_func, Value};
use unfad_syntax::Program;
use unfad_testgen::{generate, Features};

fn check_features(features: &Features, count: u64) {
    let mut finite = 0;
    for seed in 0..count {
        let g = generate(seed, features);
        let mut prog =
            Program::load(&g.source).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let func = prog
            .inline(prog.entry(None).unwrap())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let v = eval_func(&prog.arena, &func, &args)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        if let Value::Real(x) = v {
            if x.is_finite() {
                finite += 1;
            }
        } else if features.real_result {
            panic!("seed {seed}: not a real");
        }
    }
    // Values stay moderate: nearly every program computes a finite number.
    if features.real_result {
        assert!(
            finite as f64 >= 0.97 * count as f64,
            "only {finite} of {count} finite"
        );
    }
}

#[test]
fn core_programs_are_well_typed() {
    check_features(&Features::core(), 1500);
}

#[test]
fn scalar_programs_are_well_typed() {
    check_features(&Features::scalar(), 500);
}

#[test]
fn full_source_programs_are_well_typed() {
    check_features(&Features::all(), 1500);
    check_features(
        &Features {
            real_result: false,
            ..Features::all()
        },
        300,
    );
}

#[test]
fn programs_with_indexing_are_well_typed() {
    check_features(&Features::indexing(), 1500);
}

#[test]
fn programs_with_indexing_reach_derived_sizes() {
    // The forms whose size is computed from others (`2*n`, `2*n - 1`) are generated, so
    // the random-program properties that use these features exercise derived sizes.
    let sources: Vec<String> = (0..1500)
        .map(|seed| generate(seed, &Features::indexing()).source)
        .collect();
    let with = |needle: &str| sources.iter().filter(|s| s.contains(needle)).count();
    assert!(with(") * 2))") >= 5, "{} products", with(") * 2))"));
    assert!(with("concat ") >= 5, "{} concats", with("concat "));
}
