//! The compilation pipeline, stage by stage, for tools that want to look at every
//! intermediate result (`unfad emit`, `unfad cost`): text -> typed Source -> Target ->
//! optimized Target -> native code.

use unfad_ad::request::{self, Parameter, RequestError};
use unfad_ad::AdError;
use unfad_opt::OptError;
use unfad_syntax::{check_source, Arena, ErrorKind, Func, Program};

use crate::Error;

/// A program loaded for one entry point: parsed, type-checked, calls inlined.
pub struct Pipeline {
    pub program: Program,
    /// The entry point as a closed Source function.
    pub source: Func,
}

impl Pipeline {
    /// Parse `src`, type-check it and inline the entry point (`None`: the last definition).
    pub fn load(src: &str, entry: Option<&str>) -> Result<Pipeline, Error> {
        Pipeline::load_in(src, entry, Arena::new())
    }

    /// [`Pipeline::load`] into `arena` (emptied first; see [`Program::parse_in`]).
    pub fn load_in(src: &str, entry: Option<&str>, arena: Arena) -> Result<Pipeline, Error> {
        let mut program = Program::load_in(src, arena)?;
        let d = program.entry(entry)?;
        let mut source = program.inline(d)?;
        if crate::expand::has_derivatives(&program.arena, source.body) {
            let body =
                crate::expand::expand(&mut program.arena, source.body).map_err(|e| match e {
                    crate::expand::ExpandError::Ad(e) => ad_error_of(&program, e),
                    crate::expand::ExpandError::Optimizer(m) => Error::Internal(m),
                })?;
            unfad_syntax::typeck::infer(&mut program.arena, &unfad_syntax::typeck::NoSource, body)
                .map_err(|e| {
                    Error::Internal(format!(
                        "an expanded derivative is ill-typed: {}",
                        e.message
                    ))
                })?;
            source.body = body;
        }
        Ok(Pipeline { program, source })
    }

    /// The parameters a derivative flows through (those holding reals; ints have none), in
    /// order: what a gradient is taken against by default.
    pub fn differentiable_params(&self) -> Vec<usize> {
        let types = self.source.param_types(&self.program.arena);
        (0..types.len()).filter(|&i| types[i].has_reals()).collect()
    }

    /// Parameter indices for the names in `wrt` (`None`: every parameter holding reals),
    /// checked by reverse mode's one validation of a request ([`unfad_ad::request`]).
    pub fn wrt(&self, wrt: Option<&[&str]>) -> Result<Vec<usize>, Error> {
        match wrt {
            None => Ok(self.differentiable_params()),
            Some(list) => {
                let wanted: Vec<Parameter> = list.iter().map(|w| Parameter::Named(w)).collect();
                request::parameters(&self.program.arena, &self.source, &wanted)
                    .map_err(request_error)
            }
        }
    }

    /// The arena, for another compilation (see [`Program::parse_in`]).
    pub fn into_arena(self) -> Arena {
        self.program.arena
    }

    /// Check that the entry point can be differentiated: Source fragment, real result.
    pub fn check_differentiable(&self) -> Result<(), Error> {
        self.check_source()?;
        request::check_result(&self.program.arena, &self.source).map_err(request_error)
    }

    /// Check that the entry point is in the Source fragment.
    pub fn check_source(&self) -> Result<(), Error> {
        let prog = &self.program;
        check_source(&prog.arena, self.source.body, |e, msg| {
            prog.error_at(ErrorKind::Unsupported, prog.arena.span(e), msg)
        })?;
        Ok(())
    }

    /// Value and gradient with respect to `wrt`, by the direct macro (not optimized): a
    /// Target function returning `(value, g_1, ..., g_k)`.
    pub fn reverse(&mut self, wrt: &[usize]) -> Result<Func, Error> {
        self.check_differentiable()?;
        unfad_ad::reverse(&mut self.program.arena, &self.source, wrt).map_err(|e| self.ad_error(e))
    }

    /// The same through the UNF pipeline.
    pub fn reverse_via_unf(&mut self, wrt: &[usize]) -> Result<Func, Error> {
        self.check_differentiable()?;
        unfad_ad::reverse_via_unf(&mut self.program.arena, &self.source, wrt)
            .map_err(|e| self.ad_error(e))
    }

    /// [`Pipeline::reverse`] with weakened continuations ([`unfad_ad::reverse_weakened`]):
    /// the same gradient, by a term linear in the program where the paper's is
    /// O(nodes × |Γ|). The route of [`Pipeline::optimized_reverse`].
    pub fn reverse_weakened(&mut self, wrt: &[usize]) -> Result<Func, Error> {
        self.check_differentiable()?;
        unfad_ad::reverse_weakened(&mut self.program.arena, &self.source, wrt)
            .map_err(|e| self.ad_error(e))
    }

    /// [`Pipeline::reverse_weakened`] with the result's constant factors taken out of the
    /// reverse pass ([`unfad_ad::reverse_factored`]): a mean's `1 / real(len(X))` scales
    /// the gradients once at the end instead of every contribution inside the loops. The
    /// route of [`Pipeline::optimized_reverse`].
    pub fn reverse_factored(&mut self, wrt: &[usize]) -> Result<Func, Error> {
        self.check_differentiable()?;
        unfad_ad::reverse_factored(&mut self.program.arena, &self.source, wrt)
            .map_err(|e| self.ad_error(e))
    }

    /// Value and gradient after partial evaluation and the optimizations: first-order.
    /// Differentiated by [`Pipeline::reverse_factored`] (the optimized terms are those of
    /// [`Pipeline::reverse`]'s up to the rounding of the factors' scaling, checked on
    /// random programs, at a fraction of the cost).
    pub fn optimized_reverse(&mut self, wrt: &[usize]) -> Result<Func, Error> {
        let rev = self.reverse_factored(wrt)?;
        self.optimize(&rev)
    }

    /// Value and directional derivative by forward mode ([`unfad_ad::forward`]),
    /// optimized: a function of the parameters and one tangent per parameter of `wrt`,
    /// returning `(value, tangent)`. The entry point may return any ground type.
    pub fn optimized_forward(&mut self, wrt: &[usize]) -> Result<Func, Error> {
        self.check_source()?;
        let fwd = unfad_ad::forward(&mut self.program.arena, &self.source, wrt)
            .map_err(|e| self.ad_error(e))?;
        self.optimize(&fwd)
    }

    /// Value, gradient and Hessian-vector product, optimized: a function of the
    /// parameters and one direction per parameter of `wrt`, returning `(value, g_1, ...,
    /// g_k, h_1, ..., h_k)`. By forward or reverse mode over the optimized gradient.
    pub fn optimized_hvp(
        &mut self,
        wrt: &[usize],
        route: crate::SecondOrder,
    ) -> Result<Func, Error> {
        let grad = self.optimized_reverse(wrt)?;
        let arena = &mut self.program.arena;
        let hvp = match route {
            crate::SecondOrder::ForwardOverReverse => unfad_ad::hessian_vector(arena, &grad, wrt),
            crate::SecondOrder::ReverseOverReverse => {
                unfad_ad::hessian_vector_by_reverse(arena, &grad, wrt)
            }
        }
        .map_err(|e| self.ad_error(e))?;
        self.optimize(&hvp)
    }

    /// The entry point as the native primal compiles it. What nothing reads goes
    /// (`unfad_opt::dead`), loop-invariant work moves out of the loops, and math kernels
    /// after a loop split from it into maps of their own (`unfad_opt::fission`), as in
    /// gradients. Only that: it changes no value, where the optimizer's other rules follow
    /// the smooth semantics.
    pub fn prepared_primal(&mut self) -> Func {
        let arena = &mut self.program.arena;
        let live = unfad_opt::dead::drop_dead_code(arena, &self.source);
        let hoisted = unfad_opt::hoist::hoist_invariants(arena, &live);
        unfad_opt::fission::split_kernel_tails(arena, &hoisted)
    }

    /// Optimize any function of this pipeline's arena.
    pub fn optimize(&mut self, func: &Func) -> Result<Func, Error> {
        unfad_opt::optimize(&mut self.program.arena, func).map_err(|e| match e {
            OptError::NotFirstOrder { .. } | OptError::IllTyped(_) | OptError::Unbound(_) => {
                Error::Internal(e.to_string())
            }
        })
    }

    /// An error of reverse mode, positioned in the source when it is about a node.
    pub fn ad_error(&self, e: AdError) -> Error {
        ad_error_of(&self.program, e)
    }
}

/// An error of differentiation in `program`, positioned in its source when it is about a
/// node.
fn ad_error_of(program: &Program, e: AdError) -> Error {
    match &e {
        AdError::Unsupported { span, message, .. } => {
            Error::Program(program.error_at(ErrorKind::Unsupported, *span, message.clone()))
        }
        AdError::Request(m) => Error::Argument(m.clone()),
        _ => Error::Internal(e.to_string()),
    }
}

/// A request reverse mode refuses, as this crate's error. Two are worded for the user of
/// the facade: a result that is not real is an error of the program, and an empty list of
/// names gets a shorter message.
fn request_error(e: RequestError) -> Error {
    match e {
        RequestError::NotReal { function, ret } => {
            Error::Program(unfad_syntax::Error::whole_program(
                ErrorKind::Type,
                format!(
                    "`{function}` returns `{ret}`; a gradient needs a function that returns `real`"
                ),
            ))
        }
        RequestError::NothingToDifferentiate => {
            Error::Argument("no parameter to differentiate against".into())
        }
        e => Error::Argument(e.to_string()),
    }
}
