//! The term language: Source and Target fragments in one representation.
//!
//! Terms live in an [`Arena`] of immutable, `Copy` nodes addressed by [`ExprId`]. A rewrite
//! never mutates a node: it adds new nodes and returns a new root, so subterms are shared
//! freely between the stages (the arena is a DAG). Variables are entities too: a [`Var`]
//! indexes a side table holding the name hint and the type.
//!
//! **Invariant (unique binders).** Every variable is bound at most once in a term tree.
//! Substitution therefore never captures, and a variable's type can live on the variable
//! rather than in an environment. Whoever duplicates a subterm that contains binders makes
//! the copy with [`Arena::copy_fresh`].

use crate::fast_hash::FastMap as HashMap;

use crate::ops::{BinOp, CmpOp, UnOp};
use crate::span::Span;
use crate::types::Type;

/// A node of the arena.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ExprId(u32);

/// A variable: an index into the arena's variable table.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Var(u32);

/// A definition of the program (only `Call` nodes refer to one, before inlining).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct DefId(pub u32);

/// A list of expressions stored in the arena's pool.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ExprList {
    start: u32,
    len: u32,
}

/// A list of variables stored in the arena's pool.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct VarList {
    start: u32,
    len: u32,
}

impl ExprId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A map from nodes to nodes with a slot per node of an arena: what a pass that rebuilds a
/// term keeps of the nodes it has rebuilt. A hash table of millions of entries (a long
/// program's term) cost more in its lookups and growth than the rest of such a pass.
#[derive(Default)]
pub struct ExprMemo {
    slots: Vec<u32>,
}

impl ExprMemo {
    const NONE: u32 = u32::MAX;

    /// Slots for the nodes of `arena` (nodes made later grow the table).
    pub fn for_arena(arena: &Arena) -> ExprMemo {
        ExprMemo {
            slots: vec![Self::NONE; arena.node_count()],
        }
    }

    pub fn get(&self, e: ExprId) -> Option<ExprId> {
        match self.slots.get(e.index()) {
            Some(&r) if r != Self::NONE => Some(ExprId(r)),
            _ => None,
        }
    }

    pub fn insert(&mut self, e: ExprId, r: ExprId) {
        if e.index() >= self.slots.len() {
            let n = e.index() + 1;
            self.slots.resize(n + n / 2, Self::NONE);
        }
        self.slots[e.index()] = r.0;
    }
}

impl Var {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl ExprList {
    pub fn len(self) -> usize {
        self.len as usize
    }
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

impl VarList {
    pub fn len(self) -> usize {
        self.len as usize
    }
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// One term constructor. The function argument of an array operation is the id of a
/// `Lambda` node (binder syntax `(x, y. e)` in the surface language).
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Node {
    /// A real constant. Never negative zero's negation: `-c` is folded into the constant.
    Const(f64),
    /// `true` / `false` (only made by the optimizer; conditions are comparisons).
    Bool(bool),
    Var(Var),
    /// `let x = e1 in e2`
    Let(Var, ExprId, ExprId),
    /// `let (x1, ..., xk) = e1 in e2`
    LetTuple(VarList, ExprId, ExprId),
    /// `(e1, ..., ek)`, k >= 2
    Tuple(ExprList),
    /// `e.i` (0-based); `fst e` is `e.0` and `snd e` is `e.1`.
    Proj(u32, ExprId),
    Op1(UnOp, ExprId),
    Op2(BinOp, ExprId, ExprId),
    Cmp(CmpOp, ExprId, ExprId),
    Not(ExprId),
    And(ExprId, ExprId),
    Or(ExprId, ExprId),
    /// `if c then e1 else e2`
    If(ExprId, ExprId, ExprId),
    /// `fun (x1, ..., xk) -> e` (Target), or the function argument of an array operation.
    Lambda(VarList, ExprId),
    /// `e(e1, ..., ek)`: application of a function value (Target).
    App(ExprId, ExprList),
    /// `f(e1, ..., ek)`: call of a definition; removed by inlining.
    Call(DefId, ExprList),
    /// `[e1, ..., ek]`
    Array(ExprList),
    /// `len(A)`: the length of an array as a real constant.
    Len(ExprId),
    ZerosLike(ExprId),
    OnesLike(ExprId),
    /// `map f A`
    Map(ExprId, ExprId),
    /// `map2 f A B`
    Map2(ExprId, ExprId, ExprId),
    /// `reduce f z A`
    Reduce(ExprId, ExprId, ExprId),
    /// `foldl f z A`
    Foldl(ExprId, ExprId, ExprId),
    /// `scanl f z A`: `[z, f(z, a1), ...]`, one longer than `A`.
    Scanl(ExprId, ExprId, ExprId),
    /// `scanr f z A`: `[..., f(an, z), z]`, one longer than `A`.
    Scanr(ExprId, ExprId, ExprId),
    /// Drop the first element (an empty array stays empty).
    Shift1L(ExprId),
    /// Drop the last element (an empty array stays empty).
    Shift1R(ExprId),
    /// `iota n`: the ints `[0, 1, ..., n-1]`. The operand is an int whose value the type
    /// knows as a size (a literal, `len(A)`, an int parameter, plus or minus a constant).
    Iota(ExprId),
    /// `A[i]`: the element of `A` at the int `i` (from 0); out of bounds is a run-time error.
    Index(ExprId, ExprId),
    /// `scatter_add(Z, I, V)` (Target): `Z` with `V[k]` added (by `+̂`) at position `I[k]`
    /// for every `k`, in order. `I`'s elements are ints, or tuples of ints naming an element
    /// of a nested array (`(i, j)` for `Z[i][j]`); a position outside `Z` adds nothing. The
    /// adjoint of indexing: reverse mode's in-place accumulation.
    ScatterAdd(ExprId, ExprId, ExprId),
    /// `grad(f)(e1, ..., ek)`, `grad(f, i)(...)` and `jvp(f)(P, T)`: a derivative of the
    /// closed function `f` (a `Lambda`: a definition, inlined) at the arguments. Expanded
    /// by the pipeline into the derivative's own term before anything differentiates or
    /// compiles the program; the interpreter evaluates it with nested dual numbers.
    Derivative(Derivative, ExprId, ExprList),
}

/// Which derivative a [`Node::Derivative`] takes.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum Derivative {
    /// The gradient with respect to every parameter holding reals (a tuple of them, in
    /// order; the item itself for one), or with respect to parameter `wrt` only.
    Grad { wrt: Option<u32> },
    /// Value and directional derivative: `jvp(f)(P, T)` with `P` the arguments and `T`
    /// their tangents (tuples of them for several parameters), giving `(value, tangent)`.
    Jvp,
}

/// A fold's function that scatters into its accumulator (see [`Arena::accumulation`]).
#[derive(Clone, Debug)]
pub struct Accumulation {
    /// The accumulator, only ever the scatter's target.
    pub acc: Var,
    /// The fold's element.
    pub elem: Var,
    /// The `let`s before the scatter, outermost first.
    pub lets: Vec<(Var, ExprId)>,
    /// What each element adds, in order: one scatter, or a chain of them
    /// `scatter_add(scatter_add(acc, P1, V1), P2, V2)` (an element that reads the array at
    /// several places), and folds of accumulations started from the accumulator (nested
    /// loops, each adding into the one array).
    pub adds: Vec<Addition>,
}

/// One addition of an [`Accumulation`]'s element.
#[derive(Clone, Debug)]
pub enum Addition {
    /// `scatter_add(_, positions, values)`.
    Scatter { positions: ExprId, values: ExprId },
    /// `foldl f _ over`, `f` itself an accumulation: every element of `over` adds its own.
    Fold { f: ExprId, over: ExprId },
    /// `if cond then .. else ..`, each branch its own `let`s and additions into the
    /// accumulator (a read that only some elements make).
    Branch {
        cond: ExprId,
        then: Branch,
        otherwise: Branch,
    },
}

/// One branch of an [`Addition::Branch`]: `let`s, then additions.
#[derive(Clone, Debug)]
pub struct Branch {
    pub lets: Vec<(Var, ExprId)>,
    pub adds: Vec<Addition>,
}

/// A fold's function that accumulates into every component of a tuple (see
/// [`Arena::accumulations`]): the `let`s it makes first, then each component's additions.
#[derive(Clone, Debug)]
pub struct Accumulations {
    /// The accumulator, a tuple of arrays, each only ever its own additions' target.
    pub acc: Var,
    /// The fold's element.
    pub elem: Var,
    /// The `let`s before the tuple, outermost first (none reads the accumulator).
    pub lets: Vec<(Var, ExprId)>,
    /// Per component, what each element adds to it, in order (as [`Accumulation::adds`]).
    pub parts: Vec<Vec<Addition>>,
}

impl Accumulation {
    /// The `(positions, values)` of its scatters, when it makes no nested folds.
    pub fn scatters(&self) -> Option<Vec<(ExprId, ExprId)>> {
        self.adds
            .iter()
            .map(|a| match *a {
                Addition::Scatter { positions, values } => Some((positions, values)),
                Addition::Fold { .. } | Addition::Branch { .. } => None,
            })
            .collect()
    }
}

/// What the arena knows of a variable.
#[derive(Clone, Debug)]
struct VarData {
    /// The name the user wrote, or a hint for generated variables; not unique (copies of
    /// a variable share it).
    name: std::sync::Arc<str>,
    /// Its type's number in the arena's table (0 until the variable is bound in a
    /// type-checked term).
    ty: u32,
}

/// Distinct types, numbered from 1 in the order first met.
#[derive(Clone, Debug, Default)]
struct TypeTable {
    types: Vec<Type>,
    numbers: HashMap<Type, u32>,
    /// The last type interned and its number: most nodes checked in a row share a type.
    last: Option<(Type, u32)>,
}

impl TypeTable {
    /// The number of `ty` (a new one if it is new).
    fn intern(&mut self, ty: Type) -> u32 {
        if let Some((last, k)) = &self.last {
            if *last == ty {
                return *k;
            }
        }
        let k = match self.numbers.get(&ty) {
            Some(&k) => k,
            None => {
                self.types.push(ty.clone());
                let k = u32::try_from(self.types.len()).expect("type table overflow");
                self.numbers.insert(ty.clone(), k);
                k
            }
        };
        self.last = Some((ty, k));
        k
    }

    /// The type numbered `k`, if `k` is a number (not 0).
    fn get(&self, k: u32) -> Option<&Type> {
        k.checked_sub(1).map(|i| &self.types[i as usize])
    }

    fn clear(&mut self) {
        self.types.clear();
        self.numbers.clear();
        self.last = None;
    }
}

/// The store of nodes, variables and their side tables.
#[derive(Clone, Debug, Default)]
pub struct Arena {
    nodes: Vec<Node>,
    spans: Vec<Span>,
    /// Each node's type, as its index in `types` (0 when not checked yet).
    node_types: Vec<u32>,
    /// The distinct types of nodes, each once (a type per node took most of the arena's
    /// memory; terms have few distinct types).
    types: TypeTable,
    vars: Vec<VarData>,
    expr_pool: Vec<ExprId>,
    var_pool: Vec<Var>,
}

impl Node {
    /// A name, a constant, a tuple, a projection, a binding or a function: structure that
    /// code generation turns into no instruction of its own (counts of a term's operations
    /// skip these).
    pub fn is_structural(self) -> bool {
        matches!(
            self,
            Node::Var(_)
                | Node::Const(_)
                | Node::Bool(_)
                | Node::Tuple(_)
                | Node::Proj(..)
                | Node::Let(..)
                | Node::LetTuple(..)
                | Node::Lambda(..)
        )
    }

    /// `+ - * /`, negation or `abs` on reals: an operation of one instruction, which code
    /// may repeat rather than store its result.
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            Node::Op1(UnOp::Neg | UnOp::Abs, _)
                | Node::Op2(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, ..)
        )
    }

    /// `map`, `map2`, `reduce`, `foldl`, `scanl` or `scanr`: an array operation, whose first
    /// child is its function argument and which runs as a loop.
    pub fn is_array_op(self) -> bool {
        matches!(
            self,
            Node::Map(..)
                | Node::Map2(..)
                | Node::Reduce(..)
                | Node::Foldl(..)
                | Node::Scanl(..)
                | Node::Scanr(..)
        )
    }
}

/// The children of a node: inline for the usual few, so listing them does not allocate.
pub type Kids = smallvec::SmallVec<[ExprId; 4]>;

/// Run `f` with enough stack for deep recursion (deeply nested terms are legal input).
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 8 * 1024 * 1024, f)
}

impl std::ops::Index<ExprId> for Arena {
    type Output = Node;
    fn index(&self, e: ExprId) -> &Node {
        &self.nodes[e.index()]
    }
}

impl Arena {
    pub fn new() -> Arena {
        Arena::default()
    }

    /// Remove every node, list and variable, keeping the room the tables have.
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.spans.clear();
        self.node_types.clear();
        self.types.clear();
        self.vars.clear();
        self.expr_pool.clear();
        self.var_pool.clear();
    }

    /// Number of nodes ever added (a measure of work, not of any one term).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    // ---- nodes ------------------------------------------------------------------------

    /// Add a node with no source position.
    pub fn add(&mut self, node: Node) -> ExprId {
        self.add_at(node, Span::NONE)
    }

    /// Add a node that comes from `span` in a source.
    /// Room for `additional` more nodes, so that a stage known to build many does not
    /// grow the arena's tables step by step.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
        self.spans.reserve(additional);
        self.node_types.reserve(additional);
        // Lists and variables grow with the nodes (about one list item per node and one
        // variable per two in reverse mode's terms).
        self.expr_pool.reserve(additional);
        self.var_pool.reserve(additional / 2);
        self.vars.reserve(additional / 2);
    }

    pub fn add_at(&mut self, node: Node, span: Span) -> ExprId {
        // Negation of a constant is the negative constant: one spelling for `-2`.
        let node = match node {
            Node::Op1(UnOp::Neg, e) => match self[e] {
                Node::Const(c) => Node::Const(-c),
                _ => node,
            },
            _ => node,
        };
        let id = ExprId(u32::try_from(self.nodes.len()).expect("term arena overflow"));
        self.nodes.push(node);
        self.spans.push(span);
        self.node_types.push(0);
        id
    }

    pub fn node(&self, e: ExprId) -> Node {
        self.nodes[e.index()]
    }

    pub fn span(&self, e: ExprId) -> Span {
        self.spans[e.index()]
    }

    pub fn set_span(&mut self, e: ExprId, span: Span) {
        self.spans[e.index()] = span;
    }

    /// The type recorded for `e` by the type checker, if it has checked it.
    pub fn type_of(&self, e: ExprId) -> Option<&Type> {
        self.types.get(self.node_types[e.index()])
    }

    pub fn set_type(&mut self, e: ExprId, ty: Type) {
        self.node_types[e.index()] = self.types.intern(ty);
    }

    /// Forget the type recorded for `e` (the type checker, trying a term again).
    pub fn clear_type(&mut self, e: ExprId) {
        self.node_types[e.index()] = 0;
    }

    // ---- lists ------------------------------------------------------------------------

    pub fn expr_list(&mut self, items: &[ExprId]) -> ExprList {
        let start = self.expr_pool.len() as u32;
        self.expr_pool.extend_from_slice(items);
        ExprList {
            start,
            len: items.len() as u32,
        }
    }

    pub fn var_list(&mut self, items: &[Var]) -> VarList {
        let start = self.var_pool.len() as u32;
        self.var_pool.extend_from_slice(items);
        VarList {
            start,
            len: items.len() as u32,
        }
    }

    pub fn exprs(&self, l: ExprList) -> &[ExprId] {
        &self.expr_pool[l.start as usize..(l.start + l.len) as usize]
    }

    pub fn vars_of(&self, l: VarList) -> &[Var] {
        &self.var_pool[l.start as usize..(l.start + l.len) as usize]
    }

    // ---- variables --------------------------------------------------------------------

    /// A new variable, distinct from every other one.
    pub fn fresh_var(&mut self, name: &str, ty: Option<Type>) -> Var {
        self.fresh_var_named(name.into(), ty)
    }

    /// [`Arena::fresh_var`] with a name already shared (no copy of it is made).
    pub fn fresh_var_named(&mut self, name: std::sync::Arc<str>, ty: Option<Type>) -> Var {
        let ty = ty.map_or(0, |t| self.types.intern(t));
        self.push_var(VarData { name, ty })
    }

    /// A new variable with the name and type of `v`.
    pub fn clone_var(&mut self, v: Var) -> Var {
        let data = self.vars[v.index()].clone();
        self.push_var(data)
    }

    fn push_var(&mut self, data: VarData) -> Var {
        let v = Var(u32::try_from(self.vars.len()).expect("too many variables"));
        self.vars.push(data);
        v
    }

    pub fn var_name(&self, v: Var) -> &str {
        &self.vars[v.index()].name
    }

    pub fn var_type(&self, v: Var) -> Option<&Type> {
        self.types.get(self.vars[v.index()].ty)
    }

    pub fn set_var_type(&mut self, v: Var, ty: Type) {
        self.vars[v.index()].ty = self.types.intern(ty);
    }

    /// Give `v` back a type it had (or none): the type checker, trying a term again.
    pub fn restore_var_type(&mut self, v: Var, ty: Option<Type>) {
        self.vars[v.index()].ty = ty.map_or(0, |t| self.types.intern(t));
    }

    pub fn var_count(&self) -> usize {
        self.vars.len()
    }

    // ---- builders ---------------------------------------------------------------------

    pub fn constant(&mut self, c: f64) -> ExprId {
        self.add(Node::Const(c))
    }

    pub fn var(&mut self, v: Var) -> ExprId {
        self.add(Node::Var(v))
    }

    pub fn let_(&mut self, x: Var, e1: ExprId, e2: ExprId) -> ExprId {
        self.add(Node::Let(x, e1, e2))
    }

    pub fn let_tuple(&mut self, xs: &[Var], e1: ExprId, e2: ExprId) -> ExprId {
        let l = self.var_list(xs);
        self.add(Node::LetTuple(l, e1, e2))
    }

    /// `(e1, ..., ek)`; a single item is returned as itself and none is an error of the
    /// caller, as the language has no unit type.
    pub fn tuple(&mut self, items: &[ExprId]) -> ExprId {
        assert!(!items.is_empty(), "the language has no empty tuple");
        if items.len() == 1 {
            return items[0];
        }
        let l = self.expr_list(items);
        self.add(Node::Tuple(l))
    }

    pub fn proj(&mut self, i: u32, e: ExprId) -> ExprId {
        self.add(Node::Proj(i, e))
    }

    pub fn op1(&mut self, op: UnOp, e: ExprId) -> ExprId {
        self.add(Node::Op1(op, e))
    }

    pub fn op2(&mut self, op: BinOp, a: ExprId, b: ExprId) -> ExprId {
        self.add(Node::Op2(op, a, b))
    }

    pub fn lambda(&mut self, params: &[Var], body: ExprId) -> ExprId {
        let l = self.var_list(params);
        self.add(Node::Lambda(l, body))
    }

    pub fn app(&mut self, f: ExprId, args: &[ExprId]) -> ExprId {
        let l = self.expr_list(args);
        self.add(Node::App(f, l))
    }

    pub fn array(&mut self, items: &[ExprId]) -> ExprId {
        let l = self.expr_list(items);
        self.add(Node::Array(l))
    }

    /// The lambda `(x, y. x op y)` for an operator section.
    pub fn section(&mut self, op: BinOp, x_name: &str, y_name: &str) -> ExprId {
        let x = self.fresh_var(x_name, None);
        let y = self.fresh_var(y_name, None);
        let (ex, ey) = (self.var(x), self.var(y));
        let body = self.op2(op, ex, ey);
        self.lambda(&[x, y], body)
    }

    /// The parameters and body of a `Lambda` node.
    pub fn lambda_parts(&self, f: ExprId) -> Option<(&[Var], ExprId)> {
        match self[f] {
            Node::Lambda(ps, body) => Some((self.vars_of(ps), body)),
            _ => None,
        }
    }

    pub fn is_const(&self, e: ExprId, c: f64) -> bool {
        matches!(self[e], Node::Const(k) if k == c)
    }

    // ---- generic traversal ------------------------------------------------------------

    /// The direct subterms of `e`, in evaluation order.
    pub fn children(&self, e: ExprId) -> Kids {
        let mut out = Kids::new();
        self.for_each_child(e, |c| out.push(c));
        out
    }

    pub fn for_each_child(&self, e: ExprId, f: impl FnMut(ExprId)) {
        self.for_each_child_of(self[e], f)
    }

    /// The direct subterms of a node not (yet) in the arena.
    pub fn node_children(&self, node: Node) -> Kids {
        let mut out = Kids::new();
        self.for_each_child_of(node, |c| out.push(c));
        out
    }

    fn for_each_child_of(&self, node: Node, mut f: impl FnMut(ExprId)) {
        use Node::*;
        match node {
            Const(_) | Bool(_) | Var(_) => {}
            Let(_, a, b)
            | LetTuple(_, a, b)
            | Op2(_, a, b)
            | Index(a, b)
            | Cmp(_, a, b)
            | And(a, b)
            | Or(a, b) => {
                f(a);
                f(b)
            }
            Map(a, b) => {
                f(a);
                f(b)
            }
            Proj(_, a)
            | Op1(_, a)
            | Not(a)
            | Len(a)
            | ZerosLike(a)
            | OnesLike(a)
            | Shift1L(a)
            | Shift1R(a)
            | Iota(a)
            | Lambda(_, a) => f(a),
            If(a, b, c)
            | ScatterAdd(a, b, c)
            | Map2(a, b, c)
            | Reduce(a, b, c)
            | Foldl(a, b, c)
            | Scanl(a, b, c)
            | Scanr(a, b, c) => {
                f(a);
                f(b);
                f(c)
            }
            Tuple(l) | Array(l) | Call(_, l) => self.exprs(l).iter().for_each(|&c| f(c)),
            App(g, l) | Derivative(_, g, l) => {
                f(g);
                self.exprs(l).iter().for_each(|&c| f(c))
            }
        }
    }

    /// The variables `node` binds (over its last child for `Let`/`LetTuple`, over its body
    /// for `Lambda`).
    pub fn binders(&self, node: Node) -> Vec<Var> {
        match node {
            Node::Let(x, ..) => vec![x],
            Node::LetTuple(xs, ..) | Node::Lambda(xs, _) => self.vars_of(xs).to_vec(),
            _ => Vec::new(),
        }
    }

    /// `node` with every child replaced through `f` (binders unchanged). Returns the node
    /// itself when no child changed.
    pub fn map_children(
        &mut self,
        node: Node,
        mut f: impl FnMut(&mut Arena, ExprId) -> ExprId,
    ) -> Node {
        use Node::*;
        match node {
            Const(_) | Bool(_) | Var(_) => node,
            Let(x, a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                Let(x, a, b)
            }
            LetTuple(xs, a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                LetTuple(xs, a, b)
            }
            Tuple(l) => Tuple(self.map_list(l, &mut f)),
            Proj(i, a) => Proj(i, f(self, a)),
            Op1(op, a) => Op1(op, f(self, a)),
            Op2(op, a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                Op2(op, a, b)
            }
            Cmp(op, a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                Cmp(op, a, b)
            }
            Not(a) => Not(f(self, a)),
            And(a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                And(a, b)
            }
            Or(a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                Or(a, b)
            }
            If(a, b, c) => {
                let (a, b, c) = (f(self, a), f(self, b), f(self, c));
                If(a, b, c)
            }
            Lambda(xs, a) => Lambda(xs, f(self, a)),
            App(g, l) => {
                let g = f(self, g);
                App(g, self.map_list(l, &mut f))
            }
            Call(d, l) => Call(d, self.map_list(l, &mut f)),
            Derivative(k, g, l) => {
                let g = f(self, g);
                Derivative(k, g, self.map_list(l, &mut f))
            }
            Array(l) => Array(self.map_list(l, &mut f)),
            Len(a) => Len(f(self, a)),
            ZerosLike(a) => ZerosLike(f(self, a)),
            OnesLike(a) => OnesLike(f(self, a)),
            Map(g, a) => {
                let (g, a) = (f(self, g), f(self, a));
                Map(g, a)
            }
            Map2(g, a, b) => {
                let (g, a, b) = (f(self, g), f(self, a), f(self, b));
                Map2(g, a, b)
            }
            Reduce(g, a, b) => {
                let (g, a, b) = (f(self, g), f(self, a), f(self, b));
                Reduce(g, a, b)
            }
            Foldl(g, a, b) => {
                let (g, a, b) = (f(self, g), f(self, a), f(self, b));
                Foldl(g, a, b)
            }
            Scanl(g, a, b) => {
                let (g, a, b) = (f(self, g), f(self, a), f(self, b));
                Scanl(g, a, b)
            }
            Scanr(g, a, b) => {
                let (g, a, b) = (f(self, g), f(self, a), f(self, b));
                Scanr(g, a, b)
            }
            Shift1L(a) => Shift1L(f(self, a)),
            Shift1R(a) => Shift1R(f(self, a)),
            Iota(a) => Iota(f(self, a)),
            Index(a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                Index(a, b)
            }
            ScatterAdd(a, b, c) => {
                let (a, b, c) = (f(self, a), f(self, b), f(self, c));
                ScatterAdd(a, b, c)
            }
        }
    }

    fn map_list(
        &mut self,
        l: ExprList,
        f: &mut impl FnMut(&mut Arena, ExprId) -> ExprId,
    ) -> ExprList {
        let items: Kids = self.exprs(l).iter().copied().collect();
        let new: Kids = items.iter().map(|&c| f(self, c)).collect();
        if new == items {
            l
        } else {
            self.expr_list(&new)
        }
    }

    /// `node` with its binders replaced through `f`.
    pub fn map_binders(&mut self, node: Node, mut f: impl FnMut(&mut Arena, Var) -> Var) -> Node {
        match node {
            Node::Let(x, a, b) => Node::Let(f(self, x), a, b),
            Node::LetTuple(xs, a, b) => {
                let vs: Vec<Var> = self.vars_of(xs).to_vec();
                let vs: Vec<Var> = vs.into_iter().map(|v| f(self, v)).collect();
                Node::LetTuple(self.var_list(&vs), a, b)
            }
            Node::Lambda(xs, body) => {
                let vs: Vec<Var> = self.vars_of(xs).to_vec();
                let vs: Vec<Var> = vs.into_iter().map(|v| f(self, v)).collect();
                Node::Lambda(self.var_list(&vs), body)
            }
            _ => node,
        }
    }

    /// Rebuild `e` from a new node, keeping its span; returns `e` itself if nothing changed.
    pub fn rebuild(&mut self, e: ExprId, node: Node) -> ExprId {
        if node == self[e] {
            e
        } else {
            let span = self.span(e);
            self.add_at(node, span)
        }
    }

    // ---- substitution and renaming ----------------------------------------------------

    /// Replace free occurrences of variables by terms. Thanks to the unique-binder
    /// invariant no capture can happen, so no binder is renamed.
    pub fn subst(&mut self, e: ExprId, map: &HashMap<Var, ExprId>) -> ExprId {
        if map.is_empty() {
            return e;
        }
        let mut memo = HashMap::default();
        self.subst_rec(e, map, &mut memo)
    }

    fn subst_rec(
        &mut self,
        e: ExprId,
        map: &HashMap<Var, ExprId>,
        memo: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        // Leaves (most nodes) directly: a memo entry costs more than the leaf.
        match self[e] {
            Node::Var(v) => return map.get(&v).copied().unwrap_or(e),
            Node::Const(_) | Node::Bool(_) => return e,
            _ => {}
        }
        if let Some(&r) = memo.get(&e) {
            return r;
        }
        let r = with_stack(|| {
            let node = self[e];
            let new = self.map_children(node, |a, c| a.subst_rec(c, map, memo));
            self.rebuild(e, new)
        });
        memo.insert(e, r);
        r
    }

    /// `node` added as a copy of `e`: same position and type (a copy's binders are
    /// renamed, and types do not mention variables, so the type is the copy's too).
    fn copy_node(&mut self, e: ExprId, node: Node) -> ExprId {
        let span = self.span(e);
        let ty = self.node_types[e.index()];
        let c = self.add_at(node, span);
        self.node_types[c.index()] = ty;
        c
    }

    /// A copy of `e` in which every variable bound inside `e` is replaced by a fresh one
    /// (free variables are kept, or renamed by `renaming` if they are in it).
    pub fn copy_fresh(&mut self, e: ExprId) -> ExprId {
        let mut renaming = HashMap::default();
        self.copy_fresh_with(e, &mut renaming)
    }

    /// [`Arena::copy_fresh`] with an initial renaming of free variables. Each binder met is
    /// renamed for its scope only (the body of a function, the rest of a `let`), and
    /// `renaming` is as given when this returns: a term that binds one variable twice (a
    /// function inside the scope of another binding the same variable, as the optimizer's
    /// expansions do with their stand-ins) is copied with every occurrence renamed after
    /// the binder it refers to, into a term whose binders are unique.
    pub fn copy_fresh_with(&mut self, e: ExprId, renaming: &mut HashMap<Var, Var>) -> ExprId {
        with_stack(|| {
            let node = self[e];
            match node {
                Node::Var(v) => match renaming.get(&v) {
                    Some(&w) => self.copy_node(e, Node::Var(w)),
                    None => e,
                },
                Node::Let(..) | Node::LetTuple(..) | Node::Lambda(..) => {
                    // The bound value of a `let` is outside the scope of its binders.
                    let value = match node {
                        Node::Let(_, a, _) | Node::LetTuple(_, a, _) => {
                            Some(self.copy_fresh_with(a, renaming))
                        }
                        _ => None,
                    };
                    let mut saved = Vec::new();
                    let node = self.map_binders(node, |a, v| {
                        let w = a.clone_var(v);
                        saved.push((v, renaming.insert(v, w)));
                        w
                    });
                    let node = match node {
                        Node::Let(x, _, b) => {
                            Node::Let(x, value.expect("copied"), self.copy_fresh_with(b, renaming))
                        }
                        Node::LetTuple(xs, _, b) => Node::LetTuple(
                            xs,
                            value.expect("copied"),
                            self.copy_fresh_with(b, renaming),
                        ),
                        Node::Lambda(xs, b) => Node::Lambda(xs, self.copy_fresh_with(b, renaming)),
                        _ => unreachable!("a binding node"),
                    };
                    for (v, old) in saved.into_iter().rev() {
                        match old {
                            Some(w) => renaming.insert(v, w),
                            None => renaming.remove(&v),
                        };
                    }
                    self.copy_node(e, node)
                }
                _ => {
                    let new = self.map_children(node, |a, c| a.copy_fresh_with(c, renaming));
                    self.copy_node(e, new)
                }
            }
        })
    }

    /// `f` as an accumulation, if it is `(acc, x. let ... in scatter_add(acc, positions,
    /// values))` (or a chain of scatters, of folds of accumulations and of conditionals of
    /// such chains, starting from `acc`) with `acc` read nowhere else:
    /// a fold of it adds every element's values at their positions into one array, which
    /// can be updated in place (the optimizer makes such folds; the cost model and the code
    /// generator recognise them by this).
    pub fn accumulation(&self, f: ExprId) -> Option<Accumulation> {
        let (ps, body) = self.lambda_parts(f)?;
        let &[acc, elem] = ps else {
            return None;
        };
        let Branch { lets, adds } = self.accumulating_branch(body, acc, None)?;
        if adds.is_empty() {
            return None;
        }
        Some(Accumulation {
            acc,
            elem,
            lets,
            adds,
        })
    }

    /// `f` as accumulations into the components of its tuple accumulator, if it is
    /// `(acc, x. let ... in (t0, ..., tk))` with each `tj` a chain of additions (as in
    /// [`Arena::accumulation`]) starting from `acc.j`, and `acc` read nowhere else. A fold
    /// of it adds into each component's array in place: the optimizer joins sibling folds
    /// of accumulations over the same array into one such fold, so that their elements
    /// share what they compute.
    pub fn accumulations(&self, f: ExprId) -> Option<Accumulations> {
        let (ps, body) = self.lambda_parts(f)?;
        let &[acc, elem] = ps else {
            return None;
        };
        let mut lets = Vec::new();
        let mut t = body;
        while let Node::Let(v, e1, rest) = self[t] {
            if self.mentions_any(e1, &[acc]) {
                return None;
            }
            lets.push((v, e1));
            t = rest;
        }
        let Node::Tuple(items) = self[t] else {
            return None;
        };
        let mut parts = Vec::new();
        for (k, &item) in self.exprs(items).iter().enumerate() {
            let mut adds = Vec::new();
            self.additions(item, acc, Some(k as u32), &mut adds)?;
            parts.push(adds);
        }
        if parts.iter().all(Vec::is_empty) {
            return None;
        }
        Some(Accumulations {
            acc,
            elem,
            lets,
            parts,
        })
    }

    /// `t` as `let ... in` additions into `acc` (see [`Arena::accumulation`]), or into its
    /// component `part`: its `let`s (none reading `acc`) and what it adds, in order
    /// (nothing if `t` is `acc` itself).
    fn accumulating_branch(&self, mut t: ExprId, acc: Var, part: Option<u32>) -> Option<Branch> {
        let mut lets = Vec::new();
        while let Node::Let(v, e1, rest) = self[t] {
            if self.mentions_any(e1, &[acc]) {
                return None;
            }
            lets.push((v, e1));
            t = rest;
        }
        let mut adds = Vec::new();
        self.additions(t, acc, part, &mut adds)?;
        Some(Branch { lets, adds })
    }

    /// The additions of the spine `t` (scatters, folds of accumulations and conditionals,
    /// down to `acc`, or to its component `part`), innermost first, pushed to `adds`.
    fn additions(
        &self,
        t: ExprId,
        acc: Var,
        part: Option<u32>,
        adds: &mut Vec<Addition>,
    ) -> Option<()> {
        match self[t] {
            Node::Var(v) if v == acc && part.is_none() => Some(()),
            Node::Proj(k, inner) if Some(k) == part && self[inner] == Node::Var(acc) => Some(()),
            Node::ScatterAdd(base, positions, values) => {
                if self.mentions_any(positions, &[acc]) || self.mentions_any(values, &[acc]) {
                    return None;
                }
                self.additions(base, acc, part, adds)?;
                adds.push(Addition::Scatter { positions, values });
                Some(())
            }
            Node::Foldl(g, start, over) => {
                if self.mentions_any(over, &[acc]) || self.mentions_any(g, &[acc]) {
                    return None;
                }
                self.accumulation(g)?;
                self.additions(start, acc, part, adds)?;
                adds.push(Addition::Fold { f: g, over });
                Some(())
            }
            Node::If(cond, x, y) => {
                if self.mentions_any(cond, &[acc]) {
                    return None;
                }
                let then = self.accumulating_branch(x, acc, part)?;
                let otherwise = self.accumulating_branch(y, acc, part)?;
                adds.push(Addition::Branch {
                    cond,
                    then,
                    otherwise,
                });
                Some(())
            }
            _ => None,
        }
    }

    /// Whether `e` has an occurrence of one of the variables `vs` (free or not). At most one
    /// visit per node of the DAG (and a few hundred visits) per call.
    pub fn mentions_any(&self, e: ExprId, vs: &[Var]) -> bool {
        // A small term is walked as a tree, without a set of the nodes seen (most function
        // bodies the rules ask about are small); past a budget, as a DAG.
        let mut stack: smallvec::SmallVec<[ExprId; 32]> = smallvec::smallvec![e];
        let mut budget = 512;
        while let Some(x) = stack.pop() {
            budget -= 1;
            if budget == 0 {
                return self.mentions_any_dag(e, vs);
            }
            if let Node::Var(v) = self[x] {
                if vs.contains(&v) {
                    return true;
                }
            }
            self.for_each_child(x, |c| stack.push(c));
        }
        false
    }

    fn mentions_any_dag(&self, e: ExprId, vs: &[Var]) -> bool {
        let mut seen = crate::fast_hash::FastSet::default();
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            if !seen.insert(x) {
                continue;
            }
            if let Node::Var(v) = self[x] {
                if vs.contains(&v) {
                    return true;
                }
            }
            self.for_each_child(x, |c| stack.push(c));
        }
        false
    }

    /// Whether `e` has at most `budget` operations (nodes that are not structure, see
    /// [`Node::is_structural`]), each one `allowed` accepts; those counted come off
    /// `budget`. Code that may be copied or repeated is measured so.
    pub fn within_operations(
        &self,
        e: ExprId,
        budget: &mut usize,
        allowed: &dyn Fn(Node) -> bool,
    ) -> bool {
        with_stack(|| {
            let n = self[e];
            if !n.is_structural() {
                if *budget == 0 || !allowed(n) {
                    return false;
                }
                *budget -= 1;
            }
            self.children(e)
                .into_iter()
                .all(|c| self.within_operations(c, budget, allowed))
        })
    }

    /// The free variables of `e`, in order of first occurrence.
    pub fn free_vars(&self, e: ExprId) -> Vec<Var> {
        let mut out = Vec::new();
        let mut seen = crate::fast_hash::FastSet::default();
        let mut bound = crate::fast_hash::FastSet::default();
        self.free_vars_rec(e, &mut bound, &mut seen, &mut out);
        out
    }

    fn free_vars_rec(
        &self,
        e: ExprId,
        bound: &mut crate::fast_hash::FastSet<Var>,
        seen: &mut crate::fast_hash::FastSet<Var>,
        out: &mut Vec<Var>,
    ) {
        with_stack(|| match self[e] {
            Node::Var(v) => {
                if !bound.contains(&v) && seen.insert(v) {
                    out.push(v)
                }
            }
            Node::Let(_, a, b) | Node::LetTuple(_, a, b) => {
                self.free_vars_rec(a, bound, seen, out);
                let bs = self.binders(self[e]);
                let added: Vec<Var> = bs.into_iter().filter(|v| bound.insert(*v)).collect();
                self.free_vars_rec(b, bound, seen, out);
                added.iter().for_each(|v| {
                    bound.remove(v);
                });
            }
            Node::Lambda(_, body) => {
                let bs = self.binders(self[e]);
                let added: Vec<Var> = bs.into_iter().filter(|v| bound.insert(*v)).collect();
                self.free_vars_rec(body, bound, seen, out);
                added.iter().for_each(|v| {
                    bound.remove(v);
                });
            }
            _ => self.for_each_child(e, |c| self.free_vars_rec(c, bound, seen, out)),
        })
    }

    /// How many times each variable occurs (as a `Var` node) in the tree of `e`.
    pub fn occurrences(&self, e: ExprId) -> HashMap<Var, usize> {
        let mut counts = HashMap::default();
        self.count_rec(e, &mut counts);
        counts
    }

    fn count_rec(&self, e: ExprId, counts: &mut HashMap<Var, usize>) {
        with_stack(|| match self[e] {
            Node::Var(v) => *counts.entry(v).or_insert(0) += 1,
            _ => self.for_each_child(e, |c| self.count_rec(c, counts)),
        })
    }

    /// Number of nodes in the tree of `e` (shared subterms counted at every occurrence).
    pub fn tree_size(&self, e: ExprId) -> usize {
        with_stack(|| {
            let mut n = 1;
            self.for_each_child(e, |c| n += self.tree_size(c));
            n
        })
    }
}

/// Alpha-equivalence of `e1` in `a1` and `e2` in `a2`: equal up to the choice of bound
/// variables. `free` pairs the free variables of the two terms.
pub fn alpha_eq(a1: &Arena, e1: ExprId, a2: &Arena, e2: ExprId, free: &HashMap<Var, Var>) -> bool {
    let mut env = free.clone();
    alpha_rec(a1, e1, a2, e2, &mut env)
}

fn alpha_rec(a1: &Arena, e1: ExprId, a2: &Arena, e2: ExprId, env: &mut HashMap<Var, Var>) -> bool {
    use Node::{
        And, App, Array, Bool, Call, Cmp, Const, Foldl, If, Index, Iota, Lambda, Len, Let,
        LetTuple, Map, Map2, Not, OnesLike, Op1, Op2, Or, Proj, Reduce, Scanl, Scanr, ScatterAdd,
        Shift1L, Shift1R, Tuple, ZerosLike,
    };
    with_stack(|| {
        let (n1, n2) = (a1[e1], a2[e2]);
        let list_eq = |l1: ExprList, l2: ExprList, env: &mut HashMap<Var, Var>| {
            let (x1, x2) = (a1.exprs(l1), a2.exprs(l2));
            x1.len() == x2.len()
                && x1
                    .iter()
                    .zip(x2)
                    .all(|(&c1, &c2)| alpha_rec(a1, c1, a2, c2, env))
        };
        let bind = |xs1: &[Var], xs2: &[Var], env: &mut HashMap<Var, Var>| {
            if xs1.len() != xs2.len() {
                return false;
            }
            for (&x1, &x2) in xs1.iter().zip(xs2) {
                env.insert(x1, x2);
            }
            true
        };
        match (n1, n2) {
            (Const(c1), Const(c2)) => c1.to_bits() == c2.to_bits(),
            (Bool(b1), Bool(b2)) => b1 == b2,
            (Node::Var(v1), Node::Var(v2)) => env.get(&v1) == Some(&v2),
            (Let(x1, a, b), Let(x2, c, d)) => {
                alpha_rec(a1, a, a2, c, env)
                    && bind(&[x1], &[x2], env)
                    && alpha_rec(a1, b, a2, d, env)
            }
            (LetTuple(xs1, a, b), LetTuple(xs2, c, d)) => {
                alpha_rec(a1, a, a2, c, env)
                    && bind(a1.vars_of(xs1), a2.vars_of(xs2), env)
                    && alpha_rec(a1, b, a2, d, env)
            }
            (Lambda(xs1, b), Lambda(xs2, d)) => {
                bind(a1.vars_of(xs1), a2.vars_of(xs2), env) && alpha_rec(a1, b, a2, d, env)
            }
            (Tuple(l1), Tuple(l2)) | (Array(l1), Array(l2)) => list_eq(l1, l2, env),
            (Call(f1, l1), Call(f2, l2)) => f1 == f2 && list_eq(l1, l2, env),
            (App(f1, l1), App(f2, l2)) => alpha_rec(a1, f1, a2, f2, env) && list_eq(l1, l2, env),
            (Proj(i, a), Proj(j, c)) => i == j && alpha_rec(a1, a, a2, c, env),
            (Op1(o1, a), Op1(o2, c)) => o1 == o2 && alpha_rec(a1, a, a2, c, env),
            (Op2(o1, a, b), Op2(o2, c, d)) => {
                o1 == o2 && alpha_rec(a1, a, a2, c, env) && alpha_rec(a1, b, a2, d, env)
            }
            (Cmp(o1, a, b), Cmp(o2, c, d)) => {
                o1 == o2 && alpha_rec(a1, a, a2, c, env) && alpha_rec(a1, b, a2, d, env)
            }
            (And(a, b), And(c, d)) | (Or(a, b), Or(c, d)) | (Map(a, b), Map(c, d)) => {
                alpha_rec(a1, a, a2, c, env) && alpha_rec(a1, b, a2, d, env)
            }
            (Not(a), Not(c))
            | (Len(a), Len(c))
            | (ZerosLike(a), ZerosLike(c))
            | (OnesLike(a), OnesLike(c))
            | (Shift1L(a), Shift1L(c))
            | (Shift1R(a), Shift1R(c))
            | (Iota(a), Iota(c)) => alpha_rec(a1, a, a2, c, env),
            (Index(a, b), Index(c, d)) => {
                alpha_rec(a1, a, a2, c, env) && alpha_rec(a1, b, a2, d, env)
            }
            (Node::Derivative(k1, a, l1), Node::Derivative(k2, c, l2)) => {
                k1 == k2 && alpha_rec(a1, a, a2, c, env) && list_eq(l1, l2, env)
            }
            (If(a, b, c), If(d, e, f))
            | (ScatterAdd(a, b, c), ScatterAdd(d, e, f))
            | (Map2(a, b, c), Map2(d, e, f))
            | (Reduce(a, b, c), Reduce(d, e, f))
            | (Foldl(a, b, c), Foldl(d, e, f))
            | (Scanl(a, b, c), Scanl(d, e, f))
            | (Scanr(a, b, c), Scanr(d, e, f)) => {
                alpha_rec(a1, a, a2, d, env)
                    && alpha_rec(a1, b, a2, e, env)
                    && alpha_rec(a1, c, a2, f, env)
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_equivalence_sees_through_indexing_positions_and_scatters() {
        let mut a = Arena::new();
        let s = a.fresh_var("s", None);
        let n = a.fresh_var("n", None);
        // `map (j. s[j]) (iota n)`, built twice with different bound variables.
        let positions_read = |a: &mut Arena| {
            let j = a.fresh_var("j", None);
            let (sv, jv, nv) = (a.var(s), a.var(j), a.var(n));
            let read = a.add(Node::Index(sv, jv));
            let f = a.lambda(&[j], read);
            let iota = a.add(Node::Iota(nv));
            a.add(Node::Map(f, iota))
        };
        let (e1, e2) = (positions_read(&mut a), positions_read(&mut a));
        let free: HashMap<Var, Var> = [(s, s), (n, n)].into_iter().collect();
        assert!(alpha_eq(&a, e1, &a, e2, &free));
        let sv = a.var(s);
        let (sc1, sc2) = (
            a.add(Node::ScatterAdd(sv, e1, e1)),
            a.add(Node::ScatterAdd(sv, e2, e2)),
        );
        assert!(alpha_eq(&a, sc1, &a, sc2, &free));
        // A different array read is a different term.
        let nv = a.var(n);
        let other = a.add(Node::Index(nv, nv));
        let sv = a.var(s);
        let read = a.add(Node::Index(sv, nv));
        assert!(!alpha_eq(&a, other, &a, read, &free));
    }

    #[test]
    fn an_expr_memo_answers_what_was_inserted_also_for_nodes_made_after_it() {
        let mut a = Arena::new();
        let x = a.constant(1.0);
        let y = a.constant(2.0);
        let mut memo = ExprMemo::for_arena(&a);
        assert_eq!(memo.get(x), None);
        memo.insert(x, y);
        assert_eq!(memo.get(x), Some(y));
        assert_eq!(memo.get(y), None);
        // Nodes made after the memo: its table grows.
        let later: Vec<ExprId> = (0..100).map(|i| a.constant(i as f64 + 10.0)).collect();
        assert_eq!(memo.get(later[99]), None);
        memo.insert(later[99], x);
        memo.insert(later[3], later[4]);
        assert_eq!(memo.get(later[99]), Some(x));
        assert_eq!(memo.get(later[3]), Some(later[4]));
        assert_eq!(memo.get(later[50]), None);
        assert_eq!(memo.get(x), Some(y));
        // The first node is id 0: a slot, not the empty marker.
        let mut fresh = ExprMemo::default();
        let first = ExprId(0);
        fresh.insert(first, first);
        assert_eq!(fresh.get(first), Some(first));
    }

    #[test]
    fn negated_constants_fold_at_construction() {
        let mut a = Arena::new();
        let two = a.constant(2.0);
        let neg = a.op1(UnOp::Neg, two);
        assert_eq!(a[neg], Node::Const(-2.0));
    }

    #[test]
    fn copy_fresh_renames_bound_variables_only() {
        let mut a = Arena::new();
        let free = a.fresh_var("y", Some(Type::Real));
        let x = a.fresh_var("x", Some(Type::Real));
        let (ex, ey) = (a.var(x), a.var(free));
        let sum = a.op2(BinOp::Add, ex, ey);
        let one = a.constant(1.0);
        let e = a.let_(x, one, sum);
        let c = a.copy_fresh(e);
        assert_ne!(c, e);
        let Node::Let(x2, _, _) = a[c] else {
            panic!("copy of a let is a let")
        };
        assert_ne!(x2, x);
        assert_eq!(a.free_vars(c), vec![free]);
        let free_map = HashMap::from_iter([(free, free)]);
        assert!(alpha_eq(&a, e, &a, c, &free_map));
    }

    /// A variable bound again inside its own scope (the optimizer's expansions bind one
    /// stand-in per depth): each occurrence is renamed after the binder it refers to, and
    /// the binders of the copy are unique.
    #[test]
    fn copy_fresh_respects_inner_binders_of_the_same_variable() {
        let mut a = Arena::new();
        let s = a.fresh_var("s", Some(Type::Real));
        // fun (s) -> (let s = s * 2 in s) + map (s. s) s + s
        let es = a.var(s);
        let two = a.constant(2.0);
        let twice = a.op2(BinOp::Mul, es, two);
        let inner_let = a.let_(s, twice, es);
        let id = a.lambda(&[s], es);
        let mapped = a.add(Node::Map(id, es));
        let sum = a.op2(BinOp::Add, inner_let, mapped);
        let body = a.op2(BinOp::Add, sum, es);
        let f = a.lambda(&[s], body);
        let c = a.copy_fresh(f);
        let (ps, cbody) = a.lambda_parts(c).map(|(p, b)| (p.to_vec(), b)).unwrap();
        let outer = ps[0];
        // Every free occurrence in the body is the outer parameter's copy.
        assert_eq!(a.free_vars(cbody), vec![outer]);
        let Node::Op2(_, csum, last) = a[cbody] else {
            panic!("a sum")
        };
        assert_eq!(a[last], Node::Var(outer));
        let Node::Op2(_, clet, cmapped) = a[csum] else {
            panic!("a sum")
        };
        let Node::Let(x, value, rest) = a[clet] else {
            panic!("a let")
        };
        assert_eq!(a.free_vars(value), vec![outer]);
        assert_eq!(a[rest], Node::Var(x));
        let Node::Map(cid, operand) = a[cmapped] else {
            panic!("a map")
        };
        assert_eq!(a[operand], Node::Var(outer));
        let (ips, ibody) = a.lambda_parts(cid).map(|(p, b)| (p.to_vec(), b)).unwrap();
        assert_eq!(a[ibody], Node::Var(ips[0]));
        let mut binders = vec![outer, x, ips[0]];
        binders.sort();
        binders.dedup();
        assert_eq!(binders.len(), 3);
        assert!(!binders.contains(&s));
    }

    #[test]
    fn subst_replaces_free_occurrences() {
        let mut a = Arena::new();
        let x = a.fresh_var("x", None);
        let y = a.fresh_var("y", None);
        let ex = a.var(x);
        let e = a.op2(BinOp::Mul, ex, ex);
        let ey = a.var(y);
        let r = a.subst(e, &HashMap::from_iter([(x, ey)]));
        assert_eq!(a.free_vars(r), vec![y]);
        assert_eq!(a.occurrences(r)[&y], 2);
    }

    #[test]
    fn deep_terms_do_not_overflow_the_stack() {
        let mut a = Arena::new();
        let mut e = a.constant(0.0);
        for _ in 0..200_000 {
            let one = a.constant(1.0);
            e = a.op2(BinOp::Add, one, e);
        }
        assert_eq!(a.tree_size(e), 400_001);
        let c = a.copy_fresh(e);
        assert!(alpha_eq(&a, e, &a, c, &HashMap::default()));
    }
}
