//! Random well-typed programs (from `unfad-testgen`): both pipelines give well-formed
//! terms whose values and gradients agree with forward mode and with each other; beyond
//! the core Source, the direct macro alone does.

use unfad_interp::{args_from_json, forward_gradient};
use unfad_test_support::{close as close_to, load};
use unfad_testgen::{generate, Features};

use super::{assert_well_formed, eval_reverse, Pipeline};
use crate::{reverse, reverse_via_unf, AdError};

/// Against forward mode, whose sums run in another order.
fn close(a: f64, b: f64) -> bool {
    close_to(a, b, 1e-10)
}

/// Returns how many programs both pipelines differentiated, and how many only the direct
/// macro did.
fn check_features(features: &Features, seeds: std::ops::Range<u64>) -> (usize, usize) {
    let (mut checked, mut unsupported) = (0, 0);
    for seed in seeds {
        let g = generate(seed, features);
        let (mut prog, func) = load(&g.source);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
        let (v0, g0) = forward_gradient(&prog.arena, &func, &args).unwrap();
        let all: Vec<usize> = (0..func.params.len()).collect();
        let mut outcomes = Vec::new();
        for pipeline in [reverse as Pipeline, reverse_via_unf] {
            match pipeline(&mut prog.arena, &func, &all) {
                Ok(rev) => {
                    assert_well_formed(&mut prog.arena, &rev);
                    outcomes.push(Some(eval_reverse(&prog.arena, &rev, &args)));
                }
                Err(AdError::Unsupported { span, message, .. }) => {
                    assert!(!span.is_none(), "seed {seed}: no position for: {message}");
                    outcomes.push(None)
                }
                Err(e) => panic!("seed {seed}: {e}\n{}", g.source),
            }
        }
        assert!(
            outcomes[0].is_some(),
            "seed {seed}: the direct macro rejects\n{}",
            g.source
        );
        match (&outcomes[0], &outcomes[1]) {
            (Some(d), Some(u)) => {
                // The two pipelines agree with each other to rounding.
                assert!(
                    close_to(d.0, u.0, 1e-12),
                    "seed {seed}: values {} vs {}",
                    d.0,
                    u.0
                );
                for (gd, gu) in d.1.iter().zip(&u.1) {
                    for (x, y) in gd.iter().zip(gu) {
                        assert!(
                            close_to(*x, *y, 1e-12),
                            "seed {seed}: {gd:?} vs via UNF {gu:?}"
                        );
                    }
                }
                for (v, grads) in [d, u] {
                    assert!(
                        close(*v, v0),
                        "seed {seed}: value {v} vs {v0}\n{}",
                        g.source
                    );
                    for (gi, fi) in grads.iter().zip(&g0) {
                        assert_eq!(gi.len(), fi.len());
                        for (x, y) in gi.iter().zip(fi) {
                            assert!(close(*x, *y), "seed {seed}: {gi:?} vs forward {fi:?}");
                        }
                    }
                }
                checked += 1;
            }
            (Some(d), None) => {
                // Beyond the core: only the direct macro; it agrees with forward mode.
                for (gi, fi) in d.1.iter().zip(&g0) {
                    assert_eq!(gi.len(), fi.len());
                    for (x, y) in gi.iter().zip(fi) {
                        assert!(close(*x, *y), "seed {seed}: {gi:?} vs forward {fi:?}");
                    }
                }
                assert!(close(d.0, v0), "seed {seed}: value {} vs {v0}", d.0);
                unsupported += 1;
            }
            _ => panic!("seed {seed}: only the UNF pipeline supports the program"),
        }
    }
    (checked, unsupported)
}

#[test]
fn core_programs() {
    let (checked, unsupported) = check_features(&Features::core(), 0..400);
    assert_eq!(unsupported, 0, "{checked} checked");
}

#[test]
fn scalar_programs() {
    let (checked, unsupported) = check_features(&Features::scalar(), 1000..1200);
    assert_eq!(unsupported, 0, "{checked} checked");
}

/// Programs of the whole Source language: the direct macro differentiates every one of
/// them right; the UNF pipeline, where it has rules, agrees with it, and rejects the rest
/// with a position (never a panic or another error).
#[test]
fn full_source_programs_are_differentiated() {
    let (both, direct_only) = check_features(&Features::all(), 2000..2300);
    assert!(
        both > 20 && direct_only > 20,
        "{both} by both pipelines, {direct_only} by the direct macro only"
    );
}

/// `~UNF(e)` (the paper's weakening, corrected) is the translation of `e` in the context
/// extended by an unused entry, which is how the translation computes it.
#[test]
fn weakening_agrees_with_translation() {
    use crate::unf::translate::{unf, weaken};
    for seed in 3000..3150 {
        let g = generate(seed, &Features::core());
        let (mut prog, func) = load(&g.source);
        let a = &mut prog.arena;
        let extra = a.fresh_var("unused", Some(unfad_syntax::Type::Real));
        let narrow = unf(a, &func.params, func.body).unwrap();
        let mut wide_ctx = func.params.clone();
        wide_ctx.push(extra);
        let wide = unf(a, &wide_ctx, func.body).unwrap();
        let k = func.params.len();
        let weakened = weaken(narrow.prims, k, &[unfad_syntax::Type::Real]).unwrap();
        assert_eq!(weakened, wide.prims, "seed {seed}");
    }
}
