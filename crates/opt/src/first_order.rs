//! Lemma noHO, enforced: after partial evaluation a gradient has no lambda (other than
//! the function arguments of array operations), no application, and no variable of
//! function type.

use unfad_syntax::{print_expr, with_stack, Arena, ExprId, Func, Node};

use crate::OptError;

/// Check that `func` is first-order; the error shows the offending subterm.
pub fn check_first_order(arena: &Arena, func: &Func) -> Result<(), OptError> {
    match offending(arena, func.body) {
        None => Ok(()),
        Some((e, why)) => Err(OptError::NotFirstOrder {
            why,
            term: print_expr(arena, e),
        }),
    }
}

fn offending(arena: &Arena, e: ExprId) -> Option<(ExprId, String)> {
    with_stack(|| {
        let node = arena[e];
        match node {
            Node::Lambda(..) => return Some((e, "a lambda survived".into())),
            Node::App(..) => return Some((e, "an application survived".into())),
            Node::Call(..) => return Some((e, "a call was not inlined".into())),
            Node::Var(v) if arena.var_type(v).is_some_and(|t| t.is_higher_order()) => {
                return Some((e, format!("`{}` has a function type", arena.var_name(v))))
            }
            _ => {}
        }
        for v in arena.binders(node) {
            if arena.var_type(v).is_some_and(|t| t.is_higher_order()) {
                return Some((e, format!("`{}` is bound to a function", arena.var_name(v))));
            }
        }
        let mut found = None;
        let kids = arena.node_children(node);
        for (i, k) in kids.into_iter().enumerate() {
            if found.is_some() {
                break;
            }
            // The function argument of an array operation is a binder, not a value.
            let is_function_arg = i == 0 && node.is_array_op();
            found = if is_function_arg {
                match arena[k] {
                    Node::Lambda(ps, body) => {
                        let bad = arena
                            .vars_of(ps)
                            .iter()
                            .find(|v| arena.var_type(**v).is_some_and(|t| t.is_higher_order()));
                        match bad {
                            Some(v) => Some((
                                k,
                                format!("`{}` is bound to a function", arena.var_name(*v)),
                            )),
                            None => offending(arena, body),
                        }
                    }
                    _ => Some((
                        k,
                        "the function argument of an array operation is not a binder".into(),
                    )),
                }
            } else {
                offending(arena, k)
            };
        }
        found
    })
}
