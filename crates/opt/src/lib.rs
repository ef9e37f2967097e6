//! Partial evaluation and optimization of Target terms, the cost model, and the check of
//! the cheap-gradient bound.
//!
//! [`optimize`] runs [`simplify::Simplifier`] passes to a fixed point (at most
//! [`MAX_PASSES`]): continuations are inlined and beta-reduced, and the rewrites of the
//! paper's Figure "Optimizations for target language" (in [`rules`]) fire on the result.
//! A reduced loop joins an earlier loop over the same arrays ([`siblings`]); bindings used once are then inlined where that moves no work ([`inline`]), non-linear
//! terms that loops of several statements compute are computed once ([`share`]), work that
//! does not change from one iteration of a loop to the next moves before it ([`hoist`]), Lemma
//! noHO is enforced ([`check_first_order`]) and the result is type-checked.
//!
//! ```
//! use unfad_syntax::{print_expr, Program};
//! let mut prog = Program::load(
//!     "def f(A: [n]real) = let Y = fun (x: real) -> x * 1 + 0 in map2 * A (ones_like(A))",
//! ).unwrap();
//! let func = prog.inline(prog.entry(None).unwrap()).unwrap();
//! let opt = unfad_opt::optimize(&mut prog.arena, &func).unwrap();
//! assert_eq!(print_expr(&prog.arena, opt.body), "A");
//! ```

#![forbid(unsafe_code)]

pub mod columns;
pub mod consumers;
pub mod cost;
pub mod dead;
mod expand;
use unfad_syntax::fast_hash;
pub mod first_order;
pub mod fission;
pub mod folds;
pub mod hoist;
pub mod inline;
pub mod len;
pub mod one_pass;
pub mod order;
pub mod reuse;
pub mod row_sums;
pub mod rules;
pub mod share;
pub mod siblings;
pub mod simplify;
pub mod tapes;

use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{Arena, Func, Node, Var};

pub use cost::{cost_of, nao, Bound, Cost};
pub use first_order::check_first_order;
pub use simplify::Simplifier;

/// Passes after which the optimizer stops even if rules still fire.
pub const MAX_PASSES: usize = 24;

/// Why optimization failed; each is a bug in an earlier stage or here, reported, not hidden.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptError {
    /// Lemma noHO does not hold for the result.
    #[error("the optimized gradient is not first-order: {why}, in\n{term}")]
    NotFirstOrder { why: String, term: String },
    /// A rewrite produced an ill-typed term.
    #[error("the optimizer produced an ill-typed term: {0}")]
    IllTyped(String),
    /// A rewrite moved a variable out of its binder's scope, or lost the binder.
    #[error("the optimized term reads `{0}`, which is neither a parameter nor bound in it")]
    Unbound(String),
}

/// Optimize `func` to a fixed point and check that the result is first-order.
pub fn optimize(arena: &mut Arena, func: &Func) -> Result<Func, OptError> {
    let f = optimize_up_to_hoisting(arena, func);
    // Loop-invariant work last, on the settled term, where the loops are final.
    let hoisted = hoist::hoist_invariants_and_reciprocals(arena, &f);
    // Arrays hoisting made twice (once per loop reading them, over different zips) are
    // made once.
    let hoisted = if hoisted.body == f.body {
        hoisted
    } else {
        reuse::reuse_precomputed(arena, &hoisted)
    };
    // One pass tidies what hoisting leaves (bindings of names, projections of the
    // precomputed tuples); the loops themselves are final.
    let f = if hoisted.body == f.body {
        f
    } else {
        simplify_while(arena, &hoisted, |_, _, _| false).0
    };
    // Last: the simplifier would take the joint folds and sums of rows apart again
    // (`folds`, `row_sums`), and fuse the maps of loops and of kernels again (`fission`).
    let f = folds::join_sibling_folds(arena, &f);
    let f = row_sums::join_sibling_row_sums(arena, &f);
    let joined = one_pass::join_row_accumulations(arena, &f);
    // The loops `one_pass` joined bring the arrays hoisted for each into one chain, where
    // those repeating one another are made once.
    let f = if joined.body == f.body {
        f
    } else {
        // Only the maps of projections this reuse makes are left to read in place (those
        // of the reuse after hoisting fused into their readers).
        let reused = reuse::reuse_precomputed(arena, &joined);
        if reused.body == joined.body {
            joined
        } else {
            reuse::read_columns_in_place(arena, &reused)
        }
    };
    let f = fission::split_kernel_tails(arena, &f);
    // The loops' folds right after them, for the code generator.
    let f = order::independent_first(arena, &f);
    check_first_order(arena, &f)?;
    check_closed(arena, &f)?;
    check_types(arena, &f)?;
    Ok(f)
}

/// The passes of [`optimize`] before [`hoist`]: [`optimize_before_hoisting`], then the
/// loops that read a stored loop element by element joined to it. The term hoisting sees.
pub fn optimize_up_to_hoisting(arena: &mut Arena, func: &Func) -> Func {
    let f = optimize_before_hoisting(arena, func);
    // Loops that read a stored loop element by element join it, on the settled term.
    let joined = consumers::join_consumers(arena, &f);
    if joined.body == f.body {
        f
    } else {
        // What a consumer computed of an element once, the joint loop's body now reads
        // once too: such `let`s fuse into their reader.
        let settled = simplify_to_fixed_point(arena, &joined);
        let inlined = inline::inline_single_use(arena, &settled);
        simplify_to_fixed_point(arena, &inlined)
    }
}

/// The passes of [`optimize`] before [`hoist`] and the joint loops of producers and
/// consumers ([`consumers`]), without its checks (the tests of hoisting start from it).
pub fn optimize_before_hoisting(arena: &mut Arena, func: &Func) -> Func {
    // The passes build about twice the arena they start from.
    arena.reserve(2 * arena.node_count());
    // Reverse mode's continuations first, by a pass that does nothing else (most of the
    // term goes, at a fraction of the cost per node of a full pass).
    let body = Simplifier::new(arena, func).administrative().run(func.body);
    let f = Func {
        body,
        ..func.clone()
    };
    // Until a pass rewrites under a tenth of the nodes: what is left then, the passes after
    // inlining do anyway, and the pass that would find nothing more costs as much as one
    // that rewrites (GMM's gradient: 586, 93, then 0 rewrites). Of 3000 random gradients,
    // one costs more in the model for it, by 0.014 in ratio. Nor after a pass that left
    // no work (`Simplifier::may_rewrite_more`; a long straight-line program's first pass).
    let (f, _) = simplify_while(arena, &f, |rewrites, nodes, more| {
        more && 10 * rewrites > nodes
    });
    // The value's loops join the gradient's loops over the same arrays, before sharing
    // looks for what loops compute twice.
    let f = siblings::fuse_sibling_loops(arena, &f);
    let f = inline::inline_single_use(arena, &f);
    // The folds the joined loops compute beside their scans read the scans' last states.
    let f = tapes::fold_from_scan(arena, &f);
    // Nearly to a fixed point (until a pass rewrites under 2% of the nodes): the passes
    // after sharing finish the job, and a pass that changes nothing is as dear as one
    // that does. (At 1%, GMM's gradient took one more pass; no random program's cost
    // moved either way.)
    let (f, settled) = simplify_while(arena, &f, |rewrites, nodes, _| 50 * rewrites > nodes);
    let shared = share::share_elementwise(arena, &f);
    let f = if settled && shared.body == f.body {
        f
    } else {
        simplify_to_fixed_point(arena, &shared)
    };
    // Columns of stored maps nothing reads go (what they computed, then, too); those that
    // different loops read, one each, become maps of their own that fuse into the loops.
    let narrowed = columns::drop_unread_columns(arena, &f);
    let narrowed = columns::drop_unread_fold_state(arena, &narrowed);
    let split = columns::split_read_columns(arena, &narrowed);
    if narrowed.body == f.body && split.body == f.body {
        return f;
    }
    if split.body == narrowed.body {
        return simplify_to_fixed_point(arena, &narrowed);
    }
    // The maps split off are used once each: into their loops, where the maps of their
    // elements, bound once the loops are zipped, go into their readers in turn. A column
    // that was a tuple read by several loops is a map of its own then, split in turn.
    let mut f = split;
    for round in 0..3 {
        for _ in 0..2 {
            let inlined = inline::inline_single_use(arena, &f);
            f = simplify_to_fixed_point(arena, &inlined);
        }
        if round == 2 {
            break;
        }
        let again = columns::split_read_columns(arena, &f);
        if again.body == f.body {
            break;
        }
        f = again;
    }
    f
}

/// Optimize `func` to a fixed point without requiring a first-order result (for terms
/// that legitimately keep lambdas, and for showing intermediate results).
pub fn simplify_to_fixed_point(arena: &mut Arena, func: &Func) -> Func {
    simplify_while(arena, func, |rewrites, _, _| rewrites > 0).0
}

/// Simplifier passes over `func` while `again(rewrites, nodes, more)` holds for the last
/// one (`nodes`: the size of its input; `more`: whether it may have left rewrites for
/// another, see [`Simplifier::may_rewrite_more`]), at most [`MAX_PASSES`]; and whether the
/// last one changed nothing (a fixed point).
fn simplify_while(
    arena: &mut Arena,
    func: &Func,
    again: impl Fn(usize, usize, bool) -> bool,
) -> (Func, bool) {
    let mut f = func.clone();
    let mut settled = false;
    for _ in 0..MAX_PASSES {
        let mut s = Simplifier::new(arena, &f);
        let nodes = s.input_nodes();
        let body = s.run(f.body);
        let rewrites = s.rewrites;
        let more = s.may_rewrite_more();
        f = Func { body, ..f };
        settled = rewrites == 0;
        if !again(rewrites, nodes, more) {
            break;
        }
    }
    (f, settled)
}

/// Every variable the term of `func` reads is one of its parameters or bound in the term.
/// Type inference reads a variable's type from the variable itself, so it would not see a
/// variable a rewrite moved out of scope; this does. Binders are unique, so a variable is
/// bound in the term exactly when some node binds it: one walk over the term's nodes, each
/// visited once however often it is shared (a bit per node of the arena: it runs on every
/// compilation, over millions of nodes for long programs).
pub fn check_closed(arena: &Arena, func: &Func) -> Result<(), OptError> {
    let mut bound: fast_hash::FastSet<Var> = func.params.iter().copied().collect();
    let mut read = Vec::new();
    let mut seen = vec![false; arena.node_count()];
    let mut stack = vec![func.body];
    while let Some(e) = stack.pop() {
        if std::mem::replace(&mut seen[e.index()], true) {
            continue;
        }
        match arena[e] {
            Node::Var(v) => read.push(v),
            node => bound.extend(arena.binders(node)),
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    match read.into_iter().find(|v| !bound.contains(v)) {
        Some(v) => Err(OptError::Unbound(arena.var_name(v).to_string())),
        None => Ok(()),
    }
}

/// Type-check an optimized function (its result type must not change).
pub fn check_types(arena: &mut Arena, func: &Func) -> Result<(), OptError> {
    match infer(arena, &NoSource, func.body) {
        Ok(t) if t == func.ret => Ok(()),
        Ok(t) => Err(OptError::IllTyped(format!(
            "result type `{t}` instead of `{}`",
            func.ret
        ))),
        Err(e) => Err(OptError::IllTyped(e.message)),
    }
}
