//! The exact run-time shapes of terms (array lengths, see [`crate::len`]) as far as the
//! pass knows them, and what rules ask of them: whether one array is never longer than
//! another, a parameter as long as a term, the constant components of array elements.

use unfad_syntax::{with_stack, BinOp, ExprId, Node, Var};

use super::Simplifier;
use crate::len::{Len, Shape};

/// The components of a tuple known to be constants (`None` for the others).
pub(super) type Parts = Vec<Option<ExprId>>;

impl Simplifier<'_> {
    /// Record the shape of variable `v` (an administrative pass keeps none).
    pub(super) fn set_shape(&mut self, v: Var, shape: Shape) {
        if self.light {
            return;
        }
        // A variable without an entry is of unknown shape (every real): most bindings of
        // a long program are reals, and their entries would only grow the table.
        if shape == Shape::Unknown {
            self.shapes.remove(&v);
        } else {
            self.shapes.insert(v, shape);
        }
    }

    /// The exact run-time length of an array term, if known.
    pub(super) fn len_of(&self, e: ExprId) -> Option<Len> {
        self.shape_of(e).len()
    }

    /// The exact run-time shape of a term, as far as known: its spine is followed through
    /// tuples, fills, maps (the shape of their function's body for the operands'
    /// elements), folds and scans (the shape their accumulator keeps), shifts, `let` and
    /// `if`.
    pub(super) fn shape_of(&self, e: ExprId) -> Shape {
        if self.light {
            return Shape::Unknown;
        }
        self.shape_in(e, &mut Vec::new())
    }

    /// [`Simplifier::shape_of`] with the shapes `env` of the parameters of the functions
    /// being walked through (innermost last).
    pub(super) fn shape_in(&self, e: ExprId, env: &mut Vec<(Var, Shape)>) -> Shape {
        // Outside functions a term's shape depends on nothing but the term: memoized,
        // where finding it walks further than the node (scalar operations, variables and
        // constants are answered at once, and most nodes are those).
        let walks = !matches!(
            self.arena[e],
            Node::Var(_)
                | Node::Const(_)
                | Node::Bool(_)
                | Node::Op1(..)
                | Node::Op2(..)
                | Node::Cmp(..)
                | Node::Not(_)
                | Node::And(..)
                | Node::Or(..)
        );
        if env.is_empty() && walks {
            if let Some(s) = self.shape_memo.borrow().get(&e) {
                return s.clone();
            }
            let s = self.shape_walk(e, env);
            self.shape_memo.borrow_mut().insert(e, s.clone());
            return s;
        }
        self.shape_walk(e, env)
    }

    pub(super) fn shape_walk(&self, e: ExprId, env: &mut Vec<(Var, Shape)>) -> Shape {
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
            Node::Index(a, _) => self.shape_in(a, env).elem(),
            Node::ScatterAdd(z, _, _) => self.shape_in(z, env),
            Node::Iota(k) => {
                // A whole constant, or the length of an array plus or minus a whole
                // constant `c` (`iota (len(x) - 1)`, the positions of a difference):
                // `max(len + c, 0)`, as an `iota` of a negative size is empty.
                let whole = |e: ExprId| match self.arena[e] {
                    Node::Const(c) if c.fract() == 0.0 && c.abs() < 1e15 => Some(c as i64),
                    _ => None,
                };
                let len = match self.arena[k] {
                    Node::Const(c) if c >= 0.0 && c.fract() == 0.0 => Some(Len::constant(c as u64)),
                    Node::Len(a) => self.shape_in(a, env).len(),
                    Node::Op2(op @ (BinOp::Add | BinOp::Sub), x, y) => {
                        match (self.arena[x], whole(y), whole(x), self.arena[y]) {
                            (Node::Len(a), Some(c), _, _) => {
                                let c = if op == BinOp::Sub { -c } else { c };
                                self.shape_in(a, env).len().map(|l| l.step(c))
                            }
                            (_, _, Some(c), Node::Len(a)) if op == BinOp::Add => {
                                self.shape_in(a, env).len().map(|l| l.step(c))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                Shape::array(len, Shape::Unknown)
            }
            _ => Shape::Unknown,
        })
    }

    /// The shape of the body of the function argument `f` for parameters of the given
    /// shapes.
    pub(super) fn apply_shape(
        &self,
        f: ExprId,
        params: &[Shape],
        env: &mut Vec<(Var, Shape)>,
    ) -> Shape {
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
    pub(super) fn fold_shape(
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
    pub(super) fn fold_param_shapes(
        &mut self,
        f: ExprId,
        z: ExprId,
        elem: Shape,
        right: bool,
    ) -> Vec<Shape> {
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

    /// The constant component `i` of the tuple variable `v`, if known (an element of an
    /// array of tuples whose components `i` are all that constant).
    pub(super) fn constant_part(&self, v: Var, i: usize) -> Option<ExprId> {
        self.constant_parts.get(&v)?.get(i).copied().flatten()
    }

    /// The constant components of the elements of the array `a`, when they are tuples:
    /// `map (x. (0, x, 1)) A` has components 0 and 2 constant.
    pub(super) fn columns_of(&self, a: ExprId) -> Option<Parts> {
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
    pub(super) fn is_constant(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Const(_) => true,
            Node::Tuple(l) => self.arena.exprs(l).iter().all(|&i| self.is_constant(i)),
            _ => false,
        }
    }

    /// A parameter that is an array of reals exactly as long as `e`, if any.
    pub(super) fn param_of_len(&self, e: ExprId) -> Option<Var> {
        let l = self.len_of(e)?;
        self.real_array_params
            .iter()
            .find(|(pl, _)| pl.le(&l) && l.le(pl))
            .map(|(_, p)| *p)
    }

    /// A parameter (an array of any type) exactly as long as `e`, if any.
    pub(super) fn array_param_of_len(&self, e: ExprId) -> Option<Var> {
        let l = self.len_of(e)?;
        self.array_params
            .iter()
            .find(|(pl, _)| pl.le(&l) && l.le(pl))
            .map(|(_, p)| *p)
    }

    /// True if `a` is provably never longer than `b` at run time.
    pub(super) fn not_longer(&self, a: ExprId, b: ExprId) -> bool {
        a == b
            || matches!((self.len_of(a), self.len_of(b)), (Some(x), Some(y)) if x.le(&y))
            || self.bounded_by(a, b)
            || matches!(self.arena[b], Node::ZerosLike(w) | Node::OnesLike(w) | Node::Map(_, w)
                if self.not_longer(a, w))
    }

    /// `a` is never longer than `b` by its structure, whatever the lengths: a fill or a
    /// `map` has its operand's length, a `map2` stops at its shorter operand, a scatter has
    /// its target's, a conditional one of its branches', and a fold whose function maps
    /// over the accumulator is never longer than its initial value.
    pub(super) fn bounded_by(&self, a: ExprId, b: ExprId) -> bool {
        with_stack(|| match self.arena[a] {
            Node::ZerosLike(x) | Node::OnesLike(x) | Node::Map(_, x) => self.not_longer(x, b),
            Node::ScatterAdd(x, _, _) | Node::Let(_, _, x) | Node::LetTuple(_, _, x) => {
                self.not_longer(x, b)
            }
            Node::If(_, x, y) => self.not_longer(x, b) && self.not_longer(y, b),
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
}
