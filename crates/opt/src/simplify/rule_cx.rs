//! The narrow view of a pass that the rules get ([`RuleCx`]): the arena, hash-consed node
//! construction, types, fresh names, the lengths of terms, the facts the walk learnt
//! about variables, and simplification of the sub-terms a rule builds. The rest of the
//! pass (the substitution, the CSE table, the rewrite count, the bindings it emits) is
//! out of the rules' reach: the one field is private to this module.

use unfad_syntax::{Arena, ExprId, Node, Type, Var};

use super::Simplifier;
use crate::len::Len;

/// What a rule may see and do of the pass it runs in.
pub struct RuleCx<'p, 'a> {
    pass: &'p mut Simplifier<'a>,
}

impl<'a> Simplifier<'a> {
    /// The view of this pass that rules get (and the passes that build terms through
    /// its hash-consing, such as [`crate::share`]).
    pub(crate) fn rule_cx(&mut self) -> RuleCx<'_, 'a> {
        RuleCx { pass: self }
    }
}

impl RuleCx<'_, '_> {
    /// The arena the terms live in.
    pub fn arena(&self) -> &Arena {
        &*self.pass.arena
    }

    /// The arena, to add lists, variables and raw terms to (nodes a rule returns should
    /// be built with [`RuleCx::mk`], or be raw terms given to [`RuleCx::simplify`]).
    pub fn arena_mut(&mut self) -> &mut Arena {
        self.pass.arena
    }

    // ---- building nodes ----------------------------------------------------------------

    /// The node, hash-consed: structurally equal nodes built in a pass are one id.
    pub fn mk(&mut self, node: Node) -> ExprId {
        self.pass.mk(node)
    }

    /// The constant `c`.
    pub fn constant(&mut self, c: f64) -> ExprId {
        self.pass.constant(c)
    }

    /// The variable `v` as a term.
    pub fn var(&mut self, v: Var) -> ExprId {
        self.pass.var(v)
    }

    /// The tuple of `items` (the item itself when there is one).
    pub fn tuple(&mut self, items: &[ExprId]) -> ExprId {
        self.pass.tuple(items)
    }

    /// The type of a (simplified) term.
    pub fn ty(&mut self, e: ExprId) -> Option<Type> {
        self.pass.ty(e)
    }

    /// A new variable with a name hint and a type.
    pub fn fresh(&mut self, name: &str, ty: Option<Type>) -> Var {
        self.pass.fresh(name, ty)
    }

    /// The stand-in for parameter `i` of the functions at depth `depth` in expansions
    /// (see `crate::expand`).
    pub fn stand_in(&mut self, depth: u32, i: usize) -> Var {
        self.pass.stand_in(depth, i)
    }

    /// Terms that cost nothing to duplicate (the pass substitutes them rather than bind
    /// them).
    pub fn is_trivial(&self, e: ExprId) -> bool {
        self.pass.is_trivial(e)
    }

    // ---- lengths and facts ---------------------------------------------------------------

    /// The exact run-time length of an array term, if known.
    pub fn len_of(&self, e: ExprId) -> Option<Len> {
        self.pass.len_of(e)
    }

    /// True if `a` is provably never longer than `b` at run time.
    pub fn not_longer(&self, a: ExprId, b: ExprId) -> bool {
        self.pass.not_longer(a, b)
    }

    /// A parameter that is an array of reals exactly as long as `e`, if any.
    pub fn param_of_len(&self, e: ExprId) -> Option<Var> {
        self.pass.param_of_len(e)
    }

    /// A parameter (an array of any type) exactly as long as `e`, if any.
    pub fn array_param_of_len(&self, e: ExprId) -> Option<Var> {
        self.pass.array_param_of_len(e)
    }

    /// The term a variable bound by `let` in this pass's output stands for.
    pub fn definition(&self, v: Var) -> Option<ExprId> {
        self.pass.definition(v)
    }

    /// The constant component `i` of the tuple variable `v`, if known (an element of an
    /// array of tuples whose components `i` are all that constant).
    pub fn constant_part(&self, v: Var, i: usize) -> Option<ExprId> {
        self.pass.constant_part(v, i)
    }

    // ---- simplifying what a rule builds ------------------------------------------------

    /// Simplify a raw term the rule built (from simplified parts, with new `let`s or
    /// applications to reduce) in a scope of its own: bindings made inside are not
    /// available after. Its rewrites count as the pass's.
    pub fn simplify(&mut self, e: ExprId) -> ExprId {
        self.pass.scoped(e)
    }

    /// Simplify the simplified body `e` of a binder with its parameters replaced
    /// (`subs`), to specialise it or to try whether the rule applies: the rewrites inside
    /// are not counted, so a trial that does not apply leaves the pass at a fixed point.
    pub fn simplify_with(&mut self, e: ExprId, subs: &[(Var, ExprId)]) -> ExprId {
        self.pass.simplify_with(e, subs)
    }
}
