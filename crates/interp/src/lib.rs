//! The reference interpreter of unfad and the gradient oracles built on it.
//!
//! The interpreter follows the paper's call-by-value operational semantics for both
//! fragments, closures included. It is generic over the scalar type: with `f64` it is the
//! oracle every later stage is tested against, with [`Dual`] it computes forward-mode
//! derivatives, which check reverse mode independently of finite differences, and with
//! nested duals (`Dual<Dual<f64>>`) second derivatives ([`hvp`], [`hessian`]). With tagged
//! dual numbers ([`Tagged`]) it evaluates the `grad` and `jvp` inside programs directly
//! ([`eval_with_derivatives`], [`gradient_with_derivatives`]), an oracle for their
//! expansion by the compiler.
//!
//! ```
//! use unfad_interp::{eval_func, forward_gradient, Value};
//! use unfad_syntax::Program;
//!
//! let mut prog = Program::load("def f(x: real, y: real) = x * y + sin(x)").unwrap();
//! let func = prog.inline(prog.entry(None).unwrap()).unwrap();
//! let args = [Value::Real(2.0), Value::Real(3.0)];
//! let v = eval_func(&prog.arena, &func, &args).unwrap();
//! assert_eq!(v.as_real(), Some(6.0 + 2f64.sin()));
//! let (_, grad) = forward_gradient(&prog.arena, &func, &args).unwrap();
//! assert_eq!(grad, vec![vec![3.0 + 2f64.cos()], vec![2.0]]);
//! ```

#![forbid(unsafe_code)]

pub mod eval;
pub mod io;
pub mod oracle;
pub mod scalar;
pub mod tagged;
pub mod value;

pub use eval::{eval_func, EvalError, Interp};
pub use io::{
    args_from_json, number_to_json, value_from_json, value_from_leaves, value_to_json, InputError,
    SizeEnv,
};
pub use oracle::{
    directional_derivative, eval_with_derivatives, fd_gradient, fd_gradient_sampled, fd_hvp,
    forward_gradient, forward_gradient_sampled, gradient_with_derivatives, hessian, hvp, jvp,
};
pub use scalar::{Dual, Scalar};
pub use tagged::Tagged;
pub use value::{Closure, Value};
