//! The cheap-gradient suite: its hand-written baselines compute what unfad computes, each
//! program has the nesting depth it is listed under, and the report is produced from a
//! (quick, untimed-in-assertions) run of the harness.

use unfad_suite::measure::{fit, measure_program, measure_safety, nesting, Budget};
use unfad_suite::report::{CompileRow, Machine, Report};
use unfad_suite::suite::{programs, Program, Size};

/// A small size of the program's kind.
fn small(p: &Program) -> Size {
    match p.p {
        0 => Size::scalar(),
        1 => Size::n(7),
        2 => Size::nm(3, 4),
        _ => Size::nmk(3, 4, 5),
    }
}

/// Programs of the suite whose gradient unfad does not compile yet, with the reason; they
/// are checked on their primal only. Any other program whose gradient fails to compile
/// fails the test, and so does a program listed here whose gradient compiles (remove it
/// from the list then), so the list stays true.
const GRADIENT_NOT_SUPPORTED: &[(&str, &str)] = &[];

/// Relative agreement of unfad's results with the hand-written ones (sums in other orders).
fn close(x: f64, y: f64) -> bool {
    unfad_test_support::close(x, y, 1e-10)
}

#[test]
fn baselines_agree_with_unfad() {
    let engine = unfad::Engine::new();
    let mut failures = Vec::new();
    for p in programs() {
        let size = small(&p);
        let args = (p.inputs)(size);
        let facade: Vec<unfad::Arg> = args.iter().map(|d| d.arg()).collect();
        let primal = engine
            .compile(p.source)
            .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let value = primal.call(&facade).unwrap()[0];
        assert!(close((p.primal)(&args), value), "{}: primal", p.name);
        let mut grads = Program::grad_buffers(&args);
        let hand = (p.gradient)(&args, &mut grads, &mut Vec::new());
        assert!(close(hand, value), "{}: value of the gradient", p.name);
        let listed = GRADIENT_NOT_SUPPORTED
            .iter()
            .find(|(name, _)| *name == p.name);
        let g = match (engine.compile_grad(p.source), listed) {
            (Ok(g), None) => g,
            (Err(_), Some(_)) => continue,
            (Ok(_), Some((_, reason))) => {
                failures.push(format!(
                    "{}: its gradient compiles now; remove it from GRADIENT_NOT_SUPPORTED \
                     (listed because: {reason})",
                    p.name
                ));
                continue;
            }
            (Err(e), None) => {
                failures.push(format!("{}: the gradient does not compile: {e}", p.name));
                continue;
            }
        };
        let out = g.call(&facade).unwrap();
        for (k, want) in grads.iter().enumerate() {
            let got = out.gradient(k);
            assert_eq!(got.len(), want.len(), "{}: gradient {k}", p.name);
            for (x, y) in got.iter().zip(want) {
                assert!(
                    close(*x, *y),
                    "{}: gradient {k}: {got:?} vs {want:?}",
                    p.name
                );
            }
        }
    }
    for (name, _) in GRADIENT_NOT_SUPPORTED {
        assert!(
            programs().iter().any(|p| p.name == *name),
            "GRADIENT_NOT_SUPPORTED names {name}, which is not in the suite"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn programs_have_their_nesting_depth() {
    for p in programs() {
        assert_eq!(nesting(p.source).unwrap(), p.p, "{}", p.name);
        assert!(!p.sizes.is_empty(), "{}", p.name);
    }
}

#[test]
fn fits_recover_a_line() {
    let xs = [10.0, 100.0, 1000.0, 10000.0];
    let ys: Vec<f64> = xs.iter().map(|x| 50.0 + 2.0 * x).collect();
    let f = fit(&xs, &ys).unwrap();
    assert!(
        (f.b - 2.0).abs() < 1e-9 && (f.a - 50.0).abs() < 1e-6,
        "{f:?}"
    );
    assert!((f.exponent - 1.0).abs() < 0.05, "{f:?}");
    assert!(fit(&[1.0], &[1.0]).is_none());
}

#[test]
fn the_report_has_every_table_and_the_plot() {
    let progs = programs();
    let chosen: Vec<&Program> = progs
        .iter()
        .filter(|p| ["intro", "dot", "recurrence"].contains(&p.name))
        .collect();
    let measured: Vec<_> = chosen
        .iter()
        .map(|p| {
            let sizes: Vec<Size> = match p.p {
                0 => vec![Size::scalar()],
                _ => vec![Size::n(10), Size::n(100)],
            };
            measure_program(p, Some(&sizes), Budget::QUICK).unwrap()
        })
        .collect();
    let compile = vec![CompileRow {
        file: "examples/dot.ad".into(),
        grad_ms: Ok(0.5),
        grad_new_engine_ms: Ok(0.6),
        primal_ms: Ok(0.2),
        stages: Some([0.01, 0.1, 0.2, 0.19]),
    }];
    let safety: Vec<_> = chosen
        .iter()
        .filter(|p| p.p > 0)
        .map(|p| measure_safety(p, Size::n(10), Budget::QUICK).unwrap())
        .collect();
    // The recurrence's gradient checks that its scan has a row; the dot product's nothing.
    assert_eq!(
        safety
            .iter()
            .map(|r| (r.name, r.run_time_checks))
            .collect::<Vec<_>>(),
        [("dot", false), ("recurrence", true)]
    );
    // The kernels in batches: measured (each kernel, and a program that runs one), with
    // results checked equal bit for bit between the two modes.
    let kernel_loops = unfad_suite::batches::measure_kernels(Budget::QUICK);
    let lse = progs.iter().find(|p| p.name == "logsumexp").unwrap();
    assert!(unfad_suite::batches::runs_kernels(lse));
    let batches =
        vec![unfad_suite::batches::measure_batches(lse, Size::n(1000), Budget::QUICK).unwrap()];
    let report = Report {
        machine: Machine::detect(),
        budget: Budget::QUICK,
        programs: &progs,
        measured: &measured,
        compile: &compile,
        safety: &safety,
        streaming: &[],
        python: Ok(vec![
            ("unfad from Python: f(A, B)".into(), Some(1.5e-6)),
            ("JAX jit(value_and_grad)".into(), None),
        ]),
        jax: Err("JAX not installed (No module named 'jax')".into()),
        kernel_loops,
        batches: &batches,
        seconds: 1.0,
    };
    let md = report.markdown();
    for want in [
        "cargo run --release -p unfad-suite --bin perf-report",
        "## Targets (issue 5)",
        "| dot |",
        "## Scaling",
        "### dot (p = 1)",
        "performance.svg",
        "| `examples/dot.ad` | 0.50 ms | yes | 0.60 ms | yes |",
        "## Memory safety (issue 22)",
        "| unfad from Python: f(A, B) | 1.50 µs |",
        "| JAX jit(value_and_grad) | not installed |",
        "| recurrence | 10 |",
        "## Math kernels in batches (issue 18)",
        "| `tanh` |",
        "| logsumexp | 1000 |",
    ] {
        assert!(md.contains(want), "missing {want:?}:\n{md}");
    }
    for m in &measured {
        assert!(m.points.iter().all(|p| p.agree), "{}", m.name);
    }
    let dir = std::env::temp_dir().join(format!("unfad-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("performance.svg");
    report.svg(&svg).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("cost model"));
    std::fs::remove_dir_all(&dir).unwrap();
}
