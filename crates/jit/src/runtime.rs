//! Run-time functions the native code calls for the operators that have neither a Cranelift
//! instruction nor a kernel (`tan`, `atan`, `pow`, ...), and the fallback of the `sin` and
//! `cos` kernels for huge arguments. Each one is the standard library function that the
//! single definition of the operator's meaning ([`UnOp::eval`], [`BinOp::eval`]) calls, so
//! native results agree with the interpreter bit for bit (a test checks it on every
//! operator). They call it directly rather than through `eval`, which is not inlined across
//! crates: the extra call and dispatch cost about a third of an `exp` (2.5 ns per call).
//! The operators with a kernel (`UnOp::kernel`) are inlined by `lower/kernels.rs`.

use unfad_kernels::Kernel;
use unfad_syntax::{BinOp, UnOp};

/// How an operator is lowered; `F` is the type of its run-time function.
pub(crate) enum Lowering<F> {
    /// A Cranelift instruction (or a short sequence of them).
    Inline,
    /// A math kernel, inlined.
    Kernel(Kernel),
    /// A call of the run-time function with this symbol.
    Call(&'static str, F),
}

/// A run-time function of one real.
pub(crate) type Unary = extern "C" fn(f64) -> f64;

/// A run-time function of two reals.
pub(crate) type Binary = extern "C" fn(f64, f64) -> f64;

macro_rules! unary {
    ($($name:ident => $op:ident: $f:expr),* $(,)?) => {
        $(
            extern "C" fn $name(x: f64) -> f64 {
                $f(x)
            }
        )*
        /// How the unary operator `op` is lowered.
        pub(crate) fn unary(op: UnOp) -> Lowering<Unary> {
            if let Some(k) = op.kernel() {
                return Lowering::Kernel(k);
            }
            match op {
                $(UnOp::$op => Lowering::Call(stringify!($name), $name as Unary),)*
                // Neg, Abs and Sqrt; the translator rejects any other.
                _ => Lowering::Inline,
            }
        }
    };
}

macro_rules! binary {
    ($($name:ident => $op:ident: $f:expr),* $(,)?) => {
        $(
            extern "C" fn $name(x: f64, y: f64) -> f64 {
                $f(x, y)
            }
        )*
        /// How the binary operator `op` is lowered.
        pub(crate) fn binary(op: BinOp) -> Lowering<Binary> {
            match op {
                BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::Div
                | BinOp::Max
                | BinOp::Min
                | BinOp::IntDiv
                | BinOp::Rem
                | BinOp::Partial(_) => Lowering::Inline,
                $(BinOp::$op => Lowering::Call(stringify!($name), $name as Binary),)*
            }
        }
    };
}

unary! {
    unfad_tan => Tan: f64::tan,
    unfad_atan => Atan: f64::atan,
    unfad_asin => Asin: f64::asin,
    unfad_acos => Acos: f64::acos,
    unfad_sinh => Sinh: f64::sinh,
    unfad_cosh => Cosh: f64::cosh,
}

extern "C" fn unfad_sin(x: f64) -> f64 {
    Kernel::Sin.std(x)
}

extern "C" fn unfad_cos(x: f64) -> f64 {
    Kernel::Cos.std(x)
}

/// The run-time function a kernel's native code calls where [`Kernel::needs_fallback`]:
/// the standard library's `sin` and `cos`, as in [`Kernel::eval`].
pub(crate) fn fallback(k: Kernel) -> Option<(&'static str, Unary)> {
    match k {
        Kernel::Sin => Some(("unfad_sin", unfad_sin as Unary)),
        Kernel::Cos => Some(("unfad_cos", unfad_cos as Unary)),
        _ => None,
    }
}

binary! {
    unfad_pow => Pow: f64::powf,
    unfad_atan2 => Atan2: f64::atan2,
}

/// Every run-time symbol, for registration with the JIT.
pub(crate) fn symbols() -> impl Iterator<Item = (&'static str, *const u8)> {
    let un = UnOp::ALL.into_iter().filter_map(|op| match unary(op) {
        Lowering::Call(name, f) => Some((name, f as *const u8)),
        Lowering::Kernel(_) | Lowering::Inline => None,
    });
    let bin = BinOp::ALL.into_iter().filter_map(|op| match binary(op) {
        Lowering::Call(name, f) => Some((name, f as *const u8)),
        Lowering::Kernel(_) | Lowering::Inline => None,
    });
    let fallbacks = Kernel::ALL
        .into_iter()
        .filter_map(fallback)
        .map(|(name, f)| (name, f as *const u8));
    un.chain(bin)
        .chain(fallbacks)
        .chain(crate::batch::symbols())
        .chain(crate::routines::symbols())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs around every operator's special points: zeros, infinities, NaN, subnormals,
    /// the edges of the domains, and a spread of ordinary values.
    fn inputs() -> Vec<f64> {
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE / 4.0,
            f64::MAX,
            f64::MIN,
            710.0,
            -745.5,
            1e-300,
        ];
        xs.extend((-200..=200).map(|k| k as f64 * 0.173));
        xs
    }

    fn same(x: f64, y: f64) -> bool {
        x.to_bits() == y.to_bits()
    }

    #[test]
    fn run_time_functions_agree_with_the_definitions() {
        for op in UnOp::ALL {
            if let Lowering::Call(name, f) = unary(op) {
                for x in inputs() {
                    assert!(same(f(x), op.eval(x)), "{name}({x})");
                }
            }
        }
        for k in Kernel::ALL {
            if let Some((name, f)) = fallback(k) {
                for x in [
                    f64::NAN,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    1e7,
                    -1e300,
                    4194305.0,
                ] {
                    assert!(k.needs_fallback(x));
                    assert!(same(f(x), k.eval(x)), "{name}({x})");
                }
            }
        }
        for op in BinOp::ALL {
            if let Lowering::Call(name, f) = binary(op) {
                for x in inputs() {
                    for y in [0.0, -0.0, 2.0, -3.5, 0.3, f64::NAN, f64::INFINITY, x] {
                        assert!(same(f(x, y), op.eval(x, y)), "{name}({x}, {y})");
                    }
                }
            }
        }
    }
}
