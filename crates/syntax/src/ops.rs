//! Scalar operators: their names in the surface syntax and their meaning on `f64`.
//!
//! This is the single definition of scalar semantics: the interpreter, constant folding and
//! the native code's run-time functions all call [`UnOp::eval`] and [`BinOp::eval`] (or
//! agree with them bit for bit). `exp`, `log`, `tanh`, `sigmoid`, `log1p`, `expm1`, `sin`
//! and `cos` are unfad's own kernels ([`UnOp::kernel`], crate `unfad-kernels`), which the
//! native code inlines; the other transcendental functions are the standard library's. Outside their domains the operators follow IEEE 754: they
//! return NaN or an infinity, they never trap.

/// Unary real operators (`-e` and the built-in one-argument functions).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum UnOp {
    Neg,
    Sin,
    Cos,
    Tan,
    Exp,
    Log,
    Sqrt,
    Tanh,
    Abs,
    Sigmoid,
    Atan,
    Asin,
    Acos,
    Sinh,
    Cosh,
    Log1p,
    Expm1,
    /// `real(i)`: an int as a real. Ints are carried as reals holding whole numbers, so this
    /// is the identity on values; it only changes the type (and carries no derivative).
    ToReal,
    /// A derivative of one of the operators above, as a primitive of its own (see
    /// [`Partial`]). Only derivatives build it; the surface syntax has no name for it.
    Partial(Partial),
}

/// The derivatives of the unary operators whose formula takes more than one machine
/// operation, each a primitive of its own: the paper's `∂op1`, which the cost model counts
/// as one NLOP, as Theorem "complexity" assumes of every operator's derivative.
///
/// Each is a function of one real. Where the derivative is cheapest through the operator's
/// result, that result is the operand (`tanh' = 1 - t*t` with `t = tanh(x)`): the primal
/// has computed it already, and sharing reads it instead of computing it again. The others
/// take the operator's argument. The formulas are written once, in [`Partial::eval`], and
/// the native code performs the same operations in the same order, so both agree bit for
/// bit. The derivatives that are one primitive already are not here: `sin' = cos`,
/// `exp' = exp` (its result), `log'(x) = 1 / x`, `sinh' = cosh`, `cosh' = sinh`,
/// `expm1' = exp`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Partial {
    /// `cos'(x) = -sin(x)`, at the argument.
    NegSin,
    /// `tan'(x) = 1 + t*t`, from the result `t = tan(x)`.
    OnePlusSquare,
    /// `tanh'(x) = 1 - t*t`, from the result `t = tanh(x)`.
    OneMinusSquare,
    /// `sigmoid'(x) = s * (1 - s)`, from the result `s = sigmoid(x)`.
    Logistic,
    /// `sqrt'(x) = 0.5 / s`, from the result `s = sqrt(x)`, computed as `0.5 * (1 / s)`
    /// (the same but where `1 / s` is subnormal), so that native code shares the division
    /// with a quotient by `s`.
    HalfReciprocal,
    /// `log1p'(x) = 1 / (1 + x)`, at the argument.
    ReciprocalOnePlus,
    /// `atan'(x) = 1 / (1 + x*x)`, at the argument.
    ReciprocalOnePlusSquare,
    /// `asin'(x) = 1 / sqrt(1 - x*x)`, at the argument.
    ReciprocalSqrtOneMinusSquare,
    /// `acos'(x) = -1 / sqrt(1 - x*x)`, at the argument.
    NegReciprocalSqrtOneMinusSquare,
    /// `abs'(x)`: 1 above 0, -1 below, and 0 at either zero and at NaN.
    Sign,
}

impl Partial {
    pub const ALL: [Partial; 10] = [
        Partial::NegSin,
        Partial::OnePlusSquare,
        Partial::OneMinusSquare,
        Partial::Logistic,
        Partial::HalfReciprocal,
        Partial::ReciprocalOnePlus,
        Partial::ReciprocalOnePlusSquare,
        Partial::ReciprocalSqrtOneMinusSquare,
        Partial::NegReciprocalSqrtOneMinusSquare,
        Partial::Sign,
    ];

    /// The name printed for it: its formula, since the operand is sometimes the operator's
    /// result and sometimes its argument.
    pub fn name(self) -> &'static str {
        match self {
            Partial::NegSin => "neg_sin",
            Partial::OnePlusSquare => "one_plus_sq",
            Partial::OneMinusSquare => "one_minus_sq",
            Partial::Logistic => "s_one_minus_s",
            Partial::HalfReciprocal => "half_recip",
            Partial::ReciprocalOnePlus => "recip_one_plus",
            Partial::ReciprocalOnePlusSquare => "recip_one_plus_sq",
            Partial::ReciprocalSqrtOneMinusSquare => "recip_sqrt_one_minus_sq",
            Partial::NegReciprocalSqrtOneMinusSquare => "neg_recip_sqrt_one_minus_sq",
            Partial::Sign => "sign0",
        }
    }

    /// The primitive printed as `name`, if any.
    pub fn from_name(name: &str) -> Option<Partial> {
        Partial::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The derivative of `op` as a primitive, if `op`'s derivative takes more than one
    /// operation, and whether its operand is `op`'s result (else its argument).
    pub fn of(op: UnOp) -> Option<(Partial, bool)> {
        Some(match op {
            UnOp::Cos => (Partial::NegSin, false),
            UnOp::Tan => (Partial::OnePlusSquare, true),
            UnOp::Tanh => (Partial::OneMinusSquare, true),
            UnOp::Sigmoid => (Partial::Logistic, true),
            UnOp::Sqrt => (Partial::HalfReciprocal, true),
            UnOp::Log1p => (Partial::ReciprocalOnePlus, false),
            UnOp::Atan => (Partial::ReciprocalOnePlusSquare, false),
            UnOp::Asin => (Partial::ReciprocalSqrtOneMinusSquare, false),
            UnOp::Acos => (Partial::NegReciprocalSqrtOneMinusSquare, false),
            UnOp::Abs => (Partial::Sign, false),
            _ => return None,
        })
    }

    /// The value, in the one order of operations that the native code follows too.
    pub fn eval(self, x: f64) -> f64 {
        match self {
            Partial::NegSin => -UnOp::Sin.eval(x),
            Partial::OnePlusSquare => 1.0 + x * x,
            Partial::OneMinusSquare => 1.0 - x * x,
            Partial::Logistic => x * (1.0 - x),
            Partial::HalfReciprocal => 0.5 * (1.0 / x),
            Partial::ReciprocalOnePlus => 1.0 / (1.0 + x),
            Partial::ReciprocalOnePlusSquare => 1.0 / (1.0 + x * x),
            Partial::ReciprocalSqrtOneMinusSquare => 1.0 / (1.0 - x * x).sqrt(),
            Partial::NegReciprocalSqrtOneMinusSquare => -1.0 / (1.0 - x * x).sqrt(),
            Partial::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// Binary real operators (infix `+ - * /` and the two-argument built-ins).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Max,
    Min,
    Atan2,
    /// Division of ints, rounding toward zero (`i / j` on ints, also written `div(i, j)`).
    IntDiv,
    /// Remainder of ints, with the sign of the dividend (`i % j`).
    Rem,
    /// A partial derivative of one of the operators above, as a primitive of its own (see
    /// [`Partial2`]). Only derivatives build it.
    Partial(Partial2),
}

/// The partial derivatives of the binary operators whose formula takes more than one
/// operation, each a primitive of its own (one NLOP in the cost model), as [`Partial`] is
/// for the unary ones. Each is a function of the operator's two operands `(x, y)`; the
/// formulas are written once, in [`Partial2::eval`], and the native code follows them.
/// The partials of `+ - * /` are not here, and neither are those of `max` and `min`: those
/// stay conditionals (`if x >= y then z else 0` once multiplied by an adjoint `z`), which give
/// 0, not NaN, to the operand not chosen when the adjoint is infinite.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Partial2 {
    /// `∂1 pow(x, y) = y * pow(x, y - 1)`, and 0 at `x = y = 0` (`x^0` is constant).
    PowFirst,
    /// `∂2 pow(x, y) = pow(x, y) * log(x)`, and 0 at `x = 0`.
    PowSecond,
    /// `∂1 atan2(x, y) = y / (x*x + y*y)`.
    Atan2First,
    /// `∂2 atan2(x, y) = -x / (x*x + y*y)`.
    Atan2Second,
}

impl Partial2 {
    pub const ALL: [Partial2; 4] = [
        Partial2::PowFirst,
        Partial2::PowSecond,
        Partial2::Atan2First,
        Partial2::Atan2Second,
    ];

    /// The name printed for it (a call of two arguments).
    pub fn name(self) -> &'static str {
        match self {
            Partial2::PowFirst => "pow_d1",
            Partial2::PowSecond => "pow_d2",
            Partial2::Atan2First => "atan2_d1",
            Partial2::Atan2Second => "atan2_d2",
        }
    }

    /// The primitive printed as `name`, if any.
    pub fn from_name(name: &str) -> Option<Partial2> {
        Partial2::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The two partial derivatives of `op` as primitives, if its partials take more than
    /// one operation.
    pub fn of(op: BinOp) -> Option<(Partial2, Partial2)> {
        Some(match op {
            BinOp::Pow => (Partial2::PowFirst, Partial2::PowSecond),
            BinOp::Atan2 => (Partial2::Atan2First, Partial2::Atan2Second),
            _ => return None,
        })
    }

    /// The value, in the one order of operations that the native code follows too.
    pub fn eval(self, x: f64, y: f64) -> f64 {
        match self {
            // 0 at x = y = 0, where `0 * pow(0, -1)` would be NaN: d/dx x^0 is 0.
            Partial2::PowFirst => {
                if x == 0.0 && y == 0.0 {
                    0.0
                } else {
                    y * BinOp::Pow.eval(x, y - 1.0)
                }
            }
            Partial2::PowSecond => {
                if x == 0.0 {
                    0.0
                } else {
                    BinOp::Pow.eval(x, y) * UnOp::Log.eval(x)
                }
            }
            Partial2::Atan2First => y / (x * x + y * y),
            Partial2::Atan2Second => -x / (x * x + y * y),
        }
    }
}

/// Comparisons of reals; their results are booleans and are never differentiated.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

use unfad_kernels::Kernel;

impl UnOp {
    pub const ALL: [UnOp; 17] = [
        UnOp::Neg,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Exp,
        UnOp::Log,
        UnOp::Sqrt,
        UnOp::Tanh,
        UnOp::Abs,
        UnOp::Sigmoid,
        UnOp::Atan,
        UnOp::Asin,
        UnOp::Acos,
        UnOp::Sinh,
        UnOp::Cosh,
        UnOp::Log1p,
        UnOp::Expm1,
    ];

    /// A number that identifies the operator (for hashing terms): distinct operators have
    /// distinct codes.
    pub fn code(self) -> u32 {
        match self {
            UnOp::ToReal => 64,
            UnOp::Partial(p) => 128 + p as u32,
            op => UnOp::ALL.iter().position(|o| *o == op).unwrap_or(0) as u32,
        }
    }

    /// Name of the built-in function (`-` for negation, which is written as a prefix).
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tan => "tan",
            UnOp::Exp => "exp",
            UnOp::Log => "log",
            UnOp::Sqrt => "sqrt",
            UnOp::Tanh => "tanh",
            UnOp::Abs => "abs",
            UnOp::Sigmoid => "sigmoid",
            UnOp::Atan => "atan",
            UnOp::Asin => "asin",
            UnOp::Acos => "acos",
            UnOp::Sinh => "sinh",
            UnOp::Cosh => "cosh",
            UnOp::Log1p => "log1p",
            UnOp::Expm1 => "expm1",
            UnOp::ToReal => "real",
            UnOp::Partial(p) => p.name(),
        }
    }

    /// The built-in function called `name`, if any (negation has no function name).
    pub fn from_name(name: &str) -> Option<UnOp> {
        UnOp::ALL
            .into_iter()
            .find(|op| *op != UnOp::Neg && op.name() == name)
    }

    pub fn eval(self, x: f64) -> f64 {
        match self {
            UnOp::Neg => -x,
            UnOp::Sin => Kernel::Sin.eval(x),
            UnOp::Cos => Kernel::Cos.eval(x),
            UnOp::Tan => x.tan(),
            UnOp::Exp => Kernel::Exp.eval(x),
            UnOp::Log => Kernel::Log.eval(x),
            UnOp::Sqrt => x.sqrt(),
            UnOp::Tanh => Kernel::Tanh.eval(x),
            UnOp::Abs => x.abs(),
            UnOp::Sigmoid => Kernel::Sigmoid.eval(x),
            UnOp::Atan => x.atan(),
            UnOp::Asin => x.asin(),
            UnOp::Acos => x.acos(),
            UnOp::Sinh => x.sinh(),
            UnOp::Cosh => x.cosh(),
            UnOp::Log1p => Kernel::Log1p.eval(x),
            UnOp::Expm1 => Kernel::Expm1.eval(x),
            UnOp::ToReal => x,
            UnOp::Partial(p) => p.eval(x),
        }
    }

    /// The kernel computing this operator, for those that have one: the same definition
    /// gives the interpreter's value ([`Kernel::eval`]) and the native code's instructions.
    pub fn kernel(self) -> Option<Kernel> {
        Some(match self {
            UnOp::Exp => Kernel::Exp,
            UnOp::Log => Kernel::Log,
            UnOp::Tanh => Kernel::Tanh,
            UnOp::Sigmoid => Kernel::Sigmoid,
            UnOp::Log1p => Kernel::Log1p,
            UnOp::Expm1 => Kernel::Expm1,
            UnOp::Sin => Kernel::Sin,
            UnOp::Cos => Kernel::Cos,
            _ => return None,
        })
    }

    /// True for operators that are a single machine instruction (cheap, linear-ish);
    /// the others are the cost model's non-linear operations (NLOPS).
    pub fn is_nonlinear(self) -> bool {
        !matches!(self, UnOp::Neg | UnOp::Abs | UnOp::ToReal)
    }
}

/// `1 / (1 + e^-x)`, computed without overflow for large `|x|` (the kernel).
pub fn sigmoid(x: f64) -> f64 {
    Kernel::Sigmoid.eval(x)
}

impl BinOp {
    pub const ALL: [BinOp; 8] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Pow,
        BinOp::Max,
        BinOp::Min,
        BinOp::Atan2,
    ];

    /// A number that identifies the operator (for hashing terms).
    pub fn code(self) -> u32 {
        match self {
            BinOp::IntDiv => 64,
            BinOp::Rem => 65,
            BinOp::Partial(p) => 128 + p as u32,
            op => BinOp::ALL.iter().position(|o| *o == op).unwrap_or(0) as u32,
        }
    }

    /// The infix symbol (`+ - * /`) or the built-in function name.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "pow",
            BinOp::Max => "max",
            BinOp::Min => "min",
            BinOp::Atan2 => "atan2",
            BinOp::IntDiv => "div",
            BinOp::Rem => "%",
            BinOp::Partial(p) => p.name(),
        }
    }

    /// Infix operators are written between their operands; the others as calls.
    pub fn is_infix(self) -> bool {
        matches!(
            self,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
        )
    }

    /// True for the operators on ints only (`div` and `%`); the others apply to reals, and
    /// `+ - * max min` to ints too.
    pub fn is_integer_only(self) -> bool {
        matches!(self, BinOp::IntDiv | BinOp::Rem)
    }

    /// The built-in two-argument function called `name` (`div` included).
    pub fn from_name(name: &str) -> Option<BinOp> {
        if name == "div" {
            return Some(BinOp::IntDiv);
        }
        BinOp::ALL
            .into_iter()
            .find(|op| !op.is_infix() && op.name() == name)
    }

    /// Operators that may be written as an operator section (`map2 * A B`).
    pub fn from_section(text: &str) -> Option<BinOp> {
        match text {
            "+" => Some(BinOp::Add),
            "-" => Some(BinOp::Sub),
            "*" => Some(BinOp::Mul),
            "/" => Some(BinOp::Div),
            "max" => Some(BinOp::Max),
            "min" => Some(BinOp::Min),
            _ => None,
        }
    }

    pub fn eval(self, x: f64, y: f64) -> f64 {
        match self {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Pow => x.powf(y),
            BinOp::Max => fmax(x, y),
            BinOp::Min => fmin(x, y),
            BinOp::Atan2 => x.atan2(y),
            // Exact on whole numbers below 2^53 in magnitude: the quotient's rounding never
            // crosses a whole number there. A zero divisor is checked before (an error).
            BinOp::IntDiv => (x / y).trunc(),
            BinOp::Rem => x % y,
            BinOp::Partial(p) => p.eval(x, y),
        }
    }
}

/// IEEE 754-2019 `maximum`: NaN if either operand is NaN, and `+0 > -0`.
pub fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x > y || (x == y && x.is_sign_positive()) {
        x
    } else {
        y
    }
}

/// IEEE 754-2019 `minimum`: NaN if either operand is NaN, and `-0 < +0`.
pub fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x < y || (x == y && x.is_sign_negative()) {
        x
    } else {
        y
    }
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Eq,
        CmpOp::Ne,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }

    /// IEEE comparison: every comparison with NaN is false except `!=`.
    pub fn eval(self, x: f64, y: f64) -> bool {
        match self {
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in UnOp::ALL.into_iter().filter(|o| *o != UnOp::Neg) {
            assert_eq!(UnOp::from_name(op.name()), Some(op));
        }
        for op in BinOp::ALL.into_iter().filter(|o| !o.is_infix()) {
            assert_eq!(BinOp::from_name(op.name()), Some(op));
        }
        assert_eq!(UnOp::from_name("-"), None);
    }

    #[test]
    fn kernelized_operators_evaluate_their_kernel() {
        for op in UnOp::ALL {
            if let Some(k) = op.kernel() {
                assert_eq!(k.name(), op.name());
                for x in [-3.5, -0.0, 0.25, 2.0, 1e7, f64::INFINITY] {
                    assert_eq!(
                        op.eval(x).to_bits(),
                        k.eval(x).to_bits(),
                        "{}({x})",
                        op.name()
                    );
                }
            }
        }
    }

    #[test]
    fn partial_operators_give_ieee_values() {
        assert!(UnOp::Log.eval(-1.0).is_nan());
        assert_eq!(UnOp::Log.eval(0.0), f64::NEG_INFINITY);
        assert!(UnOp::Sqrt.eval(-1.0).is_nan());
        assert_eq!(BinOp::Div.eval(1.0, 0.0), f64::INFINITY);
        assert!(BinOp::Max.eval(f64::NAN, 1.0).is_nan());
        assert_eq!(BinOp::Max.eval(-0.0, 0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(BinOp::Min.eval(-0.0, 0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert!((sigmoid(0.3) - 1.0 / (1.0 + (-0.3f64).exp())).abs() < 1e-16);
    }
}
