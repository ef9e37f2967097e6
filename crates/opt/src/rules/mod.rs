//! Local rewrite rules of Figure "Optimizations for target language", by family, and the
//! rules the constructs beyond the paper's core need (conditionals of tuples, general
//! arrays, scans, array literals). Each rule looks at one node whose children are already
//! simplified and returns a simpler equivalent, or `None`. (The binding rules — inlining,
//! forward substitution, dead `let`s, let normalisation, CSE — live in the simplifier's
//! walk.) A rule sees the pass only through [`RuleCx`]: it builds nodes, asks types and
//! lengths, and simplifies the sub-terms it builds, but cannot touch the substitution, the
//! CSE table or the count of rewrites (the walk counts one when a rule fires).
//!
//! A rule is a `pub fn` of one of the family modules with the signature of [`Rule`],
//! listed in [`apply`]'s table for the kinds of node it rewrites.
//!
//! The algebraic rules (`0 * e -> 0`, ...) follow the paper's smooth semantics: they do
//! not preserve IEEE NaN propagation through a product with a structural zero.

use unfad_syntax::{ExprId, Node};

use crate::simplify::RuleCx;

pub mod algebraic;
pub mod arrays;
pub mod conditionals;
pub mod literals;
pub mod scans;
pub mod scatter;
pub mod steps;
pub mod tuples;

/// A rule: a simplified node in, a simpler equivalent out.
pub type Rule = fn(&mut RuleCx, ExprId) -> Option<ExprId>;

/// Apply the first rule that fires on `e`.
pub fn apply(cx: &mut RuleCx, e: ExprId) -> Option<ExprId> {
    if !binders_well_formed(cx, e) {
        return None;
    }
    let rules: &[Rule] = match cx.arena()[e] {
        Node::Op1(..) => &[
            algebraic::fold_unary,
            algebraic::double_negation,
            conditionals::push_into_if,
        ],
        Node::Op2(..) => &[
            algebraic::fold_binary,
            algebraic::times_zero,
            algebraic::plus_zero,
            algebraic::int_sum_minus_term,
            algebraic::times_one,
            algebraic::zero_minus,
            algebraic::times_minus_one,
            algebraic::zero_divided,
            algebraic::reciprocal_product,
            algebraic::reciprocal_times,
            algebraic::logistic_quotients,
            conditionals::push_into_if,
        ],
        Node::Cmp(..) | Node::Not(_) | Node::And(..) | Node::Or(..) => &[algebraic::fold_boolean],
        Node::If(..) => &[
            conditionals::same_branches,
            conditionals::boolean_branches,
            conditionals::split_tuple_branches,
        ],
        Node::Proj(..) => &[
            tuples::project_tuple,
            tuples::project_constant,
            tuples::project_into_if,
            tuples::project_constant_part,
        ],
        Node::Tuple(..) => &[tuples::tuple_eta],
        Node::ZerosLike(_) | Node::OnesLike(_) => &[
            scatter::zeros_of_scatter,
            tuples::constant_of_real,
            tuples::constant_of_tuple,
            literals::fill_literal,
            literals::small_zeros,
            arrays::constant_array_witness,
        ],
        Node::Map(..) => &[
            arrays::map_identity,
            arrays::map_constant_operand,
            arrays::map_fill_operand,
            arrays::map_constant_body,
            arrays::map_fill_body,
            arrays::map_constant_body_operand,
            arrays::map_fusion,
            steps::scan_next_in_consumer,
            arrays::map_of_zip_half,
            arrays::map_of_summed_component,
            literals::map_literal,
            literals::map_small_iota,
            scatter::scale_of_scatter,
        ],
        Node::Map2(..) => &[
            arrays::map2_same_operands,
            arrays::map2_constant_operand,
            arrays::map2_fill_operand,
            arrays::map2_fill_body,
            arrays::map2_unused_param,
            arrays::map2_fusion,
            arrays::map2_zip_fusion,
            arrays::map_of_zip_half,
            arrays::map_of_summed_component,
            scans::scan_next_element,
            steps::scan_next_in_consumer,
            literals::map_literal,
            literals::add_zero_literal,
            scatter::add_scatter,
        ],
        Node::Reduce(..) | Node::Foldl(..) => &[
            steps::scan_next_in_consumer,
            scatter::sum_of_scatters,
            scatter::fold_of_scatters,
            scatter::fold_adds_in_place,
            arrays::fold_constant_array,
            arrays::count_ones,
            arrays::reduce_tuple_split,
            arrays::foldl_tuple_split,
            arrays::sum_of_scaled,
            arrays::sum_of_scaled_rows,
            arrays::last_of_scan,
            arrays::last_of_fill,
            literals::last_of_literal,
            literals::fold_literal,
        ],
        Node::Scanl(..) | Node::Scanr(..) => &[
            steps::scan_next_in_consumer,
            arrays::scan_constant_array,
            literals::fold_literal,
            scans::scan_invariant_component,
        ],
        Node::Shift1L(_) | Node::Shift1R(_) => &[
            arrays::shift_constant_array,
            arrays::shift_of_constant_scan,
            literals::shift_literal,
        ],
        Node::Len(_) => &[
            arrays::len_of_constant_array,
            arrays::len_of_known_length,
            arrays::len_of_bound_map,
        ],
        Node::ScatterAdd(..) => &[
            scatter::scatter_everywhere,
            scatter::scatter_row,
            literals::scatter_into_literal,
            scatter::contiguous_scatter,
        ],
        Node::Index(..) => &[literals::index_of_literal, arrays::index_of_cheap_map],
        Node::Array(..) => &[literals::literal_eta],
        _ => &[],
    };
    rules.iter().find_map(|rule| rule(cx, e))
}

/// The function argument of an array operation is a binder of the right arity (one
/// parameter for `map`, two for the others), as the rules assume: they leave other terms
/// alone rather than fail on them.
fn binders_well_formed(cx: &RuleCx, e: ExprId) -> bool {
    let (f, arity) = match cx.arena()[e] {
        Node::Map(f, _) => (f, 1),
        Node::Map2(f, ..)
        | Node::Reduce(f, ..)
        | Node::Foldl(f, ..)
        | Node::Scanl(f, ..)
        | Node::Scanr(f, ..) => (f, 2),
        _ => return true,
    };
    matches!(cx.arena().lambda_parts(f), Some((ps, _)) if ps.len() == arity)
}

#[cfg(test)]
pub(crate) mod tests;
