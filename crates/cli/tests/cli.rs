//! The `unfad` binary end to end: bundled examples and every kind of bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

use expect_test::{expect, Expect};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Run `unfad args...`; returns (exit code, stdout, stderr).
fn unfad(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_unfad"))
        .args(args)
        .current_dir(examples())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("unfad-cli-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn every_example_evaluates_to_its_hand_computed_value() {
    // Values computed independently (Python's math module).
    let expected = [
        ("intro", "12.0"),
        ("prod", "-18.0"),
        ("sum", "10.0"),
        ("dot", "12.0"),
        ("logsumexp", "3.5611386053535607"),
        ("neural_layer", "2.045253799955621"),
        ("recurrence", "0.07362912072470548"),
        ("rnn", "4.4889978171692135"),
        ("mlp", "0.5458050240781758"),
        ("gmm_diag", "-14.983702513749723"),
        ("softmax_ce", "0.9865181246218409"),
        ("gmm", "-13.765374333187044"),
    ];
    for (name, value) in expected {
        let (code, out, err) = unfad(&[
            "eval",
            &format!("{name}.ad"),
            "--input",
            &format!("{name}.json"),
        ]);
        assert_eq!((code, err.as_str()), (0, ""), "{name}");
        // unfad's own math kernels (within 1 ulp, not libm's) may round the last bits
        // differently from Python's: equal up to a few ulps of the result.
        let (got, want): (f64, f64) = (out.trim().parse().unwrap(), value.parse().unwrap());
        assert!(
            (got - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
            "{name}: {got} vs {want}"
        );
    }
    // Every bundled example is in the table above.
    let count = std::fs::read_dir(examples())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "ad")
        })
        .count();
    assert_eq!(count, expected.len());
}

#[test]
fn eval_of_another_entry_point() {
    let (code, out, _) = unfad(&[
        "eval",
        "neural_layer.ad",
        "--input",
        "neural_layer.json",
        "--entry",
        "loss",
    ]);
    assert_eq!((code, out.trim()), (0, "2.045253799955621"));
    let input = scratch(
        "layer.json",
        r#"{"W": [[1, 0], [0, 1]], "b": [0, 0], "x": [0, 0]}"#,
    );
    let (code, out, _) = unfad(&[
        "eval",
        "neural_layer.ad",
        "--input",
        &input,
        "--entry",
        "layer",
    ]);
    assert_eq!((code, out.trim()), (0, "[0.0,0.0]"));
}

fn check_error(args: &[&str], expect: Expect) {
    let (code, out, err) = unfad(args);
    assert_ne!(code, 0, "a failure exits with a non-zero code");
    assert_eq!(out, "", "nothing on stdout");
    let dir = std::env::temp_dir().join(format!("unfad-cli-tests-{}", std::process::id()));
    expect.assert_eq(&err.replace(&dir.display().to_string(), "$TMP"));
}

#[test]
fn malformed_source_points_at_line_and_column() {
    let bad = scratch("bad_syntax.ad", "def f(x: real) =\n  let y = x * in y\n");
    check_error(
        &["eval", &bad, "--input", "intro.json"],
        expect![[r#"
            error: syntax error: expected an expression, found `in`
              ┌─ $TMP/bad_syntax.ad:2:15
              │
            2 │   let y = x * in y
              │               ^^

        "#]],
    );
}

#[test]
fn ill_typed_program_shows_both_sizes() {
    let bad = scratch(
        "bad_type.ad",
        "def f(A: [n]real, B: [m]real) =\n  reduce + 0 (map2 * A B)\n",
    );
    check_error(
        &["emit", &bad, "--stage", "source"],
        expect![[r#"
            error: type error: `map2` needs two arrays of the same size, but the first has type `[n]real` (size n) and the second `[m]real` (size m)
              ┌─ $TMP/bad_type.ad:2:15
              │
            2 │   reduce + 0 (map2 * A B)
              │               ^^^^^^^^^^

        "#]],
    );
}

#[test]
fn bad_inputs_name_the_parameter() {
    let not_json = scratch("not.json", "{\"A\": [1, 2,");
    check_error(
        &["eval", "dot.ad", "--input", &not_json],
        expect![[r#"
        error: $TMP/not.json is not valid JSON: EOF while parsing a value at line 1 column 12
    "#]],
    );
    let sizes = scratch("sizes.json", r#"{"A": [1, 2, 3], "B": [1, 2]}"#);
    check_error(
        &["eval", "dot.ad", "--input", &sizes],
        expect![[r#"
        error: parameter `B`: size `n` is 2 here (an array of 2 elements for `n`), but 3 from parameter `A`
    "#]],
    );
    let shape = scratch(
        "shape.json",
        r#"{"W": [[1, 2], [3]], "b": [0, 0], "x": [1, 1], "t": [0, 0]}"#,
    );
    check_error(
        &["eval", "neural_layer.ad", "--input", &shape],
        expect![[r#"
        error: parameter `W`: size `m` is 1 here (an array of 1 elements for `m`), but 2 from parameter `W`
    "#]],
    );
    check_error(
        &["eval", "missing.ad", "--input", "dot.json"],
        expect![[r#"
        error: cannot read missing.ad: No such file or directory (os error 2)
    "#]],
    );
    check_error(
        &["eval", "dot.ad", "--input", "dot.json", "--entry", "nope"],
        expect![[r#"
        error: usage error: there is no definition named `nope` (the program defines: main)

    "#]],
    );
}

#[test]
fn emit_source_prints_the_inlined_entry_point() {
    let (code, out, _) = unfad(&["emit", "neural_layer.ad", "--stage", "source"]);
    assert_eq!(code, 0);
    expect![[r#"
        def loss(W: [n][m]real, b: [n]real, x: [m]real, t: [n]real): real =
          let h =
            let W_1 = W in
            let b_1 = b in
            let x_1 = x in
            map2 (row, bi.
              tanh((let A = row in
               let B = x_1 in
               reduce + 0 (map2 * A B)) + bi)) W_1 b_1
          in
          let A_1 = map2 (hi, ti. (hi - ti) * (hi - ti)) h t in
          reduce + 0 A_1
    "#]]
    .assert_eq(&out);
}

#[test]
fn usage_errors_exit_with_code_2() {
    let (code, _, err) = unfad(&["eval"]);
    assert_eq!(code, 2);
    assert!(err.contains("--input"), "{err}");
}

#[test]
fn grad_gives_the_paper_gradients_natively_and_in_the_interpreter() {
    let expected = [
        (
            "intro",
            r#"{"gradient":{"x1":12.0,"x2":4.0,"x3":0.0},"value":12.0}"#,
        ),
        (
            "prod",
            r#"{"gradient":{"A":[-12.0,9.0,-6.0,-36.0,-4.5]},"value":-18.0}"#,
        ),
        (
            "sum",
            r#"{"gradient":{"A":[1.0,1.0,1.0,1.0]},"value":10.0}"#,
        ),
        (
            "dot",
            r#"{"gradient":{"A":[4.0,-5.0,6.0],"B":[1.0,2.0,3.0]},"value":12.0}"#,
        ),
    ];
    for (name, json) in expected {
        let (file, input) = (format!("{name}.ad"), format!("{name}.json"));
        for extra in [None, Some("--interp")] {
            let mut args = vec!["grad", &file, "--input", &input];
            args.extend(extra);
            let (code, out, err) = unfad(&args);
            assert_eq!(
                (code, out.trim(), err.as_str()),
                (0, json, ""),
                "{name} {extra:?}"
            );
        }
    }
    let (code, out, _) = unfad(&["grad", "dot.ad", "--input", "dot.json", "--wrt", "B"]);
    assert_eq!(
        (code, out.trim()),
        (0, r#"{"gradient":{"B":[1.0,2.0,3.0]},"value":12.0}"#)
    );
}

#[test]
fn grad_errors() {
    check_error(
        &["grad", "dot.ad", "--input", "dot.json", "--wrt", "C"],
        expect![[r#"
        error: `C` is not a parameter of `main` (its parameters: A, B)
    "#]],
    );
    let vector = scratch("vector.ad", "def f(A: [n]real) = map2 * A A\n");
    check_error(
        &["grad", &vector, "--input", "dot.json"],
        expect![[r#"
        error: the input has `B`, which is not a parameter of `f` (its parameters: A)
    "#]],
    );
    let input = scratch("a.json", r#"{"A": [1, 2]}"#);
    check_error(
        &["grad", &vector, "--input", &input],
        expect![[r#"
        error: type error: `f` returns `[n]real`; a gradient needs a function that returns `real`

    "#]],
    );
}

#[test]
fn emit_every_stage() {
    let emit = |stage: &str| {
        let (code, out, err) = unfad(&["emit", "intro.ad", "--stage", stage]);
        assert_eq!((code, err.as_str()), (0, ""), "{stage}");
        out
    };
    expect![[r#"
        def intro(x1: real, x2: real, x3: real): (real, real, real, real) =
          let w1 = x1 * x2 in
          (w1 * x1, w1 + x2 * x1, x1 * x1, 0)
    "#]]
    .assert_eq(&emit("optimized"));
    assert!(emit("target").contains("fun (dx1: real, dx2: real, dx3: real"));
    let unf = emit("unf");
    assert!(
        unf.contains("// Source UNF") && unf.contains("J^T"),
        "{unf}"
    );
    assert!(emit("clif").contains("function"));
    // The primal as the native primal compiles it, and its code.
    expect![[r#"
        def intro(x1: real, x2: real, x3: real): real =
          let w1 = x1 * x2 in
          let w2 = w1 * x1 in
          w2
    "#]]
    .assert_eq(&emit("primal"));
    assert!(emit("primal-clif").contains("function"));
    assert!(!emit("primal-asm").is_empty());
}

#[test]
fn cost_reports_the_bound() {
    let (code, out, _) = unfad(&["cost", "prod.ad", "--sizes", "n=1000"]);
    assert_eq!(code, 0);
    expect![[r#"
        {"bound":12,"gradient":{"adds":0,"moves":32999,"mults":3999,"nlops":0,"total":36998},"holds":true,"p":1,"primal":{"adds":0,"moves":8004,"mults":1000,"nlops":0,"total":9004},"ratio":4.109062638827188,"sizes":{"n":1000}}
    "#]]
    .assert_eq(&out);
    check_error(
        &["cost", "prod.ad", "--sizes", "m=3"],
        expect![[r#"
        error: `m` is not a size of the program (its sizes: n)
    "#]],
    );
}

#[test]
fn bench_times_primal_and_gradient() {
    let (code, out, _) = unfad(&[
        "bench",
        "prod.ad",
        "--input",
        "prod.json",
        "--seconds",
        "0.05",
    ]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in ["primal_ns", "gradient_ns", "ratio", "model_ratio", "bound"] {
        assert!(
            report[key].as_f64().is_some_and(|x| x > 0.0),
            "{key} in {out}"
        );
    }
}

#[test]
fn check_compares_only_the_parameters_that_hold_reals() {
    // The oracles give every parameter a gradient, ints included; the native gradient has
    // none for them. Comparing the two lists whole once reported an infinite error.
    let src = scratch(
        "mixed.ad",
        "def f(A: [n]real, I: [n]int) =
           let P = map2 (a, i. (a * a, i + 1)) A I in
           let S = scanl (acc, p. (fst acc + fst p * real(snd p), snd acc + snd p)) (0.0, I[0]) P in
           fst (S[len(A)]) * real(snd (S[1]))",
    );
    let input = scratch("mixed.json", r#"{"A": [0.5, -1.5, 2.0], "I": [2, 0, 1]}"#);
    let (code, out, err) = unfad(&["check", &src, "--input", &input]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["gradient_leaves"], 3, "{out}");
    assert_eq!(
        report["max_error"]["native_vs_forward_mode"]["relative"], 0.0,
        "{out}"
    );
}

#[test]
fn check_samples_leaves_when_asked() {
    // `--leaves K` runs forward mode and finite differences at K leaves of each parameter
    // (first and last included); the interpreter's gradient is still compared whole.
    let src = scratch(
        "sampled.ad",
        "def f(X: [n][m]real, w: [m]real, s: real) = s * sum(map (r. tanh(sum(map2 * r w))) X)",
    );
    let x: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "[{}]",
                (0..4)
                    .map(|j| format!("{}", 0.01 * (i * 4 + j) as f64 - 0.5))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let input = scratch(
        "sampled.json",
        &format!(
            r#"{{"X": [{}], "w": [0.3, -0.2, 0.5, 0.1], "s": 1.5}}"#,
            x.join(", ")
        ),
    );
    let (code, out, err) = unfad(&["check", &src, "--input", &input, "--leaves", "7"]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["gradient_leaves"], 125, "{out}");
    // 7 of X's 120, all 4 of w's, s's one.
    assert_eq!(report["leaves_checked"]["forward_mode"], 12, "{out}");
    assert_eq!(report["leaves_checked"]["finite_differences"], 12, "{out}");
    let (code, out, _) = unfad(&["check", &src, "--input", &input]);
    assert_eq!(code, 0, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["leaves_checked"]["forward_mode"], 125, "{out}");
}

#[test]
fn check_says_when_the_value_is_not_a_number() {
    // At 0/0 there is no derivative to check; forward mode's tangent may still be a number
    // where the adjoint is NaN, which is no disagreement of the native gradient.
    let src = scratch(
        "nan.ad",
        "def f(x: [n]real) = sum(map (a. a * a) x) / sum(x)",
    );
    let input = scratch("nan.json", r#"{"x": [0.0, 0.0, 0.0]}"#);
    let (code, _, err) = unfad(&["check", &src, "--input", &input]);
    assert_eq!(code, 1);
    assert!(err.contains("the value is NaN at this input"), "{err}");
    let input = scratch("fine.json", r#"{"x": [0.5, 1.0, 2.0]}"#);
    let (code, out, err) = unfad(&["check", &src, "--input", &input]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
}

#[test]
fn check_passes_on_every_example() {
    let mut names: Vec<String> = std::fs::read_dir(examples())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "ad").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    for name in names {
        let (code, out, err) = unfad(&[
            "check",
            &format!("{name}.ad"),
            "--input",
            &format!("{name}.json"),
        ]);
        assert_eq!((code, err.as_str()), (0, ""), "{name}: {out}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["ok"], true, "{name}: {out}");
        // The paper's examples: the native gradient is forward mode's, exactly.
        if ["intro", "prod", "sum", "dot"].contains(&name.as_str()) {
            assert_eq!(
                report["max_error"]["native_vs_forward_mode"]["relative"], 0.0,
                "{name}"
            );
        }
    }
}

#[test]
fn an_index_out_of_bounds_points_at_the_read() {
    let src = scratch(
        "out_of_bounds.ad",
        "def f(x: [n]real, i: int) =\n  x[0] * x[i]\n",
    );
    let input = scratch("out_of_bounds.json", r#"{"x": [1, 2, 3], "i": 3}"#);
    // The interpreter, with the source line.
    check_error(
        &["eval", &src, "--input", &input],
        expect![[r#"
            error: run-time error: index 3 is out of bounds for an array of 3 elements
              ┌─ $TMP/out_of_bounds.ad:2:10
              │
            2 │   x[0] * x[i]
              │          ^^^^

        "#]],
    );
    // The native code, with the line and column.
    check_error(
        &["grad", &src, "--input", &input],
        expect![[r#"
            error: the program stopped at line 2, column 10: index 3 is out of bounds for an array of 3 elements
        "#]],
    );
}

#[test]
fn jvp_hvp_and_hessian_print_shaped_json() {
    let src = scratch(
        "second.ad",
        "def f(x: [n]real, w: real, k: int) = reduce + 0 (map (a. a * a * a * w) x) + x[k] * x[1]\n",
    );
    let input = scratch("second_in.json", r#"{"x": [1, -2, 0.5], "w": 2, "k": 0}"#);
    let direction = scratch("second_dir.json", r#"{"x": [0.3, 1, -1], "w": 0}"#);
    let (code, out, err) = unfad(&["jvp", &src, "--input", &input, "--tangent", &direction]);
    assert_eq!(
        (code, out.trim(), err.as_str()),
        (0, r#"{"tangent":24.7,"value":-15.75}"#, "")
    );
    let expected_hvp = r#"{"gradient":{"w":-6.875,"x":[4.0,25.0,1.5]},"hvp":{"w":12.15,"x":[4.6,-23.7,-6.0]},"value":-15.75}"#;
    for extra in [&[][..], &["--reverse-over-reverse"][..]] {
        let mut args = vec!["hvp", &src, "--input", &input, "--direction", &direction];
        args.extend_from_slice(extra);
        let (code, out, err) = unfad(&args);
        assert_eq!(
            (code, out.trim(), err.as_str()),
            (0, expected_hvp, ""),
            "{extra:?}"
        );
    }
    let (code, out, _) = unfad(&["hessian", &src, "--input", &input, "--wrt", "x"]);
    assert_eq!(
        (code, out.trim()),
        (
            0,
            r#"{"gradient":{"x":[4.0,25.0,1.5]},"hessian":[[12.0,1.0,0.0],[1.0,-24.0,0.0],[0.0,0.0,6.0]],"value":-15.75}"#
        )
    );
    // A jvp of a function returning an array: the tangent has the value's shape.
    let map = scratch("map.ad", "def f(x: [n]real, w: real) = map (a. a * w) x\n");
    let map_input = scratch("map_in.json", r#"{"x": [1, -2, 0.5], "w": 2}"#);
    let (code, out, _) = unfad(&["jvp", &map, "--input", &map_input, "--tangent", &direction]);
    assert_eq!(
        (code, out.trim()),
        (0, r#"{"tangent":[0.6,2.0,-2.0],"value":[2.0,-4.0,1.0]}"#)
    );
    let short = scratch("short_dir.json", r#"{"x": [0.3, 1], "w": 0}"#);
    check_error(
        &["hvp", &src, "--input", &input, "--direction", &short],
        expect![[r#"
            error: the direction of `x` has the shape [2], its input [3]
        "#]],
    );
}
