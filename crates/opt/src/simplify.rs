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
//! on every node rebuilt here.

use crate::fast_hash::FastMap as HashMap;

use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{with_stack, Arena, ExprId, Func, Kids, Node, Type, Var};

use crate::len::{exact, Len, Shape};

/// What a variable stands for during the pass.
#[derive(Copy, Clone, Debug)]
enum Sub {
    /// An already simplified term (a variable, a constant, a tuple of those).
    Done(ExprId),
    /// An already simplified term with functions inside (a map that only rearranges its
    /// elements): each use gets a copy with fresh binders, so that binders stay unique.
    Copied(ExprId),
    /// A lambda not yet simplified, to be inlined at its only use.
    Suspended(ExprId),
}

/// A structural key for hash-consing (lists by content, constants by bits).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    tag: u8,
    op: u32,
    bits: u64,
    kids: KeyKids,
}

/// The children of a key: inline when there are few (most nodes), so that building a
/// key does not allocate.
#[derive(Clone, PartialEq, Eq, Hash)]
enum KeyKids {
    Few(u8, [u32; 3]),
    Many(Box<[u32]>),
}

impl KeyKids {
    /// `first` followed by `rest`, allocating only when there are more than three.
    fn chain(first: &[u32], rest: impl ExactSizeIterator<Item = u32>) -> KeyKids {
        let n = first.len() + rest.len();
        if n <= 3 {
            let mut a = [0; 3];
            a[..first.len()].copy_from_slice(first);
            for (slot, x) in a[first.len()..].iter_mut().zip(rest) {
                *slot = x;
            }
            KeyKids::Few(n as u8, a)
        } else {
            KeyKids::Many(first.iter().copied().chain(rest).collect())
        }
    }

    fn few(items: &[u32]) -> KeyKids {
        let mut a = [0; 3];
        a[..items.len()].copy_from_slice(items);
        KeyKids::Few(items.len() as u8, a)
    }
}

/// The components of a tuple known to be constants (`None` for the others).
type Parts = Vec<Option<ExprId>>;

/// Which children of a node are evaluated whenever it is (so `let`s may float out of them).
#[derive(Clone, Copy)]
enum Strict<'a> {
    All,
    Some(&'a [usize]),
}

/// A table by variable: the variables of an arena are numbered densely, so a vector
/// indexed by number is cheaper than hashing for the tables every node visits.
struct ByVar<T> {
    slots: Vec<Option<T>>,
}

impl<T: Clone> ByVar<T> {
    /// Room for the variables of an arena with `n` of them (more grow the table).
    fn with_room(n: usize) -> Self {
        ByVar {
            slots: Vec::with_capacity(n + n / 2),
        }
    }

    fn get(&self, v: &Var) -> Option<&T> {
        self.slots.get(v.index()).and_then(Option::as_ref)
    }

    fn insert(&mut self, v: Var, x: T) -> Option<T> {
        if v.index() >= self.slots.len() {
            self.slots.resize(v.index() + 1, None);
        }
        self.slots[v.index()].replace(x)
    }

    fn remove(&mut self, v: &Var) -> Option<T> {
        self.slots.get_mut(v.index()).and_then(Option::take)
    }
}

/// A binding emitted by the pass.
enum Binding {
    One(Var, ExprId),
    Many(Vec<Var>, ExprId),
}

/// State of one simplification pass over one term.
pub struct Simplifier<'a> {
    pub(crate) arena: &'a mut Arena,
    subst: ByVar<Sub>,
    /// Occurrences of the input's variables and which of them it binds (only their
    /// occurrence counts are known).
    occ: Occurrences,
    hashcons: HashMap<Key, ExprId>,
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
    /// Empty chains of bindings, for reuse.
    chains: Vec<Vec<Binding>>,
    /// Dead bindings dropped so far (a chain that dropped one is swept for the bindings
    /// that only it used).
    dead_drops: usize,
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
            hashcons: HashMap::with_capacity_and_hasher(room, Default::default()),
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
            light: false,
            chains: Vec::new(),
            dead_drops: 0,
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

    /// Simplify the body of the function the pass was made for.
    pub fn run(&mut self, body: ExprId) -> ExprId {
        self.simplify(body)
    }

    /// Occurrences of a binder of the input; unknown (assumed many) for variables made
    /// during the pass.
    fn uses(&self, x: Var) -> usize {
        self.occ.uses(x)
    }

    pub(crate) fn fired(&mut self) {
        self.rewrites += 1;
    }

    // ---- building nodes ---------------------------------------------------------------

    fn key(&self, node: &Node) -> Key {
        use Node::*;
        let k = |tag: u8, op: u32, bits: u64, kids: KeyKids| Key {
            tag,
            op,
            bits,
            kids,
        };
        let id = |e: ExprId| e.index() as u32;
        let list = |l: unfad_syntax::ExprList, first: &[u32]| {
            KeyKids::chain(first, self.arena.exprs(l).iter().map(|e| e.index() as u32))
        };
        let vlist = |l: unfad_syntax::VarList, first: &[u32]| {
            KeyKids::chain(
                first,
                self.arena.vars_of(l).iter().map(|v| v.index() as u32),
            )
        };
        let few = |items: &[u32]| KeyKids::few(items);
        match *node {
            Const(c) => k(0, 0, c.to_bits(), few(&[])),
            Bool(b) => k(1, b as u32, 0, few(&[])),
            Var(v) => k(2, v.index() as u32, 0, few(&[])),
            Let(x, a, b) => k(3, x.index() as u32, 0, few(&[id(a), id(b)])),
            LetTuple(xs, a, b) => k(4, 0, 0, vlist(xs, &[id(a), id(b)])),
            Tuple(l) => k(5, 0, 0, list(l, &[])),
            Proj(i, a) => k(6, i, 0, few(&[id(a)])),
            Op1(op, a) => k(7, op as u32, 0, few(&[id(a)])),
            Op2(op, a, b) => k(8, op as u32, 0, few(&[id(a), id(b)])),
            Cmp(op, a, b) => k(9, op as u32, 0, few(&[id(a), id(b)])),
            Not(a) => k(10, 0, 0, few(&[id(a)])),
            And(a, b) => k(11, 0, 0, few(&[id(a), id(b)])),
            Or(a, b) => k(12, 0, 0, few(&[id(a), id(b)])),
            If(a, b, c) => k(13, 0, 0, few(&[id(a), id(b), id(c)])),
            Lambda(xs, b) => k(14, 0, 0, vlist(xs, &[id(b)])),
            App(f, l) => k(15, 0, 0, list(l, &[id(f)])),
            Call(d, l) => k(16, d.0, 0, list(l, &[])),
            Array(l) => k(17, 0, 0, list(l, &[])),
            Len(a) => k(18, 0, 0, few(&[id(a)])),
            ZerosLike(a) => k(19, 0, 0, few(&[id(a)])),
            OnesLike(a) => k(20, 0, 0, few(&[id(a)])),
            Map(f, a) => k(21, 0, 0, few(&[id(f), id(a)])),
            Map2(f, a, b) => k(22, 0, 0, few(&[id(f), id(a), id(b)])),
            Reduce(f, a, b) => k(23, 0, 0, few(&[id(f), id(a), id(b)])),
            Foldl(f, a, b) => k(24, 0, 0, few(&[id(f), id(a), id(b)])),
            Scanl(f, a, b) => k(25, 0, 0, few(&[id(f), id(a), id(b)])),
            Scanr(f, a, b) => k(26, 0, 0, few(&[id(f), id(a), id(b)])),
            Shift1L(a) => k(27, 0, 0, few(&[id(a)])),
            Shift1R(a) => k(28, 0, 0, few(&[id(a)])),
        }
    }

    /// The node, hash-consed: structurally equal nodes built in a pass are one id.
    pub(crate) fn mk(&mut self, node: Node) -> ExprId {
        // Normalise through the arena first (`-c` is a constant).
        let node = match node {
            Node::Op1(unfad_syntax::UnOp::Neg, e) => match self.arena[e] {
                Node::Const(c) => Node::Const(-c),
                _ => node,
            },
            _ => node,
        };
        if self.light {
            return self.arena.add(node);
        }
        let key = self.key(&node);
        if let Some(&e) = self.hashcons.get(&key) {
            return e;
        }
        let e = self.arena.add(node);
        self.hashcons.insert(key, e);
        e
    }

    pub(crate) fn constant(&mut self, c: f64) -> ExprId {
        self.mk(Node::Const(c))
    }

    pub(crate) fn var(&mut self, v: Var) -> ExprId {
        self.mk(Node::Var(v))
    }

    pub(crate) fn tuple(&mut self, items: &[ExprId]) -> ExprId {
        if items.len() == 1 {
            return items[0];
        }
        let l = self.arena.expr_list(items);
        self.mk(Node::Tuple(l))
    }

    /// The type of a (simplified) term.
    pub(crate) fn ty(&mut self, e: ExprId) -> Option<Type> {
        infer(self.arena, &NoSource, e).ok()
    }

    /// A new variable with a name hint and a type.
    pub(crate) fn fresh(&mut self, name: &str, ty: Option<Type>) -> Var {
        let v = self.arena.fresh_var(name, ty);
        self.emitted.insert(v, ());
        v
    }

    /// Terms that cost nothing to duplicate: substituted rather than bound.
    pub(crate) fn is_trivial(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Var(_) | Node::Const(_) | Node::Bool(_) => true,
            Node::Tuple(l) => self.arena.exprs(l).iter().all(|&i| self.is_trivial(i)),
            // Small array literals of trivial items: the literal rules see through them.
            Node::Array(l) => {
                l.len() <= crate::rules::literals::UNROLL
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

    /// Record the shape of variable `v` (an administrative pass keeps none).
    fn set_shape(&mut self, v: Var, shape: Shape) {
        if !self.light {
            self.shapes.insert(v, shape);
        }
    }

    /// The exact run-time length of an array term, if known.
    pub(crate) fn len_of(&self, e: ExprId) -> Option<Len> {
        self.shape_of(e).len()
    }

    /// The exact run-time shape of a term, as far as known: its spine is followed through
    /// tuples, fills, maps (the shape of their function's body for the operands'
    /// elements), folds and scans (the shape their accumulator keeps), shifts, `let` and
    /// `if`.
    pub(crate) fn shape_of(&self, e: ExprId) -> Shape {
        if self.light {
            return Shape::Unknown;
        }
        self.shape_in(e, &mut Vec::new())
    }

    /// [`Simplifier::shape_of`] with the shapes `env` of the parameters of the functions
    /// being walked through (innermost last).
    fn shape_in(&self, e: ExprId, env: &mut Vec<(Var, Shape)>) -> Shape {
        // Outside functions a term's shape depends on nothing but the term: memoized.
        if env.is_empty() {
            if let Some(s) = self.shape_memo.borrow().get(&e) {
                return s.clone();
            }
            let s = self.shape_walk(e, env);
            self.shape_memo.borrow_mut().insert(e, s.clone());
            return s;
        }
        self.shape_walk(e, env)
    }

    fn shape_walk(&self, e: ExprId, env: &mut Vec<(Var, Shape)>) -> Shape {
        with_stack(|| match self.arena[e] {
            Node::Var(v) => match env.iter().rev().find(|(w, _)| *w == v) {
                Some((_, shape)) => shape.clone(),
                None => self.shapes.get(&v).cloned().unwrap_or(Shape::Unknown),
            },
            Node::Tuple(l) => {
                let items = self.arena.exprs(l).to_vec();
                Shape::Tuple(items.iter().map(|&i| self.shape_in(i, env)).collect())
            }
            Node::Proj(i, x) => self.shape_in(x, env).component(i as usize),
            Node::Array(l) => {
                let items = self.arena.exprs(l).to_vec();
                let elem = items
                    .iter()
                    .map(|&i| self.shape_in(i, env))
                    .reduce(|a, b| a.meet(&b))
                    .unwrap_or(Shape::Unknown);
                Shape::array(Some(Len::constant(l.len() as u64)), elem)
            }
            Node::ZerosLike(a) | Node::OnesLike(a) => self.shape_in(a, env),
            Node::Map(f, a) => {
                let sa = self.shape_in(a, env);
                Shape::array(sa.len(), self.apply_shape(f, &[sa.elem()], env))
            }
            Node::Map2(f, a, b) => {
                let (sa, sb) = (self.shape_in(a, env), self.shape_in(b, env));
                let len = match (sa.len(), sb.len()) {
                    (Some(x), Some(y)) => x.shorter(&y),
                    _ => None,
                };
                Shape::array(len, self.apply_shape(f, &[sa.elem(), sb.elem()], env))
            }
            Node::Scanl(f, z, a) | Node::Scanr(f, z, a) => {
                let (sz, sa) = (self.shape_in(z, env), self.shape_in(a, env));
                let right = matches!(self.arena[e], Node::Scanr(..));
                let acc = self.fold_shape(f, sz, sa.elem(), right, env);
                Shape::array(sa.len().map(Len::inc), acc)
            }
            Node::Reduce(f, z, a) | Node::Foldl(f, z, a) => {
                let (sz, sa) = (self.shape_in(z, env), self.shape_in(a, env));
                self.fold_shape(f, sz, sa.elem(), false, env)
            }
            Node::Shift1L(a) | Node::Shift1R(a) => {
                let s = self.shape_in(a, env);
                Shape::array(s.len().map(Len::dec), s.elem())
            }
            Node::Let(_, _, b) | Node::LetTuple(_, _, b) => self.shape_in(b, env),
            Node::If(_, a, b) => self.shape_in(a, env).meet(&self.shape_in(b, env)),
            _ => Shape::Unknown,
        })
    }

    /// The shape of the body of the function argument `f` for parameters of the given
    /// shapes.
    fn apply_shape(&self, f: ExprId, params: &[Shape], env: &mut Vec<(Var, Shape)>) -> Shape {
        let Some((ps, body)) = self.arena.lambda_parts(f) else {
            return Shape::Unknown;
        };
        let mark = env.len();
        env.extend(ps.iter().copied().zip(params.iter().cloned()));
        let r = self.shape_in(body, env);
        env.truncate(mark);
        r
    }

    /// The shape of the accumulator of a fold or scan with function `f`, initial value of
    /// shape `z` and elements of shape `elem` (`right`: `scanr`, accumulator second): `z`
    /// if the body, given an accumulator of that shape, returns it (by induction on the
    /// steps); otherwise what `z` and any result of the body have in common.
    fn fold_shape(
        &self,
        f: ExprId,
        z: Shape,
        elem: Shape,
        right: bool,
        env: &mut Vec<(Var, Shape)>,
    ) -> Shape {
        let args = |acc: Shape| {
            if right {
                [elem.clone(), acc]
            } else {
                [acc, elem.clone()]
            }
        };
        if self.apply_shape(f, &args(z.clone()), env) == z {
            return z;
        }
        let any = self.apply_shape(f, &args(Shape::Unknown), env);
        z.meet(&any)
    }

    /// The shapes of the parameters of the function `f` of a fold or scan with initial
    /// value `z` and elements of shape `elem`.
    fn fold_param_shapes(&mut self, f: ExprId, z: ExprId, elem: Shape, right: bool) -> Vec<Shape> {
        if self.light {
            return Vec::new();
        }
        let zs = self.shape_of(z);
        let acc = self.fold_shape(f, zs, elem.clone(), right, &mut Vec::new());
        if right {
            vec![elem, acc]
        } else {
            vec![acc, elem]
        }
    }

    /// The term a variable bound by `let` in this pass's output stands for.
    pub(crate) fn definition(&self, v: Var) -> Option<ExprId> {
        self.defs.get(&v).copied()
    }

    /// The constant component `i` of the tuple variable `v`, if known (an element of an
    /// array of tuples whose components `i` are all that constant).
    pub(crate) fn constant_part(&self, v: Var, i: usize) -> Option<ExprId> {
        self.constant_parts.get(&v)?.get(i).copied().flatten()
    }

    /// The constant components of the elements of the array `a`, when they are tuples:
    /// `map (x. (0, x, 1)) A` has components 0 and 2 constant.
    fn columns_of(&self, a: ExprId) -> Option<Parts> {
        if self.light {
            return None;
        }
        let f = match self.arena[a] {
            Node::Var(v) => return self.constant_columns.get(&v).cloned(),
            Node::Map(f, _) | Node::Map2(f, ..) => f,
            _ => return None,
        };
        let (_, mut body) = self.arena.lambda_parts(f)?;
        while let Node::Let(_, _, b) | Node::LetTuple(_, _, b) = self.arena[body] {
            body = b;
        }
        let Node::Tuple(l) = self.arena[body] else {
            return None;
        };
        let parts: Parts = self
            .arena
            .exprs(l)
            .iter()
            .map(|&i| self.is_constant(i).then_some(i))
            .collect();
        parts.iter().any(Option::is_some).then_some(parts)
    }

    /// A constant or a tuple of constants.
    fn is_constant(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Const(_) => true,
            Node::Tuple(l) => self.arena.exprs(l).iter().all(|&i| self.is_constant(i)),
            _ => false,
        }
    }

    /// A parameter that is an array of reals exactly as long as `e`, if any.
    pub(crate) fn param_of_len(&self, e: ExprId) -> Option<Var> {
        let l = self.len_of(e)?;
        self.real_array_params
            .iter()
            .find(|(pl, _)| pl.le(&l) && l.le(pl))
            .map(|(_, p)| *p)
    }

    /// A parameter (an array of any type) exactly as long as `e`, if any.
    pub(crate) fn array_param_of_len(&self, e: ExprId) -> Option<Var> {
        let l = self.len_of(e)?;
        self.array_params
            .iter()
            .find(|(pl, _)| pl.le(&l) && l.le(pl))
            .map(|(_, p)| *p)
    }

    /// True if `a` is provably never longer than `b` at run time.
    pub(crate) fn not_longer(&self, a: ExprId, b: ExprId) -> bool {
        a == b
            || matches!((self.len_of(a), self.len_of(b)), (Some(x), Some(y)) if x.le(&y))
            || self.bounded_by(a, b)
            || matches!(self.arena[b], Node::ZerosLike(w) | Node::OnesLike(w) | Node::Map(_, w)
                if self.not_longer(a, w))
    }

    /// `a` is never longer than `b` by its structure, whatever the lengths: a fill or a
    /// `map` has its operand's length, a `map2` stops at its shorter operand, and a fold
    /// whose function maps over the accumulator is never longer than its initial value.
    fn bounded_by(&self, a: ExprId, b: ExprId) -> bool {
        with_stack(|| match self.arena[a] {
            Node::ZerosLike(x) | Node::OnesLike(x) | Node::Map(_, x) => self.not_longer(x, b),
            Node::Map2(_, x, y) => self.not_longer(x, b) || self.not_longer(y, b),
            Node::Reduce(f, z, _) | Node::Foldl(f, z, _) => {
                let Some((ps, body)) = self.arena.lambda_parts(f) else {
                    return false;
                };
                let acc = Node::Var(ps[0]);
                let over_acc = match self.arena[body] {
                    Node::Map(_, x) => self.arena[x] == acc,
                    Node::Map2(_, x, y) => self.arena[x] == acc || self.arena[y] == acc,
                    _ => false,
                };
                over_acc && self.not_longer(z, b)
            }
            _ => false,
        })
    }

    // ---- scopes -----------------------------------------------------------------------

    fn mark(&self) -> usize {
        self.avail_log.len()
    }

    fn pop_to(&mut self, mark: usize) {
        while self.avail_log.len() > mark {
            let e = self.avail_log.pop().unwrap();
            self.avail.remove(&e);
        }
    }

    fn make_available(&mut self, e: ExprId, x: Var) {
        if self.light || self.is_trivial(e) {
            return;
        }
        let k = self.cse_key(e);
        if let std::collections::hash_map::Entry::Vacant(slot) = self.avail.entry(k) {
            slot.insert(x);
            self.avail_log.push(k);
        }
    }

    /// The variable bound to a term equal to `e` (up to the names of its binders), if one
    /// is in scope.
    fn available(&mut self, e: ExprId) -> Option<Var> {
        if self.light || self.avail.is_empty() {
            return None;
        }
        let k = self.cse_key(e);
        self.avail.get(&k).copied()
    }

    /// The stand-in for parameter `i` of the functions at depth `depth` in expansions.
    pub(crate) fn stand_in(&mut self, depth: u32, i: usize) -> Var {
        if let Some(&v) = self.stand_ins.get(&(depth, i)) {
            return v;
        }
        let v = self.arena.fresh_var("_", None);
        self.stand_ins.insert((depth, i), v);
        v
    }

    /// The key of `e` in the CSE table: `e` itself (hash-consed), or for a fold or scan
    /// whose function is an operator section, whose binders reverse mode makes fresh for
    /// every copy, the same node with one section per operator: two `sum(A)` are one key.
    fn cse_key(&mut self, e: ExprId) -> ExprId {
        let node = self.arena[e];
        let (Node::Reduce(f, z, a)
        | Node::Foldl(f, z, a)
        | Node::Scanl(f, z, a)
        | Node::Scanr(f, z, a)) = node
        else {
            return e;
        };
        let Some((ps, body)) = self.arena.lambda_parts(f) else {
            return e;
        };
        let Node::Op2(op, x, y) = self.arena[body] else {
            return e;
        };
        let (p, q) = match ps {
            [p, q] => (Node::Var(*p), Node::Var(*q)),
            _ => return e,
        };
        let swapped = match (self.arena[x], self.arena[y]) {
            (a, b) if (a, b) == (p, q) => false,
            (a, b) if (a, b) == (q, p) => true,
            _ => return e,
        };
        while self.canon_vars.len() < 2 {
            let v = self.arena.fresh_var("_", None);
            self.canon_vars.push(v);
        }
        let (c0, c1) = (self.canon_vars[0], self.canon_vars[1]);
        let (e0, e1) = (self.var(c0), self.var(c1));
        let body = if swapped {
            self.mk(Node::Op2(op, e1, e0))
        } else {
            self.mk(Node::Op2(op, e0, e1))
        };
        let l = self.arena.var_list(&[c0, c1]);
        let section = self.mk(Node::Lambda(l, body));
        self.mk(match node {
            Node::Reduce(..) => Node::Reduce(section, z, a),
            Node::Foldl(..) => Node::Foldl(section, z, a),
            Node::Scanl(..) => Node::Scanl(section, z, a),
            _ => Node::Scanr(section, z, a),
        })
    }

    /// Simplify `e` in a scope of its own: bindings made inside are not available after.
    pub(crate) fn scoped(&mut self, e: ExprId) -> ExprId {
        let m = self.mark();
        let r = self.simplify(e);
        self.pop_to(m);
        r
    }

    /// Simplify `e` with extra substitutions (used by rules that specialise a binder body).
    /// The rewrites inside are not counted: the rule counts one if it applies, and a rule
    /// that tries and does not apply has changed nothing (counting them kept a pass that
    /// changed nothing from being a fixed point).
    pub(crate) fn simplify_with(&mut self, e: ExprId, subs: &[(Var, ExprId)]) -> ExprId {
        for &(v, r) in subs {
            self.subst.insert(v, Sub::Done(r));
        }
        let rewrites = self.rewrites;
        let r = self.scoped(e);
        self.rewrites = rewrites;
        r
    }

    /// The output variable for binder `x`: `x` itself the first time, a fresh copy after.
    fn bind_var(&mut self, x: Var) -> Var {
        if self.emitted.insert(x, ()).is_none() {
            x
        } else {
            let y = self.arena.clone_var(x);
            self.emitted.insert(y, ());
            if let Some(sh) = self.shapes.get(&x).cloned() {
                self.set_shape(y, sh);
            }
            let ey = self.var(y);
            self.subst.insert(x, Sub::Done(ey));
            y
        }
    }

    // ---- the walk ---------------------------------------------------------------------

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
                    let kids = self.arena.children(e);
                    let new: Kids = kids.iter().map(|&k| self.simplify(k)).collect();
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
            return match crate::rules::tuples::project_tuple(self, e) {
                Some(r) => {
                    self.fired();
                    r
                }
                None => e,
            };
        }
        for _ in 0..16 {
            match crate::rules::apply(self, e) {
                Some(r) if r != e => {
                    self.fired();
                    e = r;
                }
                _ => break,
            }
        }
        e
    }

    fn wrap(&mut self, mut chain: Vec<Binding>, mut body: ExprId) -> ExprId {
        while let Some(b) = chain.pop() {
            body = match b {
                Binding::One(x, r) => self.mk(Node::Let(x, r, body)),
                Binding::Many(xs, r) => {
                    let l = self.arena.var_list(&xs);
                    self.mk(Node::LetTuple(l, r, body))
                }
            };
        }
        self.chains.push(chain);
        body
    }

    /// An empty chain of bindings (one given back by [`Simplifier::wrap`] if any: chains
    /// are made and dropped for every application and `let`, and growing new ones was a
    /// large share of the pass's allocations).
    fn chain(&mut self) -> Vec<Binding> {
        self.chains.pop().unwrap_or_default()
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
        let params = self.arena.vars_of(ps).to_vec();
        let mut new_params = Vec::new();
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
        let args = self.arena.exprs(l).to_vec();
        let m = self.mark();
        let mut out = self.chain();
        // Let normalisation in function position: `(let x = e1 in f)(args)` is
        // `let x = e1 in f(args)`.
        let lam = self.peel(lam, &mut out);
        let Node::Lambda(ps, body) = self.arena[lam] else {
            // Not a lambda: rebuild the application (the first-order check reports it).
            let args: Vec<ExprId> = args.iter().map(|&a| self.simplify(a)).collect();
            let list = self.arena.expr_list(&args);
            let app = self.mk(Node::App(lam, list));
            self.pop_to(m);
            return self.wrap(out, app);
        };
        // `(fun (x1..xn) -> e)(e1..en)` is `let x1 = e1 in ... let xn = en in e`.
        self.fired();
        let params = self.arena.vars_of(ps).to_vec();
        for (&p, &a) in params.iter().zip(&args) {
            let r = self.simplify(a);
            self.bind_value(p, r, &mut out);
        }
        let result = self.simplify(body);
        self.pop_to(m);
        self.wrap(out, result)
    }

    /// A chain of `let`s and its tail.
    fn bindings(&mut self, e: ExprId) -> ExprId {
        let m = self.mark();
        let drops = self.dead_drops;
        let mut out = self.chain();
        let mut cur = e;
        loop {
            match self.arena[cur] {
                Node::Let(x, rhs, body) => {
                    self.bind_one(x, rhs, &mut out);
                    cur = body;
                }
                Node::LetTuple(xs, rhs, body) => {
                    let xs = self.arena.vars_of(xs).to_vec();
                    self.bind_tuple(&xs, rhs, &mut out);
                    cur = body;
                }
                _ => break,
            }
        }
        let mut tail = self.simplify(cur);
        self.pop_to(m);
        // `let y = e in y` is `e`.
        if let Some(Binding::One(y, r)) = out.last() {
            if self.arena[tail] == Node::Var(*y) {
                tail = *r;
                out.pop();
                self.fired();
            }
        }
        if self.dead_drops > drops {
            self.sweep_dead(&mut out, tail);
        }
        self.wrap(out, tail)
    }

    /// Drop the bindings of `chain` that neither `tail` nor a binding kept after them
    /// reads: those only a dropped binding read (otherwise the next pass would drop them,
    /// one link of the chain per pass). Binders are unique, so a mention is a use.
    fn sweep_dead(&mut self, chain: &mut Vec<Binding>, tail: ExprId) {
        let mut needed = ByVar::with_room(0);
        let mut seen = crate::fast_hash::FastSet::default();
        let mut stack = Vec::new();
        let mut mark = |arena: &Arena, e: ExprId, needed: &mut ByVar<()>| {
            stack.push(e);
            while let Some(x) = stack.pop() {
                if seen.insert(x) {
                    if let Node::Var(v) = arena[x] {
                        needed.insert(v, ());
                    }
                    arena.for_each_child(x, |c| stack.push(c));
                }
            }
        };
        mark(self.arena, tail, &mut needed);
        let mut keep = vec![true; chain.len()];
        for (k, b) in chain.iter().enumerate().rev() {
            let (used, rhs) = match b {
                Binding::One(x, r) => (needed.get(x).is_some(), *r),
                Binding::Many(xs, r) => (xs.iter().any(|x| needed.get(x).is_some()), *r),
            };
            if used {
                mark(self.arena, rhs, &mut needed);
            } else {
                keep[k] = false;
            }
        }
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped > 0 {
            self.rewrites += dropped;
            self.dead_drops += dropped;
            let mut k = 0;
            chain.retain(|_| {
                k += 1;
                keep[k - 1]
            });
        }
    }

    /// Process `let x = rhs` (rhs not yet simplified).
    fn bind_one(&mut self, x: Var, rhs: ExprId, out: &mut Vec<Binding>) {
        if self.uses(x) == 0 {
            // Dead: terms are pure, so the binding goes (with whatever it would compute).
            self.fired();
            self.dead_drops += 1;
            return;
        }
        match self.arena[rhs] {
            // Let normalisation: `let x = (let y = a in b) in e` is `let y = a in let x = b in e`.
            Node::Let(y, a, b) => {
                self.fired();
                self.bind_one(y, a, out);
                self.bind_one(x, b, out);
            }
            Node::LetTuple(ys, a, b) => {
                self.fired();
                let ys = self.arena.vars_of(ys).to_vec();
                self.bind_tuple(&ys, a, out);
                self.bind_one(x, b, out);
            }
            Node::Lambda(..) if self.uses(x) == 1 => {
                self.subst.insert(x, Sub::Suspended(rhs));
            }
            _ => {
                let r = self.simplify(rhs);
                self.bind_value(x, r, out);
            }
        }
    }

    /// Process `let (x1, ..., xk) = rhs`.
    fn bind_tuple(&mut self, xs: &[Var], rhs: ExprId, out: &mut Vec<Binding>) {
        match self.arena[rhs] {
            Node::Let(y, a, b) => {
                self.fired();
                self.bind_one(y, a, out);
                self.bind_tuple(xs, b, out);
            }
            Node::LetTuple(ys, a, b) => {
                self.fired();
                let ys = self.arena.vars_of(ys).to_vec();
                self.bind_tuple(&ys, a, out);
                self.bind_tuple(xs, b, out);
            }
            Node::Tuple(l) if l.len() == xs.len() => {
                // `let (x, y) = (a, b)` is `let x = a in let y = b`.
                self.fired();
                let items = self.arena.exprs(l).to_vec();
                for (&x, &i) in xs.iter().zip(&items) {
                    self.bind_one(x, i, out);
                }
            }
            _ => {
                let r = self.simplify(rhs);
                let r = self.peel(r, out);
                match self.arena[r] {
                    Node::Tuple(l) if l.len() == xs.len() => {
                        self.fired();
                        let items = self.arena.exprs(l).to_vec();
                        for (&x, &i) in xs.iter().zip(&items) {
                            if self.uses(x) > 0 {
                                self.bind_value(x, i, out);
                            } else {
                                self.dead_drops += 1;
                            }
                        }
                    }
                    _ if self.is_trivial(r) => {
                        // `let (a, b) = p`: substitute the projections of `p`.
                        self.fired();
                        for (i, &x) in xs.iter().enumerate() {
                            let p = self.mk(Node::Proj(i as u32, r));
                            let p = self.rewrite(p);
                            self.subst.insert(x, Sub::Done(p));
                        }
                    }
                    _ => {
                        let new: Vec<Var> = xs.iter().map(|&x| self.bind_var(x)).collect();
                        out.push(Binding::Many(new, r));
                    }
                }
            }
        }
    }

    /// Move the `let`s at the top of a simplified term into `out`; returns the tail.
    fn peel(&mut self, mut r: ExprId, out: &mut Vec<Binding>) -> ExprId {
        loop {
            match self.arena[r] {
                Node::Let(y, a, b) => {
                    self.make_available(a, y);
                    self.defs.insert(y, a);
                    out.push(Binding::One(y, a));
                    r = b;
                }
                Node::LetTuple(ys, a, b) => {
                    out.push(Binding::Many(self.arena.vars_of(ys).to_vec(), a));
                    r = b;
                }
                _ => return r,
            }
        }
    }

    /// Bind `x` to the simplified term `r`: substitute it, split it, share it, or emit it.
    fn bind_value(&mut self, x: Var, r: ExprId, out: &mut Vec<Binding>) {
        let r = self.peel(r, out);
        if self.is_trivial(r) {
            self.fired();
            let shape = self.shape_of(r);
            self.set_shape(x, shape);
            self.subst.insert(x, Sub::Done(r));
            return;
        }
        if !self.light && self.is_reshaping(r) {
            self.fired();
            let shape = self.shape_of(r);
            self.set_shape(x, shape);
            self.subst.insert(x, Sub::Copied(r));
            return;
        }
        let small_literal = matches!(self.arena[r], Node::Array(l)
            if l.len() <= crate::rules::literals::UNROLL);
        if matches!(self.arena[r], Node::Tuple(_)) || small_literal {
            // Tuple splitting: bind the components, and `x` is the tuple of their variables
            // (so for the elements of a small array literal).
            let (Node::Tuple(l) | Node::Array(l)) = self.arena[r] else {
                return;
            };
            self.fired();
            let items = self.arena.exprs(l).to_vec();
            let mut parts = Vec::new();
            for (i, &item) in items.iter().enumerate() {
                if self.is_trivial(item) {
                    parts.push(item);
                } else if let Some(y) = self.available(item) {
                    parts.push(self.var(y));
                } else {
                    let name = format!("{}{}", self.arena.var_name(x), i);
                    let ty = self.ty(item);
                    let y = self.fresh(&name, ty);
                    let shape = self.shape_of(item);
                    self.set_shape(y, shape);
                    self.make_available(item, y);
                    self.defs.insert(y, item);
                    out.push(Binding::One(y, item));
                    parts.push(self.var(y));
                }
            }
            let t = if small_literal {
                let l = self.arena.expr_list(&parts);
                self.mk(Node::Array(l))
            } else {
                self.tuple(&parts)
            };
            let shape = self.shape_of(t);
            self.set_shape(x, shape);
            self.subst.insert(x, Sub::Done(t));
            return;
        }
        if let Some(y) = self.available(r) {
            // Common subexpression: reuse the variable already bound to it.
            self.fired();
            let ey = self.var(y);
            self.subst.insert(x, Sub::Done(ey));
            return;
        }
        let x2 = self.bind_var(x);
        let shape = self.shape_of(r);
        self.set_shape(x2, shape);
        if let Some(parts) = self.columns_of(r) {
            self.constant_columns.insert(x2, parts);
        }
        self.make_available(r, x2);
        self.defs.insert(x2, r);
        out.push(Binding::One(x2, r));
    }
}

/// How many times each variable occurs in the tree of `e` (a subterm shared by several
/// parents counts once per path to it), and which variables are bound in it, indexed by
/// variable; also the number of nodes of its DAG. One visit per node of the DAG.
fn occurrences_and_binders(arena: &Arena, e: ExprId) -> Occurrences {
    thread_local! {
        /// Per-node tables (visited, paths) kept between passes, all clear between uses:
        /// clearing the nodes a pass visited costs less than zeroing a table as large as
        /// the arena every pass.
        static NODE_TABLES: std::cell::RefCell<(Vec<bool>, Vec<usize>)> =
            const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    }
    NODE_TABLES.with_borrow_mut(|(seen, paths)| {
        if seen.len() < arena.node_count() {
            seen.resize(arena.node_count(), false);
            paths.resize(arena.node_count(), 0);
        }
        let found = count_occurrences(arena, e, seen, paths);
        for &x in &found.1 {
            seen[x.index()] = false;
            paths[x.index()] = 0;
        }
        found.0
    })
}

/// [`occurrences_and_binders`] with clear tables `seen` and `paths` as large as the arena;
/// also returns the nodes visited (whose entries it leaves set).
fn count_occurrences(
    arena: &Arena,
    e: ExprId,
    seen: &mut [bool],
    paths: &mut [usize],
) -> (Occurrences, Vec<ExprId>) {
    // Nodes in depth-first post-order: every node after its children.
    let mut order = Vec::new();
    let mut stack = vec![(e, false)];
    while let Some((x, done)) = stack.pop() {
        if done {
            order.push(x);
            continue;
        }
        if std::mem::replace(&mut seen[x.index()], true) {
            continue;
        }
        stack.push((x, true));
        arena.for_each_child(x, |c| stack.push((c, false)));
    }
    // Paths from the root to each node, parents first (saturating: only 0, 1 and "many"
    // matter, and a DAG can have exponentially many paths).
    paths[e.index()] = 1;
    let mut vars = VAR_TABLES.with_borrow_mut(Option::take).unwrap_or_default();
    vars.begin(arena.var_count());
    for &x in order.iter().rev() {
        let p = paths[x.index()];
        let node = arena[x];
        match node {
            Node::Var(v) => vars.occurs(v, p),
            Node::Let(v, ..) => vars.bind(v),
            Node::LetTuple(vs, ..) | Node::Lambda(vs, _) => {
                for &v in arena.vars_of(vs) {
                    vars.bind(v);
                }
            }
            _ => {}
        }
        arena.for_each_child(x, |c| paths[c.index()] = paths[c.index()].saturating_add(p));
    }
    let nodes = order.len();
    (Occurrences { vars, nodes }, order)
}

thread_local! {
    /// Per-variable tables kept between passes (see [`VarTables`]).
    static VAR_TABLES: std::cell::RefCell<Option<VarTables>> =
        const { std::cell::RefCell::new(None) };
}

/// Occurrence counts and binders by variable index, valid for the pass whose generation
/// they carry: a new pass starts a new generation instead of clearing tables as large as
/// the arena's variables.
#[derive(Default)]
struct VarTables {
    generation: u32,
    count: Vec<u32>,
    counted: Vec<u32>,
    bound: Vec<u32>,
}

impl VarTables {
    fn begin(&mut self, vars: usize) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 2^32 passes: forget every generation.
            self.counted.fill(0);
            self.bound.fill(0);
            self.generation = 1;
        }
        if self.count.len() < vars {
            self.count.resize(vars, 0);
            self.counted.resize(vars, 0);
            self.bound.resize(vars, 0);
        }
    }

    fn occurs(&mut self, v: Var, times: usize) {
        let i = v.index();
        if self.counted[i] != self.generation {
            self.counted[i] = self.generation;
            self.count[i] = 0;
        }
        let times = u32::try_from(times).unwrap_or(u32::MAX);
        self.count[i] = self.count[i].saturating_add(times);
    }

    fn bind(&mut self, v: Var) {
        self.bound[v.index()] = self.generation;
    }
}

/// What [`occurrences_and_binders`] finds: occurrence counts and binders of the input
/// term, and the number of its nodes.
struct Occurrences {
    vars: VarTables,
    nodes: usize,
}

impl Occurrences {
    /// Occurrences of a binder of the input; unknown (assumed many) for other variables.
    fn uses(&self, x: Var) -> usize {
        let (t, i) = (&self.vars, x.index());
        match t.bound.get(i) {
            Some(&g) if g == t.generation => {
                if t.counted[i] == t.generation {
                    t.count[i] as usize
                } else {
                    0
                }
            }
            _ => usize::MAX,
        }
    }
}

impl Drop for Occurrences {
    fn drop(&mut self) {
        let vars = std::mem::take(&mut self.vars);
        VAR_TABLES.with_borrow_mut(|kept| *kept = Some(vars));
    }
}
