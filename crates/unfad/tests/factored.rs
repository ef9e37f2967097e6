//! A result's constant factors, taken out of the reverse pass (`unfad_ad::reverse_factored`,
//! the route `compile_grad` takes): random programs of the whole Source language, their
//! results scaled as a user scales a loss (a mean's `/ real(len(A) + 1)`, `0.5 * ...`, a
//! negation, a constant added), differentiated natively against the program as written, differentiated by
//! tagged dual numbers; and the factors are found where they are written.

mod common;

use common::{agrees, native_output};
use unfad::{Engine, Pipeline};

/// The `k`-th way of scaling a result `r` (the text of a real expression).
fn scaled(k: u64, r: &str) -> String {
    match k % 9 {
        7 => format!("({r}) / real(len(A) + 1) + 0.5 * sum(map (v. v * v) B)"),
        8 => format!("2.0 * ({r}) - x * y"),
        0 => format!("({r}) / real(len(A) + 1)"),
        1 => format!("0.5 * ({r})"),
        2 => format!("-(({r}) * 3.0) / real(len(B) + 2)"),
        3 => format!("let n = real(len(A) + len(B) + 1) in 2.0 * (({r}) / n)"),
        4 => format!("-({r})"),
        5 => format!("(1.0 - ({r})) / real(len(A) + 3) + y0"),
        _ => format!("({r}) * y0"),
    }
}

/// The program `src` (its entry point `f` last, its body on the line after the header)
/// with its result scaled as [`scaled`] says, and `y0`, a parameter that is not
/// differentiated when asked, added last.
fn with_scaled_result(k: u64, src: &str) -> Option<String> {
    let at = src.rfind("def f(")?;
    let (helpers, entry) = src.split_at(at);
    let (header, body) = entry.split_once(") =\n")?;
    Some(format!(
        "{helpers}{header}, y0: real) =\n  {}\n",
        scaled(k, body.trim())
    ))
}

#[test]
fn scaled_results_agree_with_tagged_dual_numbers() {
    use unfad_interp::{args_from_json, gradient_with_derivatives};
    use unfad_testgen::{generate, Features};
    let (mut checked, mut factored) = (0, 0);
    for seed in 0..300 {
        let g = generate(seed, &Features::all());
        let Some(src) = with_scaled_result(seed, &g.source) else {
            panic!("seed {seed}: no entry point found\n{}", g.source);
        };
        let mut input = g.input.clone();
        input["y0"] = serde_json::json!(1.5);
        let (prog, func) = unfad_test_support::load(&src);
        let (args, _) = args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
        let Ok((value, grads)) = gradient_with_derivatives(&prog.arena, &func, &args) else {
            continue;
        };
        // Every parameter but `y0`, which the scale `* y0` then does not depend on.
        let wrt: Vec<usize> = (0..func.params.len() - 1).collect();
        let names: Vec<String> = func.param_names(&prog.arena);
        let wrt_names: Vec<&str> = wrt.iter().map(|&i| names[i].as_str()).collect();
        let grad = Engine::new()
            .compile_grad_wrt(&src, None, &wrt_names)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{src}"));
        let out = native_output(&grad, &args).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{src}"));
        let ok = agrees(&out, value, &grads, &wrt);
        assert!(
            ok,
            "seed {seed}: native {} {:?} vs tagged duals {value} {grads:?}\n{src}",
            out.value,
            wrt.iter().map(|&i| out.gradient(i)).collect::<Vec<_>>(),
        );
        checked += 1;
        // The factors were taken out: the route's term is not the weakened macro's.
        let mut p = Pipeline::load(&src, None).unwrap();
        let weak = p.reverse_weakened(&wrt).unwrap();
        let fact = p.reverse_factored(&wrt).unwrap();
        let a = &p.program.arena;
        factored +=
            usize::from(unfad_syntax::print_func(a, &weak) != unfad_syntax::print_func(a, &fact));
    }
    assert!(checked >= 250, "only {checked} programs checked");
    // All but a few: a negated constant result (`-(0.686)`) is a constant to the parser,
    // with no factor left (6 of the first 3000 seeds).
    assert!(
        factored * 100 >= checked * 98,
        "factors found in {factored} of {checked} programs"
    );
}

/// A batch loss as a user writes it, summed or averaged over the batch.
fn batch_loss(mean: bool) -> String {
    let total = if mean {
        "sum(err) / real(len(X))"
    } else {
        "sum(err)"
    };
    format!(
        "def loss(X: [n][m]real, y: [n]real, W1: [k][m]real, b1: [k]real, w2: [k]real): real =\n  \
         let err = map2 (x, t.\n    \
           let h = map2 (row, b. tanh(dot(row, x) + b)) W1 b1 in\n    \
           let o = dot(w2, h) in\n    \
           (o - t) * (o - t)) X y in\n  \
         {total}"
    )
}

/// A penalized logistic regression as a user writes it, its loss summed or averaged.
fn penalized(mean: bool) -> String {
    let total = if mean {
        "sum(l) / real(len(X))"
    } else {
        "sum(l)"
    };
    format!(
        "def loss(X: [n][m]real, y: [n]real, w: [m]real, b: real, lam: real): real =\n  \
         let l = map2 (x, t. let z = dot(w, x) + b in log(1 + exp(-t * z))) X y in\n  \
         {total} + lam * sum(map (v. v * v) w)"
    )
}

#[test]
fn a_mean_loss_takes_the_workspace_of_its_sum() {
    // Seeded with `1 / n`, the mean's gradient stored each example's contributions to
    // `W1`'s (n k m reals) before they were added; with the factor out, it is the sum's
    // gradient scaled once at the end, where the sums are made.
    let engine = Engine::new();
    let sizes = [(2000, 32, 16), (100, 8, 4)];
    for (n, m, k) in sizes {
        let size_of = |src: &str| {
            let g = engine.compile_grad(src).unwrap();
            // The size variables in order of appearance: n, m, k.
            g.workspace_len(&[n, m, k])
        };
        let (mean, sum) = (size_of(&batch_loss(true)), size_of(&batch_loss(false)));
        assert_eq!(mean, sum, "n = {n}, m = {m}, k = {k}");
        assert!(mean < (k * m) as usize, "n = {n}: {mean} reals");
        // Beside a penalty, the mean's term is differentiated apart (the terms share
        // nothing), its factor out, and the penalty's gradient added at the end.
        let sizes = [n, m];
        let size_of = |src: &str| engine.compile_grad(src).unwrap().workspace_len(&sizes);
        let (mean, sum) = (size_of(&penalized(true)), size_of(&penalized(false)));
        assert_eq!(mean, sum, "penalized, n = {n}, m = {m}");
        // One real per point: the dot products `dot(w, x)` of every point, stored for the
        // routine that computes them four rows at a time (`unfad_opt::fission`).
        assert!(mean <= (n + m) as usize, "penalized, n = {n}: {mean} reals");
    }
}

#[test]
fn a_negated_mean_log_likelihood_beside_a_prior() {
    // A diagonal GMM's negative mean log-likelihood plus a term of the weights: split in
    // two, the first's negation and mean taken out; its sums of the per-point loop's
    // columns are folded in that loop and negated after it.
    let src = "def nll(X: [n][d]real, mu: [k][d]real, q: [k][d]real, alpha: [k]real): real =
      let ll = map (x.
        let t = map2 (a, mq. a + sum(snd mq) - 0.5 * sum(map2 (xi, s. s * s) x
          (map2 (u, v. u * v) (map (v. exp(v)) (snd mq)) (fst mq)))) alpha (map2 (m, qk. (m, qk)) mu q) in
        let mx = reduce max (-1e300) t in
        mx + log(sum(map (v. exp(v - mx)) t))) X in
      -sum(ll) / real(len(X)) + log(sum(map (v. exp(v)) alpha))";
    let input = serde_json::json!({
        "X": [[0.3, -0.5, 0.8], [-0.2, 0.1, 0.4], [0.9, -0.7, 0.0], [0.5, 0.5, -0.5], [-0.1, 0.2, 0.3]],
        "mu": [[0.1, -0.2, 0.3], [-0.4, 0.5, 0.0]],
        "q": [[0.05, -0.1, 0.2], [0.0, 0.15, -0.05]],
        "alpha": [0.3, -0.6]
    });
    let (prog, func) = unfad_test_support::load(src);
    let (args, _) = unfad_interp::args_from_json::<f64>(&prog.arena, &func, &input).unwrap();
    let (value, grads) =
        unfad_interp::gradient_with_derivatives(&prog.arena, &func, &args).unwrap();
    let grad = Engine::new().compile_grad(src).unwrap();
    let out = native_output(&grad, &args).unwrap();
    assert!(
        agrees(&out, value, &grads, grad.wrt()),
        "{:?}",
        grad.wrt()
            .iter()
            .map(|&i| out.gradient(i))
            .collect::<Vec<_>>()
    );
}
