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
