//! The Source fragment: what users write and what reverse mode differentiates.
//!
//! Source is first-order: a lambda may only appear as the function argument of an array
//! operation, and application is Target-only. (`scanl`, `scanr`, the shifts and tuples of
//! any width are allowed in Source: reverse mode differentiates them.)

use crate::error::{Error, ErrorKind};
use crate::term::{with_stack, Arena, ExprId, Node};

/// Why `e` is not in the Source fragment, as `(offending node, explanation)`.
pub fn source_violation(arena: &Arena, e: ExprId) -> Option<(ExprId, String)> {
    with_stack(|| {
        use Node::*;
        let node = arena[e];
        let reason = match node {
            Lambda(..) => Some("`fun` is only in the Target fragment"),
            App(..) => Some("application of a function value is only in the Target fragment"),
            _ => None,
        };
        if let Some(r) = reason {
            return Some((e, r.to_string()));
        }
        match node {
            // The function of a derivative is a binder too.
            Derivative(_, f, l) => {
                let (_, body) = arena.lambda_parts(f)?;
                source_violation(arena, body).or_else(|| {
                    arena
                        .exprs(l)
                        .iter()
                        .find_map(|&a| source_violation(arena, a))
                })
            }
            // The function argument is a binder: check its body, not the lambda itself.
            Map(f, x) => {
                let (_, body) = arena.lambda_parts(f)?;
                source_violation(arena, body).or_else(|| source_violation(arena, x))
            }
            Map2(f, x, y) | Reduce(f, x, y) | Foldl(f, x, y) | Scanl(f, x, y) | Scanr(f, x, y) => {
                let (_, body) = arena.lambda_parts(f)?;
                source_violation(arena, body)
                    .or_else(|| source_violation(arena, x))
                    .or_else(|| source_violation(arena, y))
            }
            _ => {
                let mut found = None;
                arena.for_each_child(e, |c| {
                    if found.is_none() {
                        found = source_violation(arena, c);
                    }
                });
                found
            }
        }
    })
}

/// Check that `e` is in the Source fragment; `to_error` gives the error its position.
pub fn check_source(
    arena: &Arena,
    e: ExprId,
    to_error: impl Fn(ExprId, String) -> Error,
) -> Result<(), Error> {
    match source_violation(arena, e) {
        None => Ok(()),
        Some((at, why)) => Err(to_error(
            at,
            format!("{why}; a program to differentiate is written in the Source fragment"),
        )),
    }
}

/// The error for a node of a program.
pub fn unsupported(prog: &crate::program::Program, at: ExprId, message: String) -> Error {
    prog.error_at(ErrorKind::Unsupported, prog.arena.span(at), message)
}
