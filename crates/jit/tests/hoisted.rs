//! Loop-invariant work hoisted out of a mixture's map over points (`unfad_opt::hoist`),
//! then made once for every loop that reads it (`unfad_opt::reuse`): the gradient stores
//! `exp(q)` once, where the value's loop over the components and the adjoint's, which zip
//! other arrays, each stored their own copy. Gradients are checked bit for bit against
//! the interpreter, with guard cells around every buffer; the workspace shows the copy
//! is gone.

mod common;

use common::{check_gradient, gradient, mat_of, vec_of};
use serde_json::{json, Value as Json};
use unfad_jit::compile;

/// A diagonal Gaussian mixture's log-likelihood, written plainly: `exp(q)` inside the map
/// over points, the components' log-sum-exp with its maximum first (so the value's loop
/// and the adjoint's stay apart).
const MIXTURE: &str = "def logsumexp(v: [k]real): real =
  let mx = reduce max (-1e300) v in
  mx + log(sum(map (t. exp(t - mx)) v))

def component(x: [m]real, a: real, mu: [m]real, q: [m]real): real =
  let z = map2 (xd, md. xd - md) x mu in
  let s = map2 (qd, zd. exp(qd) * zd) q z in
  a + sum(q) - 0.5 * sum(map (t. t * t) s)

def gmm(alpha: [k]real, means: [k][m]real, q: [k][m]real, X: [n][m]real): real =
  let comps = map2 (mu, qk. (mu, qk)) means q in
  sum(map (x. logsumexp(map2 (a, c. component(x, a, fst c, snd c)) alpha comps)) X)";

#[test]
fn a_mixtures_exponentials_are_stored_once() {
    let inputs: Vec<Json> = [(0, 2, 3), (1, 1, 1), (2, 3, 2), (3, 2, 5), (4, 4, 3)]
        .iter()
        .map(|&(k, m, n)| {
            json!({
                "alpha": vec_of(k, 0.3),
                "means": mat_of(k, m, -0.2),
                "q": mat_of(k, m, 0.05),
                "X": mat_of(n, m, 0.7),
            })
        })
        .collect();
    assert!(check_gradient(MIXTURE, &inputs));
    let (prog, func) = gradient(MIXTURE).unwrap();
    let compiled = compile(&prog.arena, &func).unwrap();
    // Sizes in the order the parameters name them: k, m, n.
    let (k, m) = (25, 10);
    let ws = compiled.workspace_len(&[k, m, 1000]);
    // The exponentials (k m) and the components' constants (k), then per point its
    // log-likelihoods, weights and adjoints (a few k): not a second k m.
    assert!(
        ws < (k * m + 5 * k) as usize,
        "workspace {ws} holds a second copy of the exponentials"
    );
    assert!(ws >= (k * m) as usize, "workspace {ws}");
}
