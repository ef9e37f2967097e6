//! Random well-typed programs for property tests.
//!
//! [`generate`] writes a program in the surface syntax (so the parser is exercised too),
//! with a JSON input for its entry point. The generator tracks the variables in scope
//! and their types, so every program type-checks; [`Features`] chooses the constructs, so
//! each stage can ask for the fragment it supports. Partial operators get arguments kept
//! inside their domains (`log(x*x + 1)`), and values stay moderate, so gradients are
//! finite and comparable with finite differences.
//!
//! ```
//! use unfad_testgen::{generate, Features};
//! let g = generate(7, &Features::core());
//! assert!(g.source.starts_with("def "));
//! assert!(unfad_syntax::Program::load(&g.source).is_ok());
//! ```

#![forbid(unsafe_code)]

use serde_json::{json, Value as Json};

pub mod layers;
pub use layers::layer;

/// Which constructs programs may use.
#[derive(Clone, Debug)]
pub struct Features {
    /// Tuples, projections and tuple patterns.
    pub tuples: bool,
    /// `map2` and `reduce` over `[n]real`.
    pub arrays: bool,
    /// `map` (Source extension).
    pub map: bool,
    /// `foldl` with arbitrary (non-associative) functions.
    pub foldl: bool,
    /// `if` with comparisons and boolean connectives.
    pub conditionals: bool,
    /// Free variables in the function argument of `reduce` and `foldl` (always allowed
    /// in `map` and `map2`).
    pub free_vars_in_reduce: bool,
    /// Matrices `[n][m]real` and arrays of pairs.
    pub general_arrays: bool,
    /// `scanl` / `scanr` in Source programs.
    pub scans: bool,
    /// Helper definitions called from the entry point.
    pub calls: bool,
    /// The entry point returns `real` (for gradients); otherwise any ground type.
    pub real_result: bool,
    /// Ints and indexing: int parameters (an offset or count `k`, index arrays `I` and
    /// `J` whose values are in bounds of the `n`-sized arrays), loops over `iota len(A)`
    /// reading `A[i]`, neighbours, reversed and 2-D reads, gathers `A[I[i]]`, `real(i)`,
    /// `div` and `%` by divisors that cannot be zero, `max`/`min` of ints and int
    /// comparisons. Every index is in bounds, so programs never fail at run time; arrays
    /// are never empty (`A[0]` is read), so [`Generated::input_at`] needs sizes of at least 1.
    pub indexing: bool,
    /// Derivatives of helper definitions inside the program (`grad(h, i)(..)`,
    /// `jvp(h)(.., ..)`), where a helper is called (needs `calls`).
    pub derivatives: bool,
    /// Maximum nesting depth of expressions.
    pub depth: u32,
}

impl Features {
    /// The paper's core Source fragment: reals, pairs, `let`, scalar operators, `map2`
    /// (with free variables) and `reduce` (without).
    pub fn core() -> Features {
        Features {
            tuples: true,
            arrays: true,
            map: false,
            foldl: false,
            conditionals: false,
            free_vars_in_reduce: false,
            general_arrays: false,
            scans: false,
            calls: true,
            real_result: true,
            indexing: false,
            derivatives: false,
            depth: 4,
        }
    }

    /// Everything the Source language has.
    pub fn all() -> Features {
        Features {
            map: true,
            foldl: true,
            conditionals: true,
            free_vars_in_reduce: true,
            general_arrays: true,
            scans: true,
            ..Features::core()
        }
    }

    /// Everything the Source language has, ints and indexing included.
    pub fn indexing() -> Features {
        Features {
            indexing: true,
            ..Features::all()
        }
    }

    /// Everything the Source language has, with derivatives of helpers inside programs.
    pub fn derivatives() -> Features {
        Features {
            derivatives: true,
            ..Features::all()
        }
    }

    /// Scalars only: no arrays, no tuples.
    pub fn scalar() -> Features {
        Features {
            tuples: false,
            arrays: false,
            calls: false,
            ..Features::core()
        }
    }
}

/// A generated program and an input for its entry point.
#[derive(Clone, Debug)]
pub struct Generated {
    pub source: String,
    pub input: Json,
    /// The entry point's parameters, to draw other inputs ([`Generated::input_at`]).
    params: Vec<(String, Ty)>,
    /// The program reads fixed positions such as `A[0]`: its arrays must not be empty.
    pub indexing: bool,
}

/// SplitMix64: small, fast, and good enough for test generation.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`, rounded to 3 decimals so that printed inputs are short.
    pub fn real(&mut self, lo: f64, hi: f64) -> f64 {
        ((lo + (hi - lo) * self.unit()) * 1000.0).round() / 1000.0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Which values an int holds, so that every index is in bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Range {
    /// A position in the `n`-sized arrays: `0 <= i < n`.
    N,
    /// A position in the `m`-sized rows: `0 <= j < m`.
    M,
    /// A small count or offset, `0 <= k <= 3` at the inputs drawn (any size in the cost
    /// model): never an index on its own.
    Small,
}

/// Types the generator produces.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Real,
    /// `int`, with the range of its values.
    Int(Range),
    Pair(Box<Ty>, Box<Ty>),
    /// `[n]T` (size variable `n`) or `[m]T` when `inner` is true.
    Array(bool, Box<Ty>),
}

impl Ty {
    fn vec() -> Ty {
        Ty::Array(false, Box::new(Ty::Real))
    }
    fn row() -> Ty {
        Ty::Array(true, Box::new(Ty::Real))
    }
    fn matrix() -> Ty {
        Ty::Array(false, Box::new(Ty::row()))
    }
    fn pairs() -> Ty {
        Ty::Array(
            false,
            Box::new(Ty::Pair(Box::new(Ty::Real), Box::new(Ty::Real))),
        )
    }
    fn text(&self) -> String {
        match self {
            Ty::Real => "real".into(),
            Ty::Int(_) => "int".into(),
            Ty::Pair(a, b) => format!("({}, {})", a.text(), b.text()),
            Ty::Array(inner, e) => format!("[{}]{}", if *inner { "m" } else { "n" }, e.text()),
        }
    }
}

struct Gen<'f> {
    rng: Rng,
    f: &'f Features,
    scope: Vec<(String, Ty)>,
    counter: usize,
    /// Helper definitions written so far: name, parameter types, result type.
    helpers: Vec<(String, Vec<Ty>, Ty)>,
    /// Free variables are not allowed in the function being generated (reduce's).
    closed: bool,
    /// Ints bound by a `let` without annotation to a whole-number real (`let t = len(A) - 1`):
    /// they stand for ints, but `/` of them divides reals, so they get no `/`.
    flexible: Vec<String>,
}

const UNARY_SAFE: &[&str] = &["sin", "cos", "tanh", "sigmoid", "atan", "abs", "-"];
/// Associative functions with their units (a negative unit needs parentheses: operands are atoms).
const REDUCERS: &[(&str, &str)] = &[
    ("+", "0"),
    ("*", "1"),
    ("max", "(-1000)"),
    ("min", "1000"),
    ("(a, b. a + b + a * b)", "0"),
];

impl Gen<'_> {
    fn fresh(&mut self, base: &str) -> String {
        self.counter += 1;
        format!("{base}{}", self.counter)
    }

    fn vars_of(&self, ty: &Ty) -> Vec<String> {
        self.scope
            .iter()
            .filter(|(_, t)| t == ty)
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn with_binding<R>(&mut self, name: &str, ty: Ty, f: impl FnOnce(&mut Self) -> R) -> R {
        self.scope.push((name.to_string(), ty));
        let r = f(self);
        self.scope.pop();
        r
    }

    fn with_closed<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved_scope = std::mem::take(&mut self.scope);
        let saved = std::mem::replace(&mut self.closed, true);
        let r = f(self);
        self.closed = saved;
        self.scope = saved_scope;
        r
    }

    fn constant(&mut self) -> String {
        let c = self.rng.real(-2.0, 2.0);
        if c < 0.0 {
            format!("({c})")
        } else {
            format!("{c}")
        }
    }

    /// An expression of type `ty`.
    fn expr(&mut self, ty: &Ty, depth: u32) -> String {
        match ty {
            Ty::Real => self.real(depth),
            Ty::Pair(a, b) => {
                let vars = self.vars_of(ty);
                if !vars.is_empty() && self.rng.chance(0.5) {
                    return self.rng.pick(&vars).clone();
                }
                format!(
                    "({}, {})",
                    self.expr(a, depth.saturating_sub(1)),
                    self.expr(b, depth.saturating_sub(1))
                )
            }
            Ty::Array(..) => self.array(ty, depth),
            Ty::Int(range) => self.index(*range, depth).unwrap_or_else(|| "0".to_string()),
        }
    }

    fn leaf_real(&mut self) -> String {
        let vars = self.vars_of(&Ty::Real);
        if !vars.is_empty() && self.rng.chance(0.8) {
            self.rng.pick(&vars).clone()
        } else {
            self.constant()
        }
    }

    fn real(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.leaf_real();
        }
        let d = depth - 1;
        loop {
            // Programs without indexing draw as they always did (other tests depend on it).
            let choices = if self.f.indexing { 26 } else { 14 };
            match self.rng.below(choices) {
                0 => return self.leaf_real(),
                1 | 2 => {
                    let op = *self.rng.pick(&["+", "-", "*", "*", "+"]);
                    return format!("({} {op} {})", self.real(d), self.real(d));
                }
                3 => {
                    let op = *self.rng.pick(UNARY_SAFE);
                    return format!("{op}({})", self.real(d));
                }
                4 => {
                    // Partial operators, kept inside their domains.
                    let a = self.real(d);
                    let b = self.real(d);
                    return match self.rng.below(9) {
                        0 => format!("log({a} * {a} + 1)"),
                        1 => format!("sqrt({a} * {a} + 0.5)"),
                        2 => format!("({a} / ({b} * {b} + 1))"),
                        3 => format!("exp(sin({a}))"),
                        4 => format!("pow({a} * {a} + 0.5, cos({b}))"),
                        5 => format!("atan2({a}, {b} * {b} + 1)"),
                        6 => format!("max({a}, {b})"),
                        7 => format!("min({a}, {b})"),
                        _ => format!("log1p(exp(tanh({a})))"),
                    };
                }
                5 | 6 => {
                    // let of any type
                    let t = self.some_type(d);
                    let rhs = self.expr(&t, d);
                    let x = self.fresh(if t == Ty::Real {
                        "w"
                    } else if matches!(t, Ty::Array(..)) {
                        "B"
                    } else {
                        "p"
                    });
                    let body = self.with_binding(&x, t, |g| g.real(d));
                    return format!("(let {x} = {rhs} in {body})");
                }
                7 if self.f.tuples => {
                    let t = Ty::Pair(Box::new(Ty::Real), Box::new(Ty::Real));
                    let pair = self.expr(&t, d);
                    return match self.rng.below(3) {
                        0 => format!("fst {}", paren(&pair)),
                        1 => format!("snd {}", paren(&pair)),
                        _ => {
                            let (a, b) = (self.fresh("u"), self.fresh("v"));
                            let body = self.with_binding(&a, Ty::Real, |g| {
                                g.with_binding(&b, Ty::Real, |g| g.real(d))
                            });
                            format!("(let ({a}, {b}) = {pair} in {body})")
                        }
                    };
                }
                8 | 9 if self.f.arrays => return self.reduce_like(d),
                10 if self.f.conditionals => {
                    let c = self.condition(d);
                    return format!("(if {c} then {} else {})", self.real(d), self.real(d));
                }
                11 if self.f.calls && !self.closed => return self.call(d),
                12 if self.f.arrays => {
                    let a = self.array(&Ty::vec(), d);
                    return format!("(len({a}) * {})", self.real(d));
                }
                13 if self.f.general_arrays => {
                    let m = self.array(&Ty::matrix(), d);
                    let op = *self.rng.pick(&["+", "max"]);
                    let z = if op == "+" { "0" } else { "(-1000)" };
                    return format!("reduce {op} {z} (map (r. reduce + 0 r) {})", paren(&m));
                }
                14 | 15 => {
                    if let Some(r) = self.read(d) {
                        return r;
                    }
                }
                16 => {
                    let i = self.nonneg(d.min(2));
                    return format!("(real({i}) * {})", self.real(d));
                }
                17..=20 => {
                    if let Some(r) = self.index_loop(d) {
                        return r;
                    }
                }
                21 => {
                    if let Some(r) = self.matrix_loop(d) {
                        return r;
                    }
                }
                24 | 25 => return self.derived_form(d),
                22 | 23 => {
                    if let Some(i) = self.index(Range::N, d.min(2)) {
                        let t = self.fresh("t");
                        let annotation = if self.rng.chance(0.5) { ": int" } else { "" };
                        if annotation.is_empty() {
                            self.flexible.push(t.clone());
                        }
                        let body = self.with_binding(&t, Ty::Int(Range::N), |g| g.indexed_real(d));
                        return format!("(let {t}{annotation} = {i} in {body})");
                    }
                }
                _ => continue,
            }
        }
    }

    fn condition(&mut self, d: u32) -> String {
        if self.f.indexing && self.rng.chance(0.4) {
            if let Some(c) = self.int_condition(d) {
                return c;
            }
        }
        let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
        let c = format!("{} {op} {}", self.real(d.min(1)), self.real(d.min(1)));
        match self.rng.below(4) {
            0 => format!("{c} && {} > {}", self.leaf_real(), self.leaf_real()),
            1 => format!("!({c}) || {} < 0", self.leaf_real()),
            _ => c,
        }
    }

    /// A real computed from an array: reduce, foldl, or a prelude call.
    fn reduce_like(&mut self, d: u32) -> String {
        let a = self.array(&Ty::vec(), d);
        match self.rng.below(if self.f.foldl { 4 } else { 3 }) {
            0 => {
                let (op, z) = *self.rng.pick(REDUCERS);
                if self.f.free_vars_in_reduce && !self.closed && self.rng.chance(0.4) {
                    // A function with free variables is not associative in general, which
                    // is fine: reduce is a left fold.
                    let (x, y) = (self.fresh("x"), self.fresh("y"));
                    let body = self.with_binding(&x, Ty::Real, |g| {
                        g.with_binding(&y, Ty::Real, |g| g.real(d.min(2)))
                    });
                    return format!("reduce ({x}, {y}. {body}) {z} {}", paren(&a));
                }
                format!("reduce {op} {z} {}", paren(&a))
            }
            1 => format!("sum({a})"),
            2 => {
                let b = self.array(&Ty::vec(), d);
                format!("dot({a}, {b})")
            }
            _ => {
                let (acc, x) = (self.fresh("acc"), self.fresh("x"));
                let z = self.real(d.min(1));
                let body = if self.f.free_vars_in_reduce && !self.closed {
                    self.with_binding(&acc, Ty::Real, |g| {
                        g.with_binding(&x, Ty::Real, |g| g.real(d.min(2)))
                    })
                } else {
                    self.with_closed(|g| {
                        g.scope.push((acc.clone(), Ty::Real));
                        g.scope.push((x.clone(), Ty::Real));
                        g.real(d.min(2))
                    })
                };
                format!(
                    "foldl ({acc}, {x}. {body} * 0.5) {} {}",
                    paren(&z),
                    paren(&a)
                )
            }
        }
    }

    fn array(&mut self, ty: &Ty, depth: u32) -> String {
        let vars = self.vars_of(ty);
        if depth == 0 || (!vars.is_empty() && self.rng.chance(0.35)) {
            if let Some(v) = (!vars.is_empty()).then(|| self.rng.pick(&vars).clone()) {
                return v;
            }
            // No variable of this type in scope (inside a closed function): build one.
            return self.array_from_scratch(ty);
        }
        let d = depth - 1;
        match ty {
            Ty::Array(_, e) if **e == Ty::Real => {
                let inner = matches!(ty, Ty::Array(true, _));
                loop {
                    let choices = if self.f.indexing { 10 } else { 8 };
                    match self.rng.below(choices) {
                        0..=2 => {
                            let a = self.array(ty, d);
                            let b = self.array(ty, d);
                            let (x, y) = (self.fresh("x"), self.fresh("y"));
                            let body = self.with_binding(&x, Ty::Real, |g| {
                                g.with_binding(&y, Ty::Real, |g| g.real(d.min(2)))
                            });
                            if self.rng.chance(0.3) {
                                let op = *self.rng.pick(&["+", "-", "*", "max", "min"]);
                                return format!("map2 {op} {} {}", paren(&a), paren(&b));
                            }
                            return format!("map2 ({x}, {y}. {body}) {} {}", paren(&a), paren(&b));
                        }
                        3 if self.f.map => {
                            let a = self.array(ty, d);
                            let x = self.fresh("x");
                            let body = self.with_binding(&x, Ty::Real, |g| g.real(d.min(2)));
                            return format!("map ({x}. {body}) {}", paren(&a));
                        }
                        4 if self.f.scans => {
                            let a = self.array(ty, d);
                            let (op, z) =
                                *self.rng.pick(&[("+", "0"), ("*", "1"), ("max", "(-1000)")]);
                            return match self.rng.below(3) {
                                0 => {
                                    let (acc, x) = (self.fresh("acc"), self.fresh("x"));
                                    let body = self.with_binding(&acc, Ty::Real, |g| {
                                        g.with_binding(&x, Ty::Real, |g| g.real(1))
                                    });
                                    format!("map2 (s, t. s * t) {} (shift1L (scanl ({acc}, {x}. {body} * 0.5) {z} {}))", paren(&a), paren(&a))
                                }
                                1 => format!("shift1R (scanr {op} {z} {})", paren(&a)),
                                _ => format!("shift1L (scanl {op} {z} {})", paren(&a)),
                            };
                        }
                        5 if self.f.general_arrays && !inner => {
                            let m = self.array(&Ty::matrix(), d);
                            let r = self.fresh("r");
                            let body =
                                self.with_binding(&r, Ty::row(), |g| g.real_from_row(d.min(2)));
                            return format!("map ({r}. {body}) {}", paren(&m));
                        }
                        6 if self.f.general_arrays && !inner => {
                            let p = self.array(&Ty::pairs(), d);
                            let q = self.fresh("q");
                            return format!("map ({q}. fst {q} * snd {q}) {}", paren(&p));
                        }
                        7 => {
                            let a = self.array(ty, d);
                            return if self.rng.chance(0.5) {
                                format!("zeros_like({a})")
                            } else {
                                format!("ones_like({a})")
                            };
                        }
                        8 => {
                            // `map (i. ...) (iota len(A))`: an array built position by position.
                            let range = if inner { Range::M } else { Range::N };
                            if let Some(len) = self.length(range) {
                                let i = self.fresh("i");
                                let body = self
                                    .with_binding(&i, Ty::Int(range), |g| g.indexed_real(d.min(2)));
                                return format!("map ({i}. {body}) (iota {len})");
                            }
                        }
                        9 => {
                            // A gather: `map (j. A[j]) I`, `I` holding positions in `A`.
                            let positions =
                                self.vars_of(&Ty::Array(inner, Box::new(Ty::Int(Range::N))));
                            if !positions.is_empty() {
                                let is = self.rng.pick(&positions).clone();
                                let j = self.fresh("j");
                                let body = self.with_binding(&j, Ty::Int(Range::N), |g| {
                                    g.indexed_real(d.min(2))
                                });
                                return format!("map ({j}. {body}) {is}");
                            }
                        }
                        _ => continue,
                    }
                }
            }
            Ty::Array(false, e) if **e == Ty::row() => {
                // matrices: map over rows
                let m = self.array(ty, d);
                let (r, x) = (self.fresh("r"), self.fresh("x"));
                let body = self.with_binding(&r, Ty::row(), |g| {
                    g.with_binding(&x, Ty::Real, |g| g.real(d.min(1)))
                });
                format!("map ({r}. map ({x}. {body}) {r}) {}", paren(&m))
            }
            _ => {
                // arrays of pairs
                let a = self.array(&Ty::vec(), d);
                let b = self.array(&Ty::vec(), d);
                format!("map2 (s, t. (s * t, s - t)) {} {}", paren(&a), paren(&b))
            }
        }
    }

    /// The names of the arrays in scope of size `n` (`inner` false) or `m`, whatever their
    /// elements.
    fn sized(&self, inner: bool) -> Vec<String> {
        self.scope
            .iter()
            .filter(|(_, t)| matches!(t, Ty::Array(i, _) if *i == inner))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// `len(X)` for an array in scope whose size bounds `range` (`len(M[0])` for the rows
    /// of a matrix `M`, which has at least one), if there is one.
    fn length(&mut self, range: Range) -> Option<String> {
        let arrays = match range {
            Range::N => self.sized(false),
            Range::M => {
                let rows = self.sized(true);
                if rows.is_empty() {
                    let mats = self.vars_of(&Ty::matrix());
                    if mats.is_empty() {
                        return None;
                    }
                    let m = self.rng.pick(&mats).clone();
                    return Some(format!("len({m}[0])"));
                }
                rows
            }
            Range::Small => return None,
        };
        (!arrays.is_empty()).then(|| format!("len({})", self.rng.pick(&arrays)))
    }

    /// A small int: a count or offset in scope (`k`), or a literal.
    fn small(&mut self) -> String {
        let vars = self.vars_of(&Ty::Int(Range::Small));
        if !vars.is_empty() && self.rng.chance(0.5) {
            self.rng.pick(&vars).clone()
        } else {
            format!("{}", 1 + self.rng.below(3))
        }
    }

    /// A sum over one of the forms written with indexing (slices, `reverse`, `rotate`,
    /// `replicate`, `iterate`) of a vector (never empty with indexing on).
    fn derived_form(&mut self, d: u32) -> String {
        let a = paren(&self.array(&Ty::vec(), d));
        let form = match self.rng.below(9) {
            0 => format!("reverse {a}"),
            1 => {
                let k = match self.rng.below(3) {
                    0 => self.small(),
                    1 => format!("(-{})", 1 + self.rng.below(4)),
                    _ => self.nonneg(d.min(1)),
                };
                format!("rotate {k} {a}")
            }
            2 => format!("({a})[1:]"),
            3 => format!("({a})[:len({a}) - 1]"),
            4 => {
                // A position of the vectors (all of length n, as `a`).
                let k = self.index(Range::N, 0).unwrap_or_else(|| "0".into());
                format!("(({a})[{k}:{k} + 1])")
            }
            5 => format!("replicate len({a}) ({})", self.real(d)),
            // An array of the same size after a short literal one: size n + 2.
            6 if self.rng.chance(0.5) => {
                let (x, y) = (self.real(0), self.real(0));
                format!("concat [{x}, {y}] {a}")
            }
            // Sizes the type checker derives from others (`2*n`, `2*n - 1`), which the
            // native code takes as size variables of their own.
            7 => {
                let k = self.fresh("k");
                let c = self.real(0);
                format!("map ({k}. {a}[div({k}, 2)] * (real({k} % 2) + {c})) (iota (len({a}) * 2))")
            }
            8 => format!("concat {a} (({a})[1:])"),
            _ => {
                let c = self.real(0);
                let k = self.rng.below(4);
                let (s, e) = (self.fresh("s"), self.fresh("e"));
                format!("iterate {k} ({s}. map ({e}. {e} * 0.5 + {c}) {s}) {a}")
            }
        };
        let y = self.fresh("y");
        format!("reduce + 0 (map ({y}. {y} * {y}) ({form}))")
    }

    /// An int expression that is at least 0 (and moderate).
    fn nonneg(&mut self, d: u32) -> String {
        let range = if self.rng.chance(0.7) {
            Range::N
        } else {
            Range::M
        };
        let index = self.index(range, d);
        match (self.rng.below(4), index) {
            (0, Some(i)) => format!("({} + {i})", self.small()),
            (1, Some(i)) => format!("({} * {i})", self.small()),
            (2, _) => self.small(),
            (_, Some(i)) => i,
            (_, None) => self.small(),
        }
    }

    /// An int expression whose value is in `range` (so an index of the arrays of that
    /// size), given the ints in scope; `None` without an array of that size in scope.
    fn index(&mut self, range: Range, depth: u32) -> Option<String> {
        let len = self.length(range)?;
        let vars = self.vars_of(&Ty::Int(range));
        if depth == 0 || self.rng.chance(0.3) {
            return Some(match self.rng.below(5) {
                0..=2 if !vars.is_empty() => self.rng.pick(&vars).clone(),
                0 | 3 => "0".into(),
                _ => format!("({len} - 1)"),
            });
        }
        let d = depth - 1;
        loop {
            match self.rng.below(9) {
                0 | 1 => {
                    // A neighbour: `(i + 1) % len(A)`.
                    let (e, o) = (self.nonneg(d), self.small());
                    return Some(format!("(({e} + {o}) % {len})"));
                }
                2 => {
                    // Reversed: `len(A) - 1 - i`.
                    let e = self.index(range, d)?;
                    return Some(format!("({len} - 1 - {e})"));
                }
                3 => {
                    let e = self.index(range, d)?;
                    let c = 2 + self.rng.below(2);
                    return Some(if self.rng.chance(0.5) {
                        format!("div({e}, {c})")
                    } else {
                        format!("({e} % {c})")
                    });
                }
                4 => {
                    let (a, b) = (self.index(range, d)?, self.index(range, d)?);
                    let op = *self.rng.pick(&["max", "min"]);
                    return Some(format!("{op}({a}, {b})"));
                }
                5 => {
                    let (e, o) = (self.index(range, d)?, self.small());
                    return Some(format!("min({e} + {o}, {len} - 1)"));
                }
                6 if range == Range::N => {
                    // A position read from an index array: `I[i]`.
                    let inner = self.rng.chance(0.5);
                    let positions = self.vars_of(&Ty::Array(inner, Box::new(Ty::Int(Range::N))));
                    if positions.is_empty() {
                        continue;
                    }
                    let is = self.rng.pick(&positions).clone();
                    let at = self.index(if inner { Range::M } else { Range::N }, d)?;
                    return Some(format!("{is}[{at}]"));
                }
                7 => {
                    let c = self.int_condition(d)?;
                    let (a, b) = (self.index(range, d)?, self.index(range, d)?);
                    return Some(format!("(if {c} then {a} else {b})"));
                }
                8 => {
                    // `/` of ints is their quotient.
                    let ints: Vec<String> = vars
                        .iter()
                        .filter(|v| !self.flexible.contains(v))
                        .cloned()
                        .collect();
                    if ints.is_empty() {
                        continue;
                    }
                    let v = self.rng.pick(&ints).clone();
                    return Some(format!("({v} / {})", 1 + self.rng.below(3)));
                }
                _ => continue,
            }
        }
    }

    /// A comparison of ints.
    fn int_condition(&mut self, d: u32) -> Option<String> {
        let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
        let a = self.nonneg(d.min(1));
        Some(match self.rng.below(3) {
            0 => format!("{a} % 2 {op} 0"),
            1 => format!("{a} {op} {}", self.small()),
            _ => format!("{a} {op} {}", self.index(Range::N, d.min(1))?),
        })
    }

    /// A read of an array in scope at a position in bounds: `A[i]`, `r[j]`, `M[i][j]`,
    /// `M[i, j]`, `fst (P[i])`.
    fn read(&mut self, d: u32) -> Option<String> {
        let d = d.min(2);
        for _ in 0..4 {
            match self.rng.below(5) {
                0 | 1 => {
                    let vecs = self.vars_of(&Ty::vec());
                    if !vecs.is_empty() {
                        let a = self.rng.pick(&vecs).clone();
                        return Some(format!("{a}[{}]", self.index(Range::N, d)?));
                    }
                }
                2 => {
                    let rows = self.vars_of(&Ty::row());
                    if !rows.is_empty() {
                        let r = self.rng.pick(&rows).clone();
                        return Some(format!("{r}[{}]", self.index(Range::M, d)?));
                    }
                }
                3 => {
                    let mats = self.vars_of(&Ty::matrix());
                    if !mats.is_empty() {
                        let w = self.rng.pick(&mats).clone();
                        let i = self.index(Range::N, d)?;
                        let j = self.index(Range::M, d)?;
                        return Some(if self.rng.chance(0.5) {
                            format!("{w}[{i}][{j}]")
                        } else {
                            format!("{w}[{i}, {j}]")
                        });
                    }
                }
                _ => {
                    let pairs = self.vars_of(&Ty::pairs());
                    if !pairs.is_empty() {
                        let p = self.rng.pick(&pairs).clone();
                        let which = *self.rng.pick(&["fst", "snd"]);
                        return Some(format!("{which} ({p}[{}])", self.index(Range::N, d)?));
                    }
                }
            }
        }
        None
    }

    /// A read guarded by the condition that makes it in bounds: `if i >= 1 then A[i - 1]
    /// else c` or `if i + 1 < len(A) then A[i + 1] else c`, for an int `i` in scope that
    /// indexes the `n`-sized arrays (without its guard the read would fail at an end).
    fn guarded_read(&mut self, d: u32) -> Option<String> {
        let ints = self.vars_of(&Ty::Int(Range::N));
        let vecs = self.vars_of(&Ty::vec());
        if ints.is_empty() || vecs.is_empty() {
            return None;
        }
        let i = self.rng.pick(&ints).clone();
        let a = self.rng.pick(&vecs).clone();
        let other = self.real(d.min(1));
        Some(if self.rng.chance(0.5) {
            format!("(if {i} >= 1 then {a}[{i} - 1] else {other})")
        } else {
            format!("(if {i} + 1 < len({a}) then {a}[{i} + 1] else {other})")
        })
    }

    /// A real for the body of a loop over positions: mostly reads, at the loop's index.
    fn indexed_real(&mut self, d: u32) -> String {
        if self.rng.chance(0.15) {
            if let Some(r) = self.guarded_read(d) {
                return r;
            }
        }
        let read = self.read(d).unwrap_or_else(|| self.leaf_real());
        match self.rng.below(5) {
            0 | 1 => {
                let op = *self.rng.pick(&["+", "-", "*", "*"]);
                format!("({read} {op} {})", self.real(d.min(2)))
            }
            2 => read,
            3 => format!("(real({}) * {read})", self.nonneg(d.min(1))),
            _ => {
                let c = self.int_condition(d).unwrap_or_else(|| "true".into());
                format!("(if {c} then {read} else {})", self.real(d.min(1)))
            }
        }
    }

    /// A real from a loop over positions: `reduce + 0 (map (i. ...) (iota len(A)))`,
    /// a `foldl` over `iota len(A)`, `map2` of positions and elements, or a loop over
    /// `iota k` (the count `k`).
    fn index_loop(&mut self, d: u32) -> Option<String> {
        let len = self.length(Range::N)?;
        let i = self.fresh("i");
        Some(match self.rng.below(5) {
            0 | 1 => {
                let body = self.with_binding(&i, Ty::Int(Range::N), |g| g.indexed_real(d));
                format!("reduce + 0 (map ({i}. {body}) (iota {len}))")
            }
            2 if self.f.foldl && self.f.free_vars_in_reduce => {
                let acc = self.fresh("acc");
                let z = self.real(d.min(1));
                let body = self.with_binding(&acc, Ty::Real, |g| {
                    g.with_binding(&i, Ty::Int(Range::N), |g| g.indexed_real(d))
                });
                // The read adds to the accumulator, or scales it (a recurrence whose
                // every step reads: its adjoint is one accumulation, not an array a step).
                if self.rng.chance(0.5) {
                    format!(
                        "foldl ({acc}, {i}. {acc} * 0.5 + {body}) {} (iota {len})",
                        paren(&z)
                    )
                } else {
                    format!(
                        "foldl ({acc}, {i}. {acc} * {body} + 0.25) {} (iota {len})",
                        paren(&z)
                    )
                }
            }
            3 => {
                let vecs = self.vars_of(&Ty::vec());
                if vecs.is_empty() {
                    return None;
                }
                let a = self.rng.pick(&vecs).clone();
                let x = self.fresh("x");
                let body = self.with_binding(&i, Ty::Int(Range::N), |g| {
                    g.with_binding(&x, Ty::Real, |g| g.indexed_real(d))
                });
                format!("sum(map2 ({i}, {x}. {body}) (iota len({a})) {a})")
            }
            _ if self
                .scope
                .iter()
                .any(|(n, t)| n == "k" && *t == Ty::Int(Range::Small)) =>
            {
                // `iota k`: the count is the int parameter `k` (a size variable).
                let count = if self.rng.chance(0.5) { "k" } else { "(k + 1)" };
                let body = self.with_binding(&i, Ty::Int(Range::Small), |g| g.indexed_real(d));
                format!("reduce + 0 (map ({i}. {body}) (iota {count}))")
            }
            _ => {
                let body = self.with_binding(&i, Ty::Int(Range::N), |g| g.indexed_real(d));
                format!("sum(map ({i}. {body}) (iota {len}))")
            }
        })
    }

    /// A real from a 2-D loop over a matrix `W` in scope, reading `W[i][j]`.
    fn matrix_loop(&mut self, d: u32) -> Option<String> {
        let mats = self.vars_of(&Ty::matrix());
        if mats.is_empty() {
            return None;
        }
        let w = self.rng.pick(&mats).clone();
        let (i, j) = (self.fresh("i"), self.fresh("j"));
        let read = match self.rng.below(3) {
            0 => format!("{w}[{i}][{j}]"),
            1 => format!("{w}[{i}, {j}]"),
            // Two reads of the matrix per element (a stencil's neighbours).
            _ => format!("({w}[{i}, {j}] * {w}[({i} + 1) % len({w}), ({j} + 1) % len({w}[{i}])])"),
        };
        let body = self.with_binding(&i, Ty::Int(Range::N), |g| {
            g.with_binding(&j, Ty::Int(Range::M), |g| g.indexed_real(d.min(2)))
        });
        Some(format!(
            "reduce + 0 (map ({i}. reduce + 0 (map ({j}. {read} * {body}) (iota len({w}[{i}])))) (iota len({w})))"
        ))
    }

    /// A real computed from the row `r` in scope.
    fn real_from_row(&mut self, d: u32) -> String {
        let rows = self.vars_of(&Ty::row());
        let r = rows.last().cloned().expect("a row is in scope");
        let x = self.fresh("x");
        let body = self.with_binding(&x, Ty::Real, |g| g.real(d.min(1)));
        format!("reduce + 0 (map ({x}. {body}) {r})")
    }

    /// An array of type `ty` when no variable of that type is in scope. It is derived
    /// from an `n`-sized variable if there is one (so that sizes agree), and built from
    /// literals of size 2 only when nothing `n`-sized is in scope.
    fn array_from_scratch(&mut self, ty: &Ty) -> String {
        let vecs = self.vars_of(&Ty::vec());
        let pairs = self.vars_of(&Ty::pairs());
        let mats = self.vars_of(&Ty::matrix());
        match ty {
            t if *t == Ty::vec() && !pairs.is_empty() => format!("map (q. fst q) {}", pairs[0]),
            t if *t == Ty::vec() && !mats.is_empty() => {
                format!("map (r. reduce + 0 r) {}", mats[0])
            }
            t if *t == Ty::pairs() && !vecs.is_empty() => {
                format!("map2 (s, t. (s, t * 2)) {} {}", vecs[0], vecs[0])
            }
            t if *t == Ty::pairs() && !mats.is_empty() => {
                format!("map (r. (reduce + 0 r, 1)) {}", mats[0])
            }
            t if *t == Ty::matrix() && !vecs.is_empty() => format!("map (x. [x, 1]) {}", vecs[0]),
            Ty::Array(_, e) => {
                let items: Vec<String> = (0..2).map(|_| self.expr(e, 0)).collect();
                format!("[{}]", items.join(", "))
            }
            _ => self.expr(ty, 0),
        }
    }

    fn some_type(&mut self, depth: u32) -> Ty {
        let mut choices = vec![Ty::Real, Ty::Real];
        if self.f.arrays && depth > 0 {
            choices.push(Ty::vec());
        }
        if self.f.tuples {
            choices.push(Ty::Pair(Box::new(Ty::Real), Box::new(Ty::Real)));
        }
        self.rng.pick(&choices).clone()
    }

    /// A call of a (new or existing) helper definition.
    fn call(&mut self, d: u32) -> String {
        if self.helpers.len() < 2 && (self.helpers.is_empty() || self.rng.chance(0.5)) {
            return self.new_helper_call(d);
        }
        let (name, params, _) = self.helpers[self.rng.below(self.helpers.len())].clone();
        let args: Vec<String> = params.iter().map(|t| self.expr(t, d.min(1))).collect();
        self.maybe_derivative(&name, &params, args, d)
    }

    /// The call `name(args)`, or with features `derivatives` sometimes a real made from a
    /// derivative of the helper at those arguments: its gradient with respect to the real
    /// parameter, the sum of its gradient with respect to the array, or its tangent in a
    /// random direction.
    fn maybe_derivative(&mut self, name: &str, params: &[Ty], args: Vec<String>, d: u32) -> String {
        let call = format!("{name}({})", args.join(", "));
        if !self.f.derivatives || !self.rng.chance(0.6) {
            return call;
        }
        let args = args.join(", ");
        match self.rng.below(3) {
            0 => format!("grad({name}, 0)({args})"),
            1 if params.len() > 1 => format!("reduce + 0 (grad({name}, 1)({args}))"),
            _ => {
                let tangents: Vec<String> = params.iter().map(|t| self.expr(t, d.min(1))).collect();
                if params.len() == 1 {
                    format!("snd (jvp({name})({args}, {}))", tangents[0])
                } else {
                    format!("snd (jvp({name})(({args}), ({})))", tangents.join(", "))
                }
            }
        }
    }

    fn new_helper_call(&mut self, d: u32) -> String {
        // Helpers are written before the entry point; record their text separately.
        let name = format!("h{}", self.helpers.len() + 1);
        let mut params = vec![Ty::Real];
        if self.f.arrays {
            params.push(Ty::vec());
        }
        // Reserve the name first: the arguments may call helpers too.
        self.helpers.push((name.clone(), params.clone(), Ty::Real));
        let args: Vec<String> = params.iter().map(|t| self.expr(t, d.min(1))).collect();
        self.maybe_derivative(&name, &params, args, d)
    }

    fn helper_text(&mut self, name: &str, params: &[Ty]) -> String {
        let names: Vec<String> = (0..params.len())
            .map(|i| {
                if params[i] == Ty::Real {
                    format!("a{i}")
                } else {
                    format!("V{i}")
                }
            })
            .collect();
        let saved = std::mem::take(&mut self.scope);
        for (n, t) in names.iter().zip(params) {
            self.scope.push((n.clone(), t.clone()));
        }
        let body = self.with_no_calls(|g| g.real(2));
        self.scope = saved;
        let ps: Vec<String> = names
            .iter()
            .zip(params)
            .map(|(n, t)| format!("{n}: {}", t.text()))
            .collect();
        format!("def {name}({}) =\n  {body}\n", ps.join(", "))
    }

    fn with_no_calls<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = std::mem::replace(&mut self.closed, true);
        let r = f(self);
        self.closed = saved;
        r
    }
}

fn paren(s: &str) -> String {
    let simple = s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if simple {
        s.to_string()
    } else {
        format!("({s})")
    }
}

/// A random value of type `ty` as JSON, with `n` and `m` the sizes.
fn random_value(rng: &mut Rng, ty: &Ty, n: usize, m: usize) -> Json {
    match ty {
        Ty::Real => json!(rng.real(-1.0, 1.0)),
        Ty::Int(range) => json!(match range {
            Range::N => rng.below(n),
            Range::M => rng.below(m),
            Range::Small => rng.below(4),
        }),
        Ty::Pair(a, b) => json!([random_value(rng, a, n, m), random_value(rng, b, n, m)]),
        Ty::Array(inner, e) => {
            let len = if *inner { m } else { n };
            Json::Array((0..len).map(|_| random_value(rng, e, n, m)).collect())
        }
    }
}

/// A random program (entry point `f`, last in the text) and an input for it.
pub fn generate(seed: u64, features: &Features) -> Generated {
    let mut g = Gen {
        rng: Rng::new(seed),
        f: features,
        scope: Vec::new(),
        counter: 0,
        helpers: Vec::new(),
        closed: false,
        flexible: Vec::new(),
    };
    let mut params: Vec<(String, Ty)> = vec![("x".into(), Ty::Real), ("y".into(), Ty::Real)];
    if features.arrays {
        params.push(("A".into(), Ty::vec()));
        params.push(("B".into(), Ty::vec()));
    }
    if features.tuples && g.rng.chance(0.5) {
        params.push(("p".into(), Ty::Pair(Box::new(Ty::Real), Box::new(Ty::Real))));
    }
    if features.general_arrays {
        params.push(("M".into(), Ty::matrix()));
        params.push(("P".into(), Ty::pairs()));
    }
    if features.indexing {
        params.push(("k".into(), Ty::Int(Range::Small)));
        if features.arrays {
            params.push(("I".into(), Ty::Array(false, Box::new(Ty::Int(Range::N)))));
        }
        if features.general_arrays {
            params.push(("J".into(), Ty::Array(true, Box::new(Ty::Int(Range::N)))));
        }
    }
    g.scope = params.clone();
    let result_ty = if features.real_result {
        Ty::Real
    } else {
        g.some_type(1)
    };
    let body = g.expr(&result_ty, features.depth);
    let mut text = String::new();
    let helpers = g.helpers.clone();
    for (name, ps, _) in &helpers {
        let h = g.helper_text(name, ps);
        text.push_str(&h);
    }
    let ps: Vec<String> = params
        .iter()
        .map(|(n, t)| format!("{n}: {}", t.text()))
        .collect();
    text.push_str(&format!("def f({}) =\n  {body}\n", ps.join(", ")));
    // Programs with indexing read fixed positions (`A[0]`): no empty arrays. Sizes of 9
    // and 17 run blocked reductions (eight accumulators, `unfad_syntax::reduction`) with
    // one and two whole blocks and elements left over. Programs with indexing stop at 9:
    // their loops over `iota` nest, and at 17 one test of 300 of them took 270 s of a
    // debug build's CI.
    let n = if features.indexing {
        *g.rng.pick(&[1, 1, 2, 3, 4, 7, 9])
    } else {
        *g.rng.pick(&[0, 1, 1, 2, 3, 4, 7, 9, 17])
    };
    let m = *g.rng.pick(&[1, 2, 3]);
    let mut input = serde_json::Map::new();
    for (name, ty) in &params {
        input.insert(name.clone(), random_value(&mut g.rng, ty, n, m));
    }
    Generated {
        source: text,
        input: Json::Object(input),
        params,
        indexing: features.indexing,
    }
}

impl Generated {
    /// Another input for the same program, drawn from `seed`, with `n` the length of its
    /// vectors (and of its matrices' rows) and `m` the length of its matrices' inner rows,
    /// 0 and 1 included (at least 1 for programs with [`Features::indexing`], which read
    /// fixed positions such as `A[0]`; panics otherwise).
    pub fn input_at(&self, seed: u64, n: usize, m: usize) -> Json {
        assert!(
            !self.indexing || (n >= 1 && m >= 1),
            "a program with indexing reads `A[0]`: its arrays cannot be empty (n = {n}, m = {m})"
        );
        let mut rng = Rng::new(seed);
        let mut input = serde_json::Map::new();
        for (name, ty) in &self.params {
            input.insert(name.clone(), random_value(&mut rng, ty, n, m));
        }
        Json::Object(input)
    }
}
