//! The language core of unfad: terms of the Source and Target fragments, their lexer,
//! parser, type checker and printer, and programs with their prelude and inlining.
//!
//! **Architecture Invariant:** this crate knows nothing of differentiation, optimization
//! or code generation; every later stage consumes its [`Arena`] and [`Func`].
//!
//! ```
//! use unfad_syntax::{Program, print_func};
//! let mut prog = Program::load("def f(x: real, y: real) = let w = x * y in w + sin(x)").unwrap();
//! let entry = prog.entry(None).unwrap();
//! let func = prog.inline(entry).unwrap();
//! assert_eq!(print_func(&prog.arena, &func),
//!            "def f(x: real, y: real): real =\n  let w = x * y in\n  w + sin(x)\n");
//! ```

#![forbid(unsafe_code)]

pub mod definitions;
pub mod error;
pub mod fast_hash;
pub mod fragment;
pub mod len;
pub mod lexer;
pub mod ops;
pub mod parser;
pub mod printer;
pub mod program;
pub mod reduction;
pub mod size_expr;
pub mod span;
pub mod term;
pub mod typeck;
pub mod types;

pub use error::{Error, ErrorKind, Position};
pub use fragment::{check_source, source_violation};
pub use len::Len;
pub use ops::{BinOp, CmpOp, Partial, Partial2, UnOp};
pub use printer::{format_const, print_expr, print_func, Printer};
pub use program::{Def, Func, Program, PRELUDE};
pub use span::{SourceId, Span};
pub use term::{
    alpha_eq, with_stack, Accumulation, Accumulations, Addition, Arena, Branch, DefId, Derivative,
    ExprId, ExprList, ExprMemo, Kids, Node, Var, VarList,
};
pub use types::{At, Size, SizeBindings, Type};

#[cfg(test)]
mod tests;
