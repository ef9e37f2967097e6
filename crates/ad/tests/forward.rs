//! Forward mode (`unfad_ad::forward`) on random programs of the whole Source language and
//! of the indexing features: the tangent against the interpreter's dual numbers (an
//! independent implementation), before and after optimization; the value bit for bit the
//! primal's before optimization; unique binders; and the term linear in the program.

use unfad_ad::checks::check_unique_binders;
use unfad_interp::{args_from_json, directional_derivative, eval_func, Value};
use unfad_syntax::{print_func, Func, Program};
use unfad_test_support::{close, load};
use unfad_testgen::{generate, Features, Generated, Rng};

/// Random tangents shaped like `args`, as values and as flat leaves.
fn directions(seed: u64, args: &[Value<f64>]) -> (Vec<Value<f64>>, Vec<Vec<f64>>) {
    let mut rng = Rng::new(seed ^ 0x5eed);
    let values: Vec<Value<f64>> = args
        .iter()
        .map(|a| a.map_leaves(&mut |_| rng.real(-1.0, 1.0)))
        .collect();
    let flat = values.iter().map(|v| v.leaves()).collect();
    (values, flat)
}

/// Random program `seed`, loaded, its input, and the parameters holding reals.
fn program(
    seed: u64,
    features: &Features,
) -> (Generated, Program, Func, Vec<Value<f64>>, Vec<usize>) {
    let g = generate(seed, features);
    let (prog, func) = load(&g.source);
    let (args, _) = args_from_json::<f64>(&prog.arena, &func, &g.input).unwrap();
    let types = func.param_types(&prog.arena);
    let wrt = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    (g, prog, func, args, wrt)
}

fn check_programs(features: &Features, seeds: std::ops::Range<u64>) -> usize {
    let mut checked = 0;
    for seed in seeds {
        let (g, mut prog, func, args, wrt) = program(seed, features);
        let types = func.param_types(&prog.arena);
        let (dirs, flat) = directions(seed, &args);
        let mut tangent_flat = flat.clone();
        for (i, t) in types.iter().enumerate() {
            if !t.has_reals() {
                tangent_flat[i] = vec![0.0; flat[i].len()];
            }
        }
        let expected_value = match eval_func(&prog.arena, &func, &args) {
            Ok(v) => v.as_real().unwrap(),
            Err(_) => continue,
        };
        let expected = directional_derivative(&prog.arena, &func, &args, &tangent_flat).unwrap();
        let fwd = unfad_ad::forward(&mut prog.arena, &func, &wrt)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        check_unique_binders(&prog.arena, fwd.body).unwrap_or_else(|e| {
            panic!(
                "seed {seed}: {e}\n{}\n{}",
                g.source,
                print_func(&prog.arena, &fwd)
            )
        });
        let mut fargs = args.clone();
        fargs.extend(wrt.iter().map(|&i| dirs[i].clone()));
        let show =
            |f: &Func, a: &unfad_syntax::Arena| format!("{}\n{}", g.source, print_func(a, f));
        let out = eval_func(&prog.arena, &fwd, &fargs)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", show(&fwd, &prog.arena)));
        let leaves = out.leaves();
        assert_eq!(
            leaves[0].to_bits(),
            expected_value.to_bits(),
            "seed {seed}: value\n{}",
            show(&fwd, &prog.arena)
        );
        assert!(
            close(leaves[1], expected, 1e-9),
            "seed {seed}: tangent {} expected {expected}\n{}",
            leaves[1],
            show(&fwd, &prog.arena)
        );
        let opt = unfad_opt::optimize(&mut prog.arena, &fwd)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", show(&fwd, &prog.arena)));
        let out = eval_func(&prog.arena, &opt, &fargs)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", show(&opt, &prog.arena)));
        let leaves = out.leaves();
        assert!(
            close(leaves[0], expected_value, 1e-9) && close(leaves[1], expected, 1e-9),
            "seed {seed}: optimized {:?} expected {expected_value} {expected}\n{}",
            leaves,
            show(&opt, &prog.arena)
        );
        checked += 1;
    }
    checked
}

#[test]
fn tangents_agree_with_dual_numbers_on_random_programs() {
    let n = check_programs(&Features::all(), 0..300);
    assert!(n > 200, "only {n} programs evaluated");
}

#[test]
fn tangents_agree_with_dual_numbers_on_random_programs_with_indexing() {
    let n = check_programs(&Features::indexing(), 0..300);
    assert!(n > 150, "only {n} programs evaluated");
}

/// Forward over reverse and reverse over reverse (each optimized) against the
/// interpreter's nested dual numbers, on random programs returning a real.
fn check_hessian_vector_products(features: &Features, seeds: std::ops::Range<u64>) -> usize {
    let (mut checked, mut refused) = (0, 0);
    let (mut fd_total, mut fd_agree) = (0, 0);
    for seed in seeds {
        let (g, mut prog, func, args, wrt) = program(seed, features);
        if wrt.is_empty() {
            continue;
        }
        let (dirs, _) = directions(seed, &args);
        let Ok((value, grads, expected)) = unfad_interp::hvp(&prog.arena, &func, &args, &dirs)
        else {
            continue;
        };
        // The independent check by finite differences of forward-mode gradients: it fails
        // where the program is not smooth near the point (a branch, `max`, `abs` changing
        // within the step), so it must hold on most programs, not all.
        if let Ok(fd) = unfad_interp::fd_hvp(&prog.arena, &func, &args, &dirs, 1e-5) {
            fd_total += 1;
            let agrees = fd.iter().zip(&expected).all(|(f, e)| {
                f.len() == e.len() && f.iter().zip(e).all(|(x, y)| close(*x, *y, 1e-4))
            });
            fd_agree += usize::from(agrees);
        }
        let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &wrt).unwrap();
        let grad = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
        let mut fargs = args.clone();
        fargs.extend(wrt.iter().map(|&i| dirs[i].clone()));
        let routes = [
            unfad_ad::hessian_vector(&mut prog.arena, &grad, &wrt),
            unfad_ad::hessian_vector_by_reverse(&mut prog.arena, &grad, &wrt),
        ];
        for (route, f) in ["forward over reverse", "reverse over reverse"]
            .iter()
            .zip(routes)
        {
            let f = match f {
                Ok(f) => f,
                // Reverse mode refuses some gradients of programs with ints (accumulators
                // mixing ints and reals); forward over reverse must take every one.
                Err(e) if *route == "reverse over reverse" => {
                    eprintln!("seed {seed}: {route} refused: {e}");
                    refused += 1;
                    continue;
                }
                Err(e) => panic!("seed {seed}, {route}: {e}\n{}", g.source),
            };
            let opt = unfad_opt::optimize(&mut prog.arena, &f)
                .unwrap_or_else(|e| panic!("seed {seed}, {route}: {e}\n{}", g.source));
            let out = eval_func(&prog.arena, &opt, &fargs).unwrap_or_else(|e| {
                panic!(
                    "seed {seed}, {route}: {e}\n{}",
                    print_func(&prog.arena, &opt)
                )
            });
            let Value::Tuple(items) = out else {
                panic!("seed {seed}: not a tuple")
            };
            let k = wrt.len();
            assert_eq!(items.len(), 1 + 2 * k, "seed {seed}");
            let got_value = items[0].as_real().unwrap();
            let mut ok = close(got_value, value, 1e-9);
            for (j, &i) in wrt.iter().enumerate() {
                let (g_got, h_got) = (items[1 + j].leaves(), items[1 + k + j].leaves());
                ok &= g_got.len() == grads[i].len() && h_got.len() == expected[i].len();
                ok &= g_got
                    .iter()
                    .zip(&grads[i])
                    .all(|(x, y)| close(*x, *y, 1e-8));
                ok &= h_got
                    .iter()
                    .zip(&expected[i])
                    .all(|(x, y)| close(*x, *y, 1e-8));
            }
            assert!(
                ok,
                "seed {seed}, {route}: got {:?}\nexpected value {value}, gradient {grads:?}, hvp {expected:?}\n{}\n{}",
                items,
                g.source,
                print_func(&prog.arena, &opt)
            );
        }
        checked += 1;
    }
    assert!(
        refused * 10 <= checked,
        "reverse over reverse refused {refused} of {checked} programs"
    );
    eprintln!("finite differences agree with nested duals on {fd_agree} of {fd_total}");
    assert!(
        fd_agree * 10 >= fd_total * 9,
        "finite differences agree with the nested duals on only {fd_agree} of {fd_total} programs"
    );
    checked
}

#[test]
fn hessian_vector_products_agree_with_nested_dual_numbers_on_random_programs() {
    let n = check_hessian_vector_products(&Features::all(), 0..200);
    assert!(n > 120, "only {n} programs checked");
    let n = check_hessian_vector_products(&Features::indexing(), 200..400);
    assert!(n > 100, "only {n} programs checked");
}

#[test]
fn tangents_of_results_of_any_type_agree_with_dual_numbers() {
    let features = Features {
        real_result: false,
        ..Features::all()
    };
    let mut checked = 0;
    for seed in 0..300 {
        let (g, mut prog, func, args, wrt) = program(seed, &features);
        let (dirs, _) = directions(seed, &args);
        let Ok((value, tangent)) = unfad_interp::jvp(&prog.arena, &func, &args, &dirs) else {
            continue;
        };
        let fwd = unfad_ad::forward(&mut prog.arena, &func, &wrt).unwrap();
        let opt = unfad_opt::optimize(&mut prog.arena, &fwd)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        let mut fargs = args.clone();
        fargs.extend(wrt.iter().map(|&i| dirs[i].clone()));
        let out = eval_func(&prog.arena, &opt, &fargs).unwrap();
        let Value::Tuple(items) = out else {
            panic!("seed {seed}: not a pair")
        };
        let same = |a: Vec<f64>, b: Vec<f64>| {
            a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| close(*x, *y, 1e-9))
        };
        assert!(
            same(items[0].leaves(), value.leaves()) && same(items[1].leaves(), tangent.leaves()),
            "seed {seed}: got {items:?}, expected {value} {tangent}\n{}",
            g.source
        );
        checked += 1;
    }
    assert!(checked > 200, "only {checked} programs checked");
}
