//! One pass of partial evaluation and rewriting (the paper's section "Partial evaluation
//! and optimization").
//!
//! The pass walks the term once, carrying a substitution. Binding-sensitive rewrites
//! happen in the walk itself:
//! - **inlining**: a lambda bound by `let` and used once (every continuation is, by the
//!   paper's linearity lemma) is *suspended*, not simplified where it is bound, and
//!   simplified at its single use, where it meets its arguments;
//! - **beta-reduction**: `(fun (x1..xn) -> e)(e1..en)` becomes `let x1 = e1 in ... e`;
//! - **forward substitution** and constant propagation: a binding of a variable, a
//!   constant, or a tuple of those is substituted, not kept;
//! - **tuple splitting**: `let x = (a, b) in e` binds `a` and `b` separately and `x`
//!   becomes the tuple of their variables, so projections of `x` fold;
//! - **let normalisation**: bindings inside a bound expression, or inside a strict operand,
//!   float out, giving the flat SSA-like listings of the paper;
//! - **dead-let elimination**: terms are pure, so an unused binding is dropped;
//! - **common-subexpression elimination**: nodes are hash-consed, and an expression equal
//!   to one bound by an enclosing `let` is replaced by its variable (array operations up to
//!   the names of their functions' binders, which reverse mode makes fresh for every copy).
//!
//! Local rewrites (algebraic, array, tuple, conditional) are in [`crate::rules`] and run
//! on every node rebuilt here, through [`RuleCx`].
//!
//! The pass is split by concept: the walk and its driver here, hash-consing and the CSE
//! table in `hashcons`, the substitution and the `let` chains it emits in `bindings`,
//! use counts in `occurrences`, the exact shapes of terms in `shapes`, and the narrow
//! view of all this that the rules get in [`rule_cx`].

mod bindings;
mod hashcons;
mod occurrences;
pub mod rule_cx;
mod shapes;

pub use rule_cx::RuleCx;

use bindings::{Binding, ByVar, Sub};
use occurrences::{occurrences_and_binders, Occurrences};
use shapes::Parts;

use crate::fast_hash::FastMap as HashMap;
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{with_stack, Arena, ExprId, Func, Kids, Node, Type, Var};

use crate::len::{exact, Len, Shape};

/// A few variables (a lambda's parameters, a tuple's binders) without a heap allocation.
type Vars = smallvec::SmallVec<[Var; 4]>;

/// How many times the rules rewrite one node at most in a pass (each rewrite of the node
/// tries every rule again on the result).
const REWRITES_PER_NODE: usize = 16;

/// Which children of a node are evaluated whenever it is (so `let`s may float out of them).
#[derive(Clone, Copy)]
enum Strict<'a> {
    All,
    Some(&'a [usize]),
}

/// State of one simplification pass over one term.
pub struct Simplifier<'a> {
    arena: &'a mut Arena,
    subst: ByVar<Sub>,
    /// Occurrences of the input's variables and which of them it binds (only their
    /// occurrence counts are known).
    occ: Occurrences,
    hashcons: hashbrown::HashTable<ExprId>,
    /// The hash-consed `Var` node of each variable, and `Const` node of each constant's
    /// bits (apart from `hashcons`, see [`Simplifier::mk`]).
    var_nodes: Vec<Option<ExprId>>,
    const_nodes: HashMap<u64, ExprId>,
    /// CSE: expression (hash-consed) -> variable bound to it, for bindings in scope.
    avail: HashMap<ExprId, Var>,
    avail_log: Vec<ExprId>,
    /// The parameters of the operator sections in CSE keys.
    canon_vars: Vec<Var>,
    /// Stand-ins for the parameters of functions in expansions, by depth and position.
    stand_ins: HashMap<(u32, usize), Var>,
    /// The (simplified) terms that variables bound by `let` in the output stand for.
    defs: ByVar<ExprId>,
    /// Exact run-time shapes of variables (array lengths), where known.
    shapes: HashMap<Var, Shape>,
    /// Shapes of terms already asked for (they depend on `shapes`, which only grows).
    shape_memo: std::cell::RefCell<HashMap<ExprId, Shape>>,
    /// Tuple-valued variables (elements of arrays) with their constant components, and
    /// arrays of tuples with the constant components of every element.
    constant_parts: HashMap<Var, Parts>,
    constant_columns: HashMap<Var, Parts>,
    /// Parameters that are arrays of reals, with their lengths (shape witnesses for fills).
    real_array_params: Vec<(Len, Var)>,
    /// Parameters that are arrays of any type, with their lengths.
    array_params: Vec<(Len, Var)>,
    /// Binders already present in the output (a second one gets a fresh variable).
    emitted: ByVar<()>,
    /// How many rewrites this pass made (0 means a fixed point).
    pub rewrites: usize,
    /// An administrative pass (see [`Simplifier::administrative`]).
    light: bool,
    /// The source position of the node being rebuilt, which indexing and int division keep
    /// (a run-time error there says where; other nodes need none).
    site: unfad_syntax::Span,
    /// Empty chains of bindings, for reuse.
    chains: Vec<Vec<Binding>>,
    /// Whether this pass may have left work for another (see
    /// [`Simplifier::may_rewrite_more`]).
    left_work: bool,
}

impl<'a> Simplifier<'a> {
    /// A pass over `func`.
    pub fn new(arena: &'a mut Arena, func: &Func) -> Simplifier<'a> {
        let occ = occurrences_and_binders(arena, func.body);
        // Most passes build about as many nodes as their input has.
        let room = occ.nodes;
        let vars = arena.var_count();
        let mut s = Simplifier {
            arena,
            subst: ByVar::with_room(vars),
            occ,
            hashcons: hashbrown::HashTable::with_capacity(room),
            var_nodes: Vec::new(),
            const_nodes: HashMap::default(),
            avail: HashMap::default(),
            avail_log: Vec::new(),
            canon_vars: Vec::new(),
            stand_ins: HashMap::default(),
            defs: ByVar::with_room(vars),
            shapes: HashMap::default(),
            shape_memo: Default::default(),
            constant_parts: HashMap::default(),
            constant_columns: HashMap::default(),
            real_array_params: Vec::new(),
            array_params: Vec::new(),
            emitted: ByVar::with_room(vars),
            rewrites: 0,
            left_work: false,
            light: false,
            site: unfad_syntax::Span::NONE,
            chains: Vec::new(),
        };
        for &p in &func.params {
            s.emitted.insert(p, ());
            if let Some(t) = s.arena.var_type(p) {
                s.shapes.insert(p, Shape::of_type(t));
            }
            if let Some(Type::Array(n, elem)) = s.arena.var_type(p).cloned() {
                if *elem == Type::Real {
                    s.real_array_params.push((exact(&n), p));
                }
                s.array_params.push((exact(&n), p));
            }
        }
        s
    }

    /// Make this pass administrative: it reduces the continuations (inlining,
    /// beta-reduction, substitution, tuple splitting, projections of tuples, let
    /// floating, dead bindings) and nothing else: no hash-consing, shapes, CSE or other
    /// rules. Run first on reverse mode's term, it removes most of the term at a fraction
    /// of a full pass's cost per node, and the full passes that follow see what is left.
    pub fn administrative(mut self) -> Self {
        self.light = true;
        self
    }

    /// The number of nodes of the term the pass was made for (of its DAG).
    pub fn input_nodes(&self) -> usize {
        self.occ.nodes
    }

    /// Whether another pass over this one's result may rewrite something. A pass
    /// simplifies bottom-up, each node after its children and each binding after the
    /// bindings it reads, so what is left for another pass is (a) what a rule built below
    /// the node it rewrote (a new node under the result, not simplified itself), (b) a
    /// node still rewritable after [`REWRITES_PER_NODE`] rewrites, and (c) a function bound
    /// to a name used more than once, which a later pass inlines if this one removed the
    /// other uses. A pass with none of these leaves nothing but bindings no pass needs to
    /// visit again. (A chain of straight-line statements: the first full pass rewrites a
    /// fifth of its nodes with none of them, and the pass after it rewrote nothing.)
    pub fn may_rewrite_more(&self) -> bool {
        self.left_work
    }

    /// Simplify the body of the function the pass was made for.
    pub fn run(&mut self, body: ExprId) -> ExprId {
        self.simplify(body)
    }

    /// Occurrences of a binder of the input; unknown (assumed many) for variables made
    /// during the pass.
    fn uses(&self, x: Var) -> usize {
        self.occ.uses(x)
    }

    fn fired(&mut self) {
        self.rewrites += 1;
    }

    /// The type of a (simplified) term.
    fn ty(&mut self, e: ExprId) -> Option<Type> {
        infer(self.arena, &NoSource, e).ok()
    }

    /// A new variable with a name hint and a type.
    fn fresh(&mut self, name: &str, ty: Option<Type>) -> Var {
        let v = self.arena.fresh_var(name, ty);
        self.emitted.insert(v, ());
        v
    }

    /// Terms that cost nothing to duplicate: substituted rather than bound.
    fn is_trivial(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Var(_) | Node::Const(_) | Node::Bool(_) => true,
            Node::Tuple(l) => self.arena.exprs(l).iter().all(|&i| self.is_trivial(i)),
            // Small array literals of trivial items: the literal rules see through them.
            Node::Array(l) => {
                l.len() <= crate::rules::literals::SMALL_ADJOINT
                    && self.arena.exprs(l).iter().all(|&i| self.is_trivial(i))
            }
            Node::Proj(_, a) | Node::Len(a) => self.is_trivial(a),
            // Fills only need their operand's shape: free to duplicate, and kept visible
            // (structural zeros) for the rules.
            Node::ZerosLike(_) | Node::OnesLike(_) => true,
            _ => false,
        }
    }

    /// A map whose body only rearranges its parameters and terms from outside
    /// (`map (r. (1, z, r)) A`, a zip): computing it is moving data, which its consumers
    /// do as well reading the operands (the map fuses into them), so it is substituted
    /// rather than bound and stored.
    fn is_reshaping(&self, e: ExprId) -> bool {
        let (f, operands) = match self.arena[e] {
            Node::Map(f, a) => (f, vec![a]),
            Node::Map2(f, a, b) => (f, vec![a, b]),
            _ => return false,
        };
        operands.iter().all(|&o| self.is_trivial(o))
            && self
                .arena
                .lambda_parts(f)
                .is_some_and(|(_, body)| self.is_trivial(body))
    }

    /// Simplify `e` under the current substitution.
    pub fn simplify(&mut self, e: ExprId) -> ExprId {
        with_stack(|| {
            let node = self.arena[e];
            match node {
                Node::Let(..) | Node::LetTuple(..) => self.bindings(e),
                Node::Var(v) => match self.subst.get(&v).copied() {
                    Some(Sub::Done(r)) => r,
                    Some(Sub::Copied(r)) => self.arena.copy_fresh(r),
                    Some(Sub::Suspended(rhs)) => {
                        // The only use of a lambda: simplify it here.
                        self.subst.remove(&v);
                        self.fired();
                        self.simplify(rhs)
                    }
                    None => self.var(v),
                },
                Node::App(f, l) => self.app(f, l),
                Node::Lambda(..) => self.binder(e, &[]),
                Node::If(c, a, b) => {
                    let c = self.simplify(c);
                    match self.arena[c] {
                        Node::Bool(true) => {
                            self.fired();
                            self.simplify(a)
                        }
                        Node::Bool(false) => {
                            self.fired();
                            self.simplify(b)
                        }
                        _ => {
                            let (a, b) = (self.scoped(a), self.scoped(b));
                            self.hoisted(Node::If(c, a, b), &[0])
                        }
                    }
                }
                Node::And(a, b) | Node::Or(a, b) => {
                    // The right operand is evaluated only sometimes: keep its bindings inside.
                    let a = self.simplify(a);
                    let b = self.scoped(b);
                    let node = if matches!(node, Node::And(..)) {
                        Node::And(a, b)
                    } else {
                        Node::Or(a, b)
                    };
                    self.hoisted(node, &[0])
                }
                Node::Map(f, a) => {
                    let a = self.simplify(a);
                    let el = self.shape_of(a).elem();
                    let parts = [self.columns_of(a)];
                    let f = self.binder_with(f, &[el], &parts);
                    self.hoisted(Node::Map(f, a), &[1])
                }
                Node::Map2(f, a, b) => {
                    let a = self.simplify(a);
                    let b = self.simplify(b);
                    let (ea, eb) = (self.shape_of(a).elem(), self.shape_of(b).elem());
                    let parts = [self.columns_of(a), self.columns_of(b)];
                    let f = self.binder_with(f, &[ea, eb], &parts);
                    self.hoisted(Node::Map2(f, a, b), &[1, 2])
                }
                Node::Reduce(f, z, a)
                | Node::Foldl(f, z, a)
                | Node::Scanl(f, z, a)
                | Node::Scanr(f, z, a) => {
                    let z = self.simplify(z);
                    let a = self.simplify(a);
                    let elem = self.shape_of(a).elem();
                    let right = matches!(node, Node::Scanr(..));
                    let shapes = self.fold_param_shapes(f, z, elem, right);
                    let f = self.binder(f, &shapes);
                    let node = match node {
                        Node::Reduce(..) => Node::Reduce(f, z, a),
                        Node::Foldl(..) => Node::Foldl(f, z, a),
                        Node::Scanl(..) => Node::Scanl(f, z, a),
                        _ => Node::Scanr(f, z, a),
                    };
                    self.hoisted(node, &[1, 2])
                }
                _ => {
                    let site = self.arena.span(e);
                    let kids = self.arena.children(e);
                    let new: Kids = kids.iter().map(|&k| self.simplify(k)).collect();
                    self.site = site;
                    let node = if new == kids {
                        node
                    } else {
                        let mut it = new.iter().copied();
                        self.arena
                            .map_children(node, |_, _| it.next().expect("one per child"))
                    };
                    self.hoisted_kids(node, new, Strict::All)
                }
            }
        })
    }

    /// Build `node` (children simplified), floating `let`s out of its strict operands at
    /// positions `strict` (child indices), then apply the local rules.
    fn hoisted(&mut self, node: Node, strict: &[usize]) -> ExprId {
        let kids = self.arena.node_children(node);
        self.hoisted_kids(node, kids, Strict::Some(strict))
    }

    /// [`Simplifier::hoisted`] given the children of `node`.
    fn hoisted_kids(&mut self, node: Node, mut kids: Kids, strict: Strict) -> ExprId {
        let mut chain = self.chain();
        let is_strict = |i: usize| match strict {
            Strict::All => true,
            Strict::Some(list) => list.contains(&i),
        };
        for (i, k) in kids.iter_mut().enumerate() {
            if !is_strict(i) {
                continue;
            }
            while let Node::Let(x, r, b) = self.arena[*k] {
                chain.push(Binding::One(x, r));
                *k = b;
            }
        }
        let node = if chain.is_empty() {
            node
        } else {
            self.fired();
            let mut it = kids.into_iter();
            self.arena
                .map_children(node, |_, _| it.next().expect("one per child"))
        };
        let e = self.mk(node);
        let e = self.rewrite(e);
        let e = match self.available(e) {
            Some(x) => {
                self.fired();
                self.var(x)
            }
            None => e,
        };
        self.wrap(chain, e)
    }

    /// Apply the local rules to `e` until none fires (bounded).
    fn rewrite(&mut self, mut e: ExprId) -> ExprId {
        if self.light {
            // Only what exposes continuations: `snd (a, k)` is `k`.
            return match crate::rules::tuples::project_tuple(&mut self.rule_cx(), e) {
                Some(r) => {
                    self.fired();
                    r
                }
                None => e,
            };
        }
        for _ in 0..REWRITES_PER_NODE {
            // Nodes are numbered in the order made: a child numbered from `made` on is
            // new, made by the rule (and so is everything under it that is).
            let made = self.arena.node_count();
            match crate::rules::apply(&mut self.rule_cx(), e) {
                Some(r) if r != e => {
                    self.fired();
                    let mut new_child = false;
                    self.arena
                        .for_each_child(r, |c| new_child |= c.index() >= made);
                    self.left_work |= new_child;
                    e = r;
                }
                _ => return e,
            }
        }
        self.left_work = true;
        e
    }

    /// A function bound to a name used more than once: kept (see
    /// [`Simplifier::may_rewrite_more`]).
    pub(super) fn kept_function(&mut self) {
        self.left_work = true;
    }

    /// A function argument or a lambda not inlined: fresh binders, body in its own scope.
    fn binder(&mut self, f: ExprId, param_shapes: &[Shape]) -> ExprId {
        self.binder_with(f, param_shapes, &[])
    }

    /// [`Simplifier::binder`] knowing constant components of tuple-valued parameters.
    fn binder_with(
        &mut self,
        f: ExprId,
        param_shapes: &[Shape],
        parts: &[Option<Parts>],
    ) -> ExprId {
        let Node::Lambda(ps, body) = self.arena[f] else {
            return self.simplify(f);
        };
        let params: Vars = self.arena.vars_of(ps).into();
        let mut new_params = Vars::new();
        for (i, &p) in params.iter().enumerate() {
            let q = self.bind_var(p);
            let shape = param_shapes.get(i).cloned().unwrap_or(Shape::Unknown);
            self.set_shape(p, shape.clone());
            self.set_shape(q, shape);
            if let Some(Some(known)) = parts.get(i) {
                self.constant_parts.insert(q, known.clone());
            }
            new_params.push(q);
        }
        let body = self.scoped(body);
        let l = self.arena.var_list(&new_params);
        self.mk(Node::Lambda(l, body))
    }

    /// Application: beta-reduce when the function is a lambda.
    fn app(&mut self, f: ExprId, l: unfad_syntax::ExprList) -> ExprId {
        let lam = match self.arena[f] {
            Node::Var(v) => match self.subst.get(&v).copied() {
                Some(Sub::Suspended(rhs)) => {
                    self.subst.remove(&v);
                    rhs
                }
                _ => self.simplify(f),
            },
            Node::Lambda(..) => f,
            _ => self.simplify(f),
        };
        let args: Kids = self.arena.exprs(l).into();
        let m = self.mark();
        let mut out = self.chain();
        // Let normalisation in function position: `(let x = e1 in f)(args)` is
        // `let x = e1 in f(args)`.
        let lam = self.peel(lam, &mut out);
        let Node::Lambda(ps, body) = self.arena[lam] else {
            // Not a lambda: rebuild the application (the first-order check reports it).
            let args: Kids = args.iter().map(|&a| self.simplify(a)).collect();
            let list = self.arena.expr_list(&args);
            let app = self.mk(Node::App(lam, list));
            self.pop_to(m);
            return self.wrap(out, app);
        };
        // `(fun (x1..xn) -> e)(e1..en)` is `let x1 = e1 in ... let xn = en in e`.
        self.fired();
        let params: Vars = self.arena.vars_of(ps).into();
        for (&p, &a) in params.iter().zip(&args) {
            let r = self.simplify(a);
            self.bind_value(p, r, &mut out);
        }
        let result = self.simplify(body);
        self.pop_to(m);
        self.wrap(out, result)
    }
}
