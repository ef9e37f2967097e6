//! The cost model of the paper's Figure "Cost model for the restricted target language",
//! the nesting of array operations (NAO), and the cheap-gradient bound of Theorem
//! "complexity": `Cost(grad e) <= 4 * 3^p * Cost(e)` with `p = NAO(e)`.
//!
//! **How the bound is compared.** The paper states the bound on cost vectors (MOVES,
//! ADDS, MULTS, NLOPS). Read component-wise it cannot hold: the gradient of `sin(x) * x`,
//! `cos(x) * x + sin(x)`, has an addition where the program has none (the product rule
//! turns multiplications into additions), and `4 * 3^p * 0 = 0`. The theorem follows
//! Griewank's cheap-gradient principle, whose complexity is a weighted sum of the
//! elementary operations; we check the bound on the sum with unit weights,
//! `MOVES + ADDS + MULTS + NLOPS` ([`Cost::total`]), and report every component too.
//!
//! Arguments: [`Bound::measure`] adds one move per real of the parameters to both costs
//! (reading the arguments in), for the reason given there.
//!
//! Sizes: the `n` of an array operation is the length of its operand, from the operand's
//! type with the size variables at given values. Choices for constructs the figure does
//! not list: a comparison or `max`/`min` costs like an addition, negation and `abs` are
//! additions, `/` is a multiplication, `pow`/`atan2` are non-linear; `if` costs its
//! condition, one move, and the dearer branch; `zeros_like(e)`/`ones_like(e)` are fills
//! of `e`'s size (their operand only gives a shape, it is not computed), `len(e)` one move;
//! an array literal moves each element; `map` is costed like `map2`, `foldl` like `reduce`.

use std::fmt;
use std::ops::{Add, Mul};

use unfad_syntax::{with_stack, Addition, Arena, BinOp, ExprId, Func, Node, Type, UnOp, Var};

/// A cost vector: MOVES, ADDS, MULTS, NLOPS.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub moves: u64,
    pub adds: u64,
    pub mults: u64,
    pub nlops: u64,
}

impl Cost {
    pub const fn new(moves: u64, adds: u64, mults: u64, nlops: u64) -> Cost {
        Cost {
            moves,
            adds,
            mults,
            nlops,
        }
    }

    /// The weighted sum the bound is checked on (unit weights).
    pub fn total(&self) -> u64 {
        self.moves
            .saturating_add(self.adds)
            .saturating_add(self.mults)
            .saturating_add(self.nlops)
    }

    /// Component-wise maximum (the dearer branch of a conditional).
    pub fn max(self, o: Cost) -> Cost {
        Cost::new(
            self.moves.max(o.moves),
            self.adds.max(o.adds),
            self.mults.max(o.mults),
            self.nlops.max(o.nlops),
        )
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost::new(
            self.moves.saturating_add(o.moves),
            self.adds.saturating_add(o.adds),
            self.mults.saturating_add(o.mults),
            self.nlops.saturating_add(o.nlops),
        )
    }
}

impl Mul<u64> for Cost {
    type Output = Cost;
    fn mul(self, n: u64) -> Cost {
        Cost::new(
            self.moves.saturating_mul(n),
            self.adds.saturating_mul(n),
            self.mults.saturating_mul(n),
            self.nlops.saturating_mul(n),
        )
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(MOVES {}, ADDS {}, MULTS {}, NLOPS {})",
            self.moves, self.adds, self.mults, self.nlops
        )
    }
}

const MOVE: Cost = Cost::new(1, 0, 0, 0);

fn unary_cost(op: UnOp) -> Cost {
    match op {
        UnOp::Neg | UnOp::Abs => Cost::new(2, 1, 0, 0),
        _ => Cost::new(2, 0, 0, 1),
    }
}

fn binary_cost(op: BinOp) -> Cost {
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Max | BinOp::Min => Cost::new(3, 1, 0, 0),
        BinOp::Mul | BinOp::Div => Cost::new(3, 0, 1, 0),
        // A division and a rounding (and, for the remainder, a multiplication and a
        // subtraction): counted as one multiplication.
        BinOp::IntDiv | BinOp::Rem => Cost::new(3, 0, 1, 0),
        // The partial derivatives of `pow`, `atan2`, `max` and `min` are primitives of
        // their own, one NLOP each, as the paper's Theorem "complexity" assumes.
        BinOp::Pow | BinOp::Atan2 | BinOp::Partial(_) => Cost::new(3, 0, 0, 1),
    }
}

/// Whether `e` performs a non-linear operation (NLOPS in the model: the transcendental
/// functions, `sqrt`, `pow`, `atan2`), the operations dear enough that reading a stored
/// result is cheaper than computing them again.
pub fn has_nonlinear(arena: &Arena, e: ExprId) -> bool {
    with_stack(|| match arena[e] {
        Node::Op1(op, x) => unary_cost(op).nlops > 0 || has_nonlinear(arena, x),
        Node::Op2(op, x, y) => {
            binary_cost(op).nlops > 0 || has_nonlinear(arena, x) || has_nonlinear(arena, y)
        }
        _ => {
            let mut found = false;
            arena.for_each_child(e, |c| found = found || has_nonlinear(arena, c));
            found
        }
    })
}

/// The cost of evaluating `e` in `arena` once, with size variables valued by `sizes`.
/// `e` must be first-order and typed (see [`crate::check_first_order`]).
pub fn cost_of(arena: &Arena, e: ExprId, sizes: &dyn Fn(&str) -> Option<u64>) -> Cost {
    Coster { arena, sizes }.cost(e)
}

struct Coster<'a> {
    arena: &'a Arena,
    sizes: &'a dyn Fn(&str) -> Option<u64>,
}

impl Coster<'_> {
    fn ty(&self, e: ExprId) -> Option<&Type> {
        match self.arena[e] {
            Node::Var(v) => self.arena.var_type(v),
            _ => self.arena.type_of(e),
        }
    }

    /// Length of the array `e` (0 if unknown, which only under-counts).
    /// The cost of reading one element of the array `x`: a bounds check and a read, or, for
    /// a `map` (`map2`) or `iota` written in place, its function's body on the element(s)
    /// read from its operand(s), which is all the code generator computes of it.
    fn read(&self, x: ExprId) -> Cost {
        let a = self.arena;
        match a[x] {
            Node::Map(f, y) => self.body(f) + self.read(y),
            Node::Map2(f, y, z) => self.body(f) + self.read(y) + self.read(z),
            Node::Iota(n) => MOVE + self.cost(n),
            _ => Cost::new(3, 1, 0, 0) + self.cost(x),
        }
    }

    fn len(&self, e: ExprId) -> u64 {
        match self.ty(e) {
            Some(Type::Array(n, _)) => n.eval(self.sizes).unwrap_or(0),
            _ => 0,
        }
    }

    /// Number of reals in a value of `e`'s type.
    fn leaves(&self, e: ExprId) -> u64 {
        self.ty(e)
            .and_then(|t| t.leaf_count(self.sizes))
            .unwrap_or(1)
    }

    /// Number of reals in one element of the array `e`.
    fn leaves_elem(&self, e: ExprId) -> u64 {
        match self.ty(e) {
            Some(Type::Array(_, elem)) => elem.leaf_count(self.sizes).unwrap_or(1),
            _ => 1,
        }
    }

    /// Cost of one element of a fold of the accumulation `f` (see
    /// [`unfad_syntax::Arena::accumulation`]), which updates its array in place: its `let`s,
    /// and per addition the positions and values (a move and an add per real) or the nested
    /// fold's elements.
    fn accumulation_step(&self, f: ExprId) -> Cost {
        let Some(acc) = self.arena.accumulation(f) else {
            return self.body(f);
        };
        self.branch_cost(&acc.lets, &acc.adds) + Cost::new(2, 0, 0, 0)
    }

    /// Cost of one element of a fold of the accumulations `f` into the components of a
    /// tuple (see [`unfad_syntax::Arena::accumulations`]), each updated in place: the
    /// shared `let`s once, then each component's additions.
    fn accumulations_step(&self, f: ExprId) -> Cost {
        let Some(acc) = self.arena.accumulations(f) else {
            return self.body(f);
        };
        let parts = acc
            .parts
            .iter()
            .fold(Cost::default(), |c, adds| c + self.branch_cost(&[], adds));
        self.branch_cost(&acc.lets, &[]) + parts + Cost::new(2, 0, 0, 0)
    }

    /// Cost of `let`s and then additions into an accumulator in place (a conditional one
    /// costs its condition and its dearer branch).
    fn branch_cost(&self, lets: &[(Var, ExprId)], adds: &[Addition]) -> Cost {
        let adds = adds.iter().fold(Cost::default(), |c, add| match add {
            &Addition::Scatter { positions, values } => {
                let per = Cost::new(3, 1, 0, 0) + Cost::new(3, 1, 0, 0) * self.leaves_elem(values);
                c + self.cost(positions) + self.cost(values) + per * self.len(positions)
            }
            &Addition::Fold { f, over } => {
                c + self.accumulation_step(f) * self.len(over) + self.cost(over)
            }
            Addition::Branch {
                cond,
                then,
                otherwise,
            } => {
                let then = self.branch_cost(&then.lets, &then.adds);
                let otherwise = self.branch_cost(&otherwise.lets, &otherwise.adds);
                c + MOVE + self.cost(*cond) + then.max(otherwise)
            }
        });
        lets.iter()
            .fold(Cost::default(), |c, &(_, e1)| c + MOVE + self.cost(e1))
            + adds
    }

    /// Cost of one call of a function argument (its body).
    fn body(&self, f: ExprId) -> Cost {
        match self.arena.lambda_parts(f) {
            Some((_, body)) => self.cost(body),
            None => Cost::default(),
        }
    }

    fn cost(&self, e: ExprId) -> Cost {
        with_stack(|| {
            let a = self.arena;
            match a[e] {
                Node::Const(_) | Node::Bool(_) | Node::Var(_) => MOVE,
                Node::Let(_, x, body) | Node::LetTuple(_, x, body) => {
                    // let chains are walked in a loop
                    let mut total = MOVE + self.cost(x);
                    let mut cur = body;
                    while let Node::Let(_, x2, b2) | Node::LetTuple(_, x2, b2) = a[cur] {
                        total = total + MOVE + self.cost(x2);
                        cur = b2;
                    }
                    total + self.cost(cur)
                }
                Node::Tuple(l) | Node::Array(l) => {
                    let items = a
                        .exprs(l)
                        .iter()
                        .fold(Cost::default(), |acc, &i| acc + self.cost(i));
                    if matches!(a[e], Node::Array(_)) {
                        items + MOVE * l.len() as u64
                    } else {
                        items
                    }
                }
                Node::Proj(_, x) => MOVE + self.cost(x),
                Node::Op1(op, x) => unary_cost(op) + self.cost(x),
                Node::Op2(op, x, y) => binary_cost(op) + self.cost(x) + self.cost(y),
                Node::Cmp(_, x, y) | Node::And(x, y) | Node::Or(x, y) => {
                    Cost::new(3, 1, 0, 0) + self.cost(x) + self.cost(y)
                }
                Node::Not(x) => Cost::new(2, 1, 0, 0) + self.cost(x),
                Node::If(c, x, y) => MOVE + self.cost(c) + self.cost(x).max(self.cost(y)),
                Node::Len(_) => MOVE,
                Node::ZerosLike(x) | Node::OnesLike(x) => MOVE * self.leaves(x),
                Node::Map(f, x) => {
                    (self.body(f) + Cost::new(2, 0, 0, 0)) * self.len(x) + self.cost(x)
                }
                Node::Map2(f, x, y) => {
                    (self.body(f) + Cost::new(2, 0, 0, 0)) * self.len(x).min(self.len(y))
                        + self.cost(x)
                        + self.cost(y)
                }
                // A fold whose body scatters into its accumulator updates it in place (the
                // code generator's accumulation): no copy per element.
                Node::Foldl(f, z, x) if a.accumulation(f).is_some() => {
                    self.accumulation_step(f) * self.len(x)
                        + self.cost(z)
                        + self.cost(x)
                        + MOVE * self.leaves(z)
                }
                // Sibling folds of accumulations joined: each component in place.
                Node::Foldl(f, z, x) if a.accumulations(f).is_some() => {
                    self.accumulations_step(f) * self.len(x)
                        + self.cost(z)
                        + self.cost(x)
                        + MOVE * self.leaves(z)
                }
                Node::Reduce(f, z, x) | Node::Foldl(f, z, x) => {
                    (self.body(f) + Cost::new(2, 0, 0, 0)) * self.len(x)
                        + self.cost(z)
                        + self.cost(x)
                }
                Node::Scanl(f, z, x) | Node::Scanr(f, z, x) => {
                    (self.body(f) + Cost::new(3, 0, 0, 0)) * self.len(x)
                        + self.cost(z)
                        + self.cost(x)
                }
                Node::Shift1L(x) | Node::Shift1R(x) => self.cost(x) + MOVE * self.len(x),
                // Its elements are written (when it is not fused into its consumer).
                Node::Iota(x) => self.cost(x) + MOVE * self.len(e),
                // A comparison (the bounds check) and a read; of a map written there, the
                // one element read, computed where it is read (as the code generator does).
                Node::Index(x, i) => self.read(x) + self.cost(i),
                // The target copied once, then per position a bounds check, a read of each
                // leaf and an addition into it.
                Node::ScatterAdd(z, i, v) => {
                    let per = Cost::new(3, 1, 0, 0) + Cost::new(3, 1, 0, 0) * self.leaves_elem(v);
                    self.cost(z)
                        + self.cost(i)
                        + self.cost(v)
                        + MOVE * self.leaves(z)
                        + per * self.len(i)
                }
                // Not first-order: costed as their bodies, so that a report still shows something.
                Node::Lambda(_, body) => self.cost(body),
                Node::App(f, l) | Node::Derivative(_, f, l) => a
                    .exprs(l)
                    .iter()
                    .fold(self.cost(f), |acc, &i| acc + self.cost(i)),
                Node::Call(_, l) => a
                    .exprs(l)
                    .iter()
                    .fold(Cost::default(), |acc, &i| acc + self.cost(i)),
            }
        })
    }
}

/// NAO, the nesting of array operations of a Source term (the paper's definition,
/// extended to `map`, `foldl` and the scans like `map2` and `reduce`, and to `if`).
pub fn nao(arena: &Arena, e: ExprId) -> u32 {
    with_stack(|| {
        let kids = arena.children(e);
        match arena[e] {
            Node::Map(f, x) => {
                let body = arena.lambda_parts(f).map_or(0, |(_, b)| nao(arena, b));
                (1 + body).max(nao(arena, x))
            }
            Node::Map2(f, x, y)
            | Node::Reduce(f, x, y)
            | Node::Foldl(f, x, y)
            | Node::Scanl(f, x, y)
            | Node::Scanr(f, x, y) => {
                let body = arena.lambda_parts(f).map_or(0, |(_, b)| nao(arena, b));
                (1 + body).max(nao(arena, x)).max(nao(arena, y))
            }
            _ => kids.into_iter().map(|k| nao(arena, k)).max().unwrap_or(0),
        }
    })
}

/// The measured cost of a program and of its gradient, and the bound they must satisfy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    pub primal: Cost,
    pub gradient: Cost,
    /// NAO of the program.
    pub p: u32,
}

impl Bound {
    /// The costs of `source` and of `gradient`, its optimized value and gradient, with size
    /// variables valued by `sizes`, and `p = NAO(source)`. Both costs include moving the
    /// arguments in (one move per real leaf of the parameters), as Griewank's evaluation
    /// procedures start by copying the independent variables: without it a program that
    /// ignores a large parameter would cost less than writing that parameter's gradient
    /// (zeros), and no constant could bound the ratio.
    pub fn measure(
        arena: &Arena,
        source: &Func,
        gradient: &Func,
        sizes: &dyn Fn(&str) -> Option<u64>,
    ) -> Bound {
        let inputs: u64 = source
            .params
            .iter()
            .filter_map(|&p| arena.var_type(p)?.leaf_count(sizes))
            .sum();
        let arguments = MOVE * inputs;
        Bound {
            primal: cost_of(arena, source.body, sizes) + arguments,
            gradient: cost_of(arena, gradient.body, sizes) + arguments,
            p: nao(arena, source.body),
        }
    }

    /// That the gradient's cost grows like the program's: from sizes 100 to 1000 (every
    /// size variable), at most 3 times the program's growth. A term with an extra factor
    /// of a size (O(n^2) in the gradient of an O(n) program, an array per element) grows
    /// 10 times faster; terms of the same order in other proportions (moving a matrix in,
    /// filling its zero gradient) less. The property tests' check, in one place.
    pub fn same_growth(arena: &Arena, source: &Func, gradient: &Func) -> Result<(), String> {
        let at = |n: u64| {
            let sizes = move |_: &str| Some(n);
            Bound::measure(arena, source, gradient, &sizes)
        };
        let (small, large) = (at(100), at(1000));
        let primal = large.primal.total() as f64 / small.primal.total().max(1) as f64;
        let grad = large.gradient.total() as f64 / small.gradient.total().max(1) as f64;
        if grad <= 3.0 * primal {
            Ok(())
        } else {
            Err(format!(
                "the gradient's cost grows {grad:.2}x from size 100 to 1000, the program's {primal:.2}x"
            ))
        }
    }

    /// `4 * 3^p`.
    pub fn factor(&self) -> u64 {
        4 * 3u64.saturating_pow(self.p)
    }

    /// `Cost(grad e) / Cost(e)` on the weighted sum.
    pub fn ratio(&self) -> f64 {
        self.gradient.total() as f64 / (self.primal.total().max(1)) as f64
    }

    /// Whether `Cost(grad e) <= 4 * 3^p * Cost(e)` on the weighted sum.
    pub fn holds(&self) -> bool {
        self.gradient.total() <= self.factor().saturating_mul(self.primal.total())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unfad_syntax::Program;

    fn measure(src: &str, n: u64) -> (Cost, u32) {
        let mut prog = Program::load(src).unwrap();
        let f = prog.inline(prog.entry(None).unwrap()).unwrap();
        let sizes = move |v: &str| Some(if v == "m" { 3 } else { n });
        (
            cost_of(&prog.arena, f.body, &sizes),
            nao(&prog.arena, f.body),
        )
    }

    #[test]
    fn scalar_terms_cost_what_the_figure_says() {
        // x * y: Cost(*) + Cost(x) + Cost(y) = (3,0,1,0) + (1,0,0,0) + (1,0,0,0)
        assert_eq!(
            measure("def f(x: real, y: real) = x * y", 0),
            (Cost::new(5, 0, 1, 0), 0)
        );
        // let w = sin(x) in w + 1: 1 + ((2,0,0,1) + 1) + ((3,1,0,0) + 1 + 1)
        assert_eq!(
            measure("def f(x: real) = let w = sin(x) in w + 1", 0),
            (Cost::new(9, 1, 0, 1), 0)
        );
        // fst (x, y): 1 + 1 + 1
        assert_eq!(
            measure("def f(x: real, y: real) = fst (x, y)", 0),
            (Cost::new(3, 0, 0, 0), 0)
        );
    }

    #[test]
    fn array_operations_scale_with_the_size() {
        // reduce + 0 A: n * (Cost(x + y) + (2,0,0,0)) + Cost(0) + Cost(A)
        assert_eq!(
            measure("def f(A: [n]real) = reduce + 0 A", 10),
            (Cost::new(72, 10, 0, 0), 1)
        );
        // dot: n*(5+2 moves, 1 add) + 1 + n*(5+2 moves, 1 mult) + 1 + 1
        assert_eq!(
            measure(
                "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)",
                10
            ),
            (Cost::new(143, 10, 10, 0), 1)
        );
        // scanl costs 3 moves per element, a shift n moves
        assert_eq!(
            measure("def f(A: [n]real) = shift1L (scanl + 0 A)", 4),
            (Cost::new(4 * 8 + 2 + 5, 4, 0, 0), 1)
        );
    }

    #[test]
    fn a_read_of_a_map_written_there_computes_one_element() {
        // (map (x. x * 2) A)[i]: the body on one element read from A, not n of them, so
        // the same at every size.
        let read = "def f(A: [n]real, i: int) = (map (x. x * 2) A)[i]";
        assert_eq!(measure(read, 10).0, measure(read, 1000).0);
        // A bound map is made whole once, then read.
        let bound = "def f(A: [n]real, i: int) = let B = map (x. x * 2) A in B[i]";
        assert!(measure(bound, 1000).0.total() > 100 * measure(bound, 10).0.total() / 10);
    }

    #[test]
    fn nesting_of_array_operations() {
        assert_eq!(measure("def f(x: real) = x * 2", 0).1, 0);
        assert_eq!(
            measure(
                "def f(M: [n][m]real) = reduce + 0 (map (r. reduce + 0 r) M)",
                2
            )
            .1,
            2
        );
        // an array operation beside another in a body does not nest
        assert_eq!(measure("def f(M: [n][m]real, A: [n]real) = reduce + 0 (map2 (r, a. a * reduce max 0 (map (x. x * a) r)) M A)", 2).1, 2);
        let three = "def f(M: [n][m]real) = reduce + 0 (map (r. reduce + 0 (map (x. reduce max 0 (map (y. x * y) r)) r)) M)";
        assert_eq!(measure(three, 2).1, 3);
    }

    #[test]
    fn the_bound_is_checked_on_the_weighted_sum() {
        let b = Bound {
            primal: Cost::new(5, 0, 1, 0),
            gradient: Cost::new(20, 1, 2, 0),
            p: 0,
        };
        assert_eq!(b.factor(), 4);
        assert!(b.holds());
        assert!((b.ratio() - 23.0 / 6.0).abs() < 1e-12);
        assert!(!Bound {
            gradient: Cost::new(30, 0, 0, 0),
            ..b
        }
        .holds());
    }
}
