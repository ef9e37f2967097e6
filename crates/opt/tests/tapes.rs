//! A fold that a scan of its chain computes reads the scan's last state
//! (`unfad_opt::tapes`): no value changes, not even in the last bit.

mod common;

use common::keeps_values;
use expect_test::expect;
use unfad_opt::tapes::fold_from_scan;
use unfad_syntax::{print_func, Arena, Func};
use unfad_test_support::load;
use unfad_testgen::Features;

/// The loops of the value and of the gradient joined, as the pipeline does before this.
fn joined(arena: &mut Arena, f: &Func) -> Func {
    let f = unfad_opt::siblings::fuse_sibling_loops(arena, f);
    unfad_opt::inline::inline_single_use(arena, &f)
}

/// Random gradients (the pass changes few of them: most random programs fold at the top),
/// and per-row recurrences of random steps, whose gradients it changes all: the simplified
/// gradient with the loops joined, before and after, on the same arguments.
#[test]
fn reading_folds_from_scans_changes_no_value() {
    let runs = [(Features::all(), 0..400), (Features::indexing(), 400..600)];
    keeps_values(fold_from_scan, joined, &runs);
    let steps = [
        "tanh(w * h + x)",
        "h * x + w",
        "sin(h) * w + x * x",
        "h + exp(-(x * x)) * w",
        "max(h, x) * w",
        "if x > 0 then h * w else h + x",
    ];
    let uses = ["h * h", "log(1 + h * h)", "h * w - h", "exp(-h)"];
    let mut changed = 0;
    for seed in 0..48u64 {
        let step = steps[(seed % steps.len() as u64) as usize];
        let usage = uses[(seed / steps.len() as u64 % uses.len() as u64) as usize];
        let src = format!(
            "def f(X: [n][m]real, w: real): real =\n  sum(map (row. let h = foldl (h, x. {step}) {} row in {usage}) X)",
            0.1 * seed as f64
        );
        let (mut prog, func) = load(&src);
        let row = |r: usize| -> Vec<f64> {
            (0..4)
                .map(|i| ((r * 4 + i) * 7 + seed as usize) as f64 % 11.0 / 5.0 - 1.0)
                .collect()
        };
        let input =
            serde_json::json!({"X": [row(0), row(1), row(2)], "w": 0.3 + 0.05 * seed as f64});
        let (args, _) = unfad_interp::args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
        let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
        let term = unfad_opt::simplify_to_fixed_point(&mut prog.arena, &grad);
        let term = joined(&mut prog.arena, &term);
        let after = fold_from_scan(&mut prog.arena, &term);
        if after.body == term.body {
            continue;
        }
        changed += 1;
        let shown = format!(
            "{src}\n{}\nafter:\n{}",
            print_func(&prog.arena, &term),
            print_func(&prog.arena, &after)
        );
        unfad_opt::check_types(&mut prog.arena, &after).unwrap_or_else(|e| panic!("{e}\n{shown}"));
        assert_eq!(
            common::value(&prog.arena, &term, &args),
            common::value(&prog.arena, &after, &args),
            "{shown}"
        );
    }
    assert!(
        changed >= 40,
        "folds were read from scans in only {changed} of 48 recurrences"
    );
}

/// A recurrence over each row of a batch: the joined map's body computed every step
/// twice, by the value's fold and by the gradient's scan; now the value is the scan's last
/// state, read once.
#[test]
fn a_recurrence_per_row_runs_its_steps_once() {
    let src = "def f(X: [n][m]real, w: real): real =
  sum(map (row. let h = foldl (h, x. tanh(w * h + x)) 0 row in h * h) X)";
    let (mut prog, func) = load(src);
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    expect![[r#"
        def f(X: [n][m]real, w: real): (real, [n][m]real, real) =
          let A =
            map (row.
              let S = scanl (h, x. tanh(w * h + x)) 0 row in
              let h_1 = foldl (acc, x_1. x_1) 0 S in
              let G =
                map2 (h_2, next.
                  let z = one_minus_sq(next) in
                  (w * z, z, h_2 * z)) (shift1R S) (shift1L S)
              in
              let A3 = scanr * 1 (shift1L (map (g. fst g) G)) in
              let z_1 = h_1 + h_1 in
              (
                h_1 * h_1,
                reduce + 0 (map2 (a, g_1. a * z_1 * g_1.2) A3 G),
                map2 (a_1, g_2. a_1 * snd g_2 * z_1) A3 G
              )) X
          in
          (reduce + 0 (map (g_3. fst g_3) A), map (g_4. g_4.2) A, reduce + 0 (map (g_5. snd g_5) A))
    "#]]
    .assert_eq(&print_func(&prog.arena, &opt));
}
