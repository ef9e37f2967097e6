//! Run-time functions the native code calls for the operators that have no Cranelift
//! instruction. Each one calls the single definition of the operator's meaning
//! ([`UnOp::eval`], [`BinOp::eval`]), so native results agree with the interpreter bit for bit.

use unfad_syntax::{BinOp, UnOp};

/// How an operator is lowered.
pub(crate) enum Lowering {
    /// A Cranelift instruction (or a short sequence of them).
    Inline,
    /// A call of the run-time function with this symbol and address.
    Call(&'static str, *const u8),
}

macro_rules! unary {
    ($($name:ident => $op:ident),* $(,)?) => {
        $(
            extern "C" fn $name(x: f64) -> f64 {
                UnOp::$op.eval(x)
            }
        )*
        /// How the unary operator `op` is lowered.
        pub(crate) fn unary(op: UnOp) -> Lowering {
            match op {
                UnOp::Neg | UnOp::Abs | UnOp::Sqrt => Lowering::Inline,
                $(UnOp::$op => Lowering::Call(stringify!($name), $name as *const u8),)*
            }
        }
    };
}

macro_rules! binary {
    ($($name:ident => $op:ident),* $(,)?) => {
        $(
            extern "C" fn $name(x: f64, y: f64) -> f64 {
                BinOp::$op.eval(x, y)
            }
        )*
        /// How the binary operator `op` is lowered.
        pub(crate) fn binary(op: BinOp) -> Lowering {
            match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Max | BinOp::Min => {
                    Lowering::Inline
                }
                $(BinOp::$op => Lowering::Call(stringify!($name), $name as *const u8),)*
            }
        }
    };
}

unary! {
    unfad_sin => Sin,
    unfad_cos => Cos,
    unfad_tan => Tan,
    unfad_exp => Exp,
    unfad_log => Log,
    unfad_tanh => Tanh,
    unfad_sigmoid => Sigmoid,
    unfad_atan => Atan,
    unfad_asin => Asin,
    unfad_acos => Acos,
    unfad_sinh => Sinh,
    unfad_cosh => Cosh,
    unfad_log1p => Log1p,
    unfad_expm1 => Expm1,
}

binary! {
    unfad_pow => Pow,
    unfad_atan2 => Atan2,
}

/// Every run-time symbol, for registration with the JIT.
pub(crate) fn symbols() -> impl Iterator<Item = (&'static str, *const u8)> {
    let un = UnOp::ALL.into_iter().filter_map(|op| match unary(op) {
        Lowering::Call(name, ptr) => Some((name, ptr)),
        Lowering::Inline => None,
    });
    let bin = BinOp::ALL.into_iter().filter_map(|op| match binary(op) {
        Lowering::Call(name, ptr) => Some((name, ptr)),
        Lowering::Inline => None,
    });
    un.chain(bin)
}
