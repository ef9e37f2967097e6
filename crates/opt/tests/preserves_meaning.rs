//! Optimization never changes what a term computes: random programs, before and after.

use unfad_interp::{args_from_json, eval_func, value_to_json};
use unfad_syntax::print_func;
use unfad_test_support::{close_json_where_finite, load};
use unfad_testgen::{generate, Features};

fn check(features: &Features, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let g = generate(seed, features);
        let (mut prog, func) = load(&g.source);
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
            // NaN and infinities: `0 * e -> 0` follows the smooth semantics, not IEEE.
            close_json_where_finite(&before, &after, 1e-11),
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
