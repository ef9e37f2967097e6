//! Accuracy of the kernels against a 256-bit reference: special values exactly, and random
//! points of each function's domain (both settings of `mul_add`) within 1 ulp.

mod reference;

use reference::{point, Reference, Rng};
use unfad_kernels::Kernel;

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn special_values_are_ieee() {
    let min_sub = f64::from_bits(1);
    #[rustfmt::skip]
    let cases: &[(Kernel, f64, f64)] = &[
        (Kernel::Exp, NAN, NAN), (Kernel::Exp, INF, INF), (Kernel::Exp, -INF, 0.0),
        (Kernel::Exp, 0.0, 1.0), (Kernel::Exp, -0.0, 1.0), (Kernel::Exp, 710.0, INF),
        (Kernel::Exp, 1e300, INF), (Kernel::Exp, -746.0, 0.0), (Kernel::Exp, -1e300, 0.0),
        (Kernel::Exp, -745.0, min_sub), (Kernel::Exp, 1e-300, 1.0),
        (Kernel::Log, NAN, NAN), (Kernel::Log, INF, INF), (Kernel::Log, -INF, NAN),
        (Kernel::Log, 0.0, -INF), (Kernel::Log, -0.0, -INF), (Kernel::Log, -1.0, NAN),
        (Kernel::Log, 1.0, 0.0), (Kernel::Log, -min_sub, NAN),
        (Kernel::Tanh, NAN, NAN), (Kernel::Tanh, 0.0, 0.0), (Kernel::Tanh, -0.0, -0.0),
        (Kernel::Tanh, INF, 1.0), (Kernel::Tanh, -INF, -1.0), (Kernel::Tanh, 40.0, 1.0),
        (Kernel::Tanh, -40.0, -1.0), (Kernel::Tanh, min_sub, min_sub),
        (Kernel::Tanh, -min_sub, -min_sub),
        (Kernel::Sigmoid, NAN, NAN), (Kernel::Sigmoid, INF, 1.0), (Kernel::Sigmoid, -INF, 0.0),
        (Kernel::Sigmoid, 0.0, 0.5), (Kernel::Sigmoid, -0.0, 0.5), (Kernel::Sigmoid, 1000.0, 1.0),
        (Kernel::Sigmoid, -1000.0, 0.0),
        (Kernel::Log1p, NAN, NAN), (Kernel::Log1p, INF, INF), (Kernel::Log1p, -INF, NAN),
        (Kernel::Log1p, 0.0, 0.0), (Kernel::Log1p, -0.0, -0.0), (Kernel::Log1p, -1.0, -INF),
        (Kernel::Log1p, -2.0, NAN), (Kernel::Log1p, min_sub, min_sub),
        (Kernel::Log1p, -min_sub, -min_sub), (Kernel::Log1p, 1e-300, 1e-300),
        (Kernel::Expm1, NAN, NAN), (Kernel::Expm1, INF, INF), (Kernel::Expm1, -INF, -1.0),
        (Kernel::Expm1, 0.0, 0.0), (Kernel::Expm1, -0.0, -0.0), (Kernel::Expm1, 710.0, INF),
        (Kernel::Expm1, -50.0, -1.0), (Kernel::Expm1, min_sub, min_sub),
        (Kernel::Expm1, -min_sub, -min_sub), (Kernel::Expm1, 1e-300, 1e-300),
        (Kernel::Sin, NAN, NAN), (Kernel::Sin, INF, NAN), (Kernel::Sin, -INF, NAN),
        (Kernel::Sin, 0.0, 0.0), (Kernel::Sin, -0.0, -0.0), (Kernel::Sin, min_sub, min_sub),
        (Kernel::Sin, -1e-300, -1e-300),
        (Kernel::Cos, NAN, NAN), (Kernel::Cos, INF, NAN), (Kernel::Cos, -INF, NAN),
        (Kernel::Cos, 0.0, 1.0), (Kernel::Cos, -0.0, 1.0), (Kernel::Cos, 1e-300, 1.0),
    ];
    for &(k, x, want) in cases {
        for fused in [false, true] {
            let got = k.eval_with(fused, x);
            assert!(
                same(got, want),
                "{}({x:e}) = {got:e}, not {want:e} (fused: {fused})",
                k.name()
            );
        }
    }
}

/// Points where the results are finite but extreme: overflow and underflow thresholds,
/// subnormal results, the largest arguments.
#[test]
fn extreme_points_are_within_one_ulp() {
    let mut reference = Reference::default();
    #[rustfmt::skip]
    let cases: &[(Kernel, f64)] = &[
        (Kernel::Exp, 709.78), (Kernel::Exp, 709.782712893384), (Kernel::Exp, -708.4),
        (Kernel::Exp, -709.0), (Kernel::Exp, -740.0), (Kernel::Exp, -745.1),
        (Kernel::Expm1, 709.78), (Kernel::Expm1, 709.5), (Kernel::Expm1, -37.0),
        (Kernel::Expm1, 0.34657359027997264), (Kernel::Expm1, -0.34657359027997264),
        (Kernel::Log, f64::MAX), (Kernel::Log, f64::MIN_POSITIVE), (Kernel::Log, 5e-324),
        (Kernel::Log, 1e-310), (Kernel::Log, 0.9999999999999999), (Kernel::Log, 1.0000000000000002),
        (Kernel::Log1p, f64::MAX), (Kernel::Log1p, -0.9999999999999999), (Kernel::Log1p, 1e-17),
        (Kernel::Sigmoid, -745.0), (Kernel::Sigmoid, -740.0), (Kernel::Sigmoid, 36.0),
        (Kernel::Sin, 4194304.0), (Kernel::Cos, 4194304.0), (Kernel::Sin, std::f64::consts::PI),
        (Kernel::Cos, std::f64::consts::FRAC_PI_2), (Kernel::Sin, 355.0), (Kernel::Cos, 33.0),
        (Kernel::Tanh, 0.625), (Kernel::Tanh, 0.6249999999999999), (Kernel::Tanh, 19.0),
        (Kernel::Sigmoid, 1.0), (Kernel::Sigmoid, -0.9999999999999999),
    ];
    for &(k, x) in cases {
        for fused in [false, true] {
            let y = k.eval_with(fused, x);
            let e = reference::error_in_ulps(&reference.value(k, x), y);
            assert!(
                e <= 1.0,
                "{}({x:e}) = {y:e}: {e} ulp (fused: {fused})",
                k.name()
            );
        }
    }
}

#[test]
fn random_points_are_within_one_ulp() {
    let mut reference = Reference::default();
    let mut failures = Vec::new();
    for (i, k) in Kernel::ALL.into_iter().enumerate() {
        let mut rng = Rng::new(1 + i as u64);
        let mut worst = (0.0, 0.0);
        for n in 0..10_000 {
            let x = point(k, &mut rng);
            let r = reference.value(k, x);
            // Alternate the setting of `mul_add`: half the points each.
            let y = k.eval_with(n % 2 == 0, x);
            let e = reference::error_in_ulps(&r, y);
            if e > worst.0 {
                worst = (e, x);
            }
        }
        if worst.0 > 1.0 {
            failures.push(format!("{}: {} ulp at {:e}", k.name(), worst.0, worst.1));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every entry of the table of `2^(j/128)` is the nearest double to the power (`hi`) and
/// the nearest double to what remains (`lo`), against a 256-bit reference.
#[test]
fn the_exp2_table_holds_its_powers_rounded_to_nearest() {
    use astro_float::{BigFloat, Consts, RoundingMode};
    use unfad_kernels::Table;
    const P: usize = 256;
    let rm = RoundingMode::ToEven;
    let mut cc = Consts::new().expect("astro-float's constants");
    let two = BigFloat::from_f64(2.0, P);
    for j in 0..Table::Exp2.rows() {
        let exponent = BigFloat::from_f64(j as f64 / Table::Exp2.rows() as f64, P);
        let power = two.pow(&exponent, P, rm, &mut cc);
        let hi = Table::Exp2.get(j as i64, 0);
        let lo = Table::Exp2.get(j as i64, 1);
        assert!(
            reference::error_in_ulps(&power, hi) <= 0.5,
            "hi of 2^({j}/128)"
        );
        let rest = power.sub(&BigFloat::from_f64(hi, P), P, rm);
        if rest.is_zero() {
            assert_eq!(lo, 0.0, "lo of 2^({j}/128)");
        } else {
            assert!(
                reference::error_in_ulps(&rest, lo) <= 0.5,
                "lo of 2^({j}/128)"
            );
        }
        // The index is reduced to the table: row j + 128 k is row j.
        assert_eq!(
            Table::Exp2.get(j as i64 - 3 * 128, 0).to_bits(),
            hi.to_bits()
        );
    }
}
