//! The stages of a compiled function, for looking at them from Python: `emit` prints a
//! stage's term (as `unfad emit` does) and `cost` measures the cost model (as `unfad cost`
//! does), both by running the facade's `Pipeline` again on the function's source.

use unfad::Pipeline;
use unfad_syntax::print_func;

use crate::errors::Failure;

/// The stages a gradient shows, in pipeline order.
pub const GRADIENT_STAGES: &[&str] = &["source", "unf", "target", "optimized", "clif"];

/// The stages a primal function shows.
pub const PRIMAL_STAGES: &[&str] = &["source", "optimized", "clif"];

/// What a compiled function was compiled from: enough to run the pipeline again.
#[derive(Clone, Debug)]
pub struct Origin {
    pub source: String,
    pub entry: Option<String>,
    /// The differentiated parameters (indices, in order); `None` for a primal function.
    pub wrt: Option<Vec<usize>>,
}

impl Origin {
    fn load(&self) -> Result<Pipeline, Failure> {
        Ok(Pipeline::load(&self.source, self.entry.as_deref())?)
    }

    /// The text of `stage`: the typed Source term, the UNFs, the Target term before and
    /// after optimization, or Cranelift's IR.
    pub fn emit(&self, stage: &str) -> Result<String, Failure> {
        let mut p = self.load()?;
        let arena_text = |p: &Pipeline, f: &unfad_syntax::Func| print_func(&p.program.arena, f);
        let Some(wrt) = &self.wrt else {
            return match stage {
                "source" => Ok(arena_text(&p, &p.source)),
                "optimized" => {
                    let source = p.source.clone();
                    let optimized = p.optimize(&source)?;
                    Ok(arena_text(&p, &optimized))
                }
                // The code the native primal runs: the term as `compile` prepares it.
                "clif" => {
                    let primal = p.prepared_primal();
                    Ok(unfad_jit::clif_text(&p.program.arena, &primal)
                        .map_err(unfad::Error::from)?)
                }
                _ => Err(unknown_stage(stage, PRIMAL_STAGES)),
            };
        };
        match stage {
            "source" => Ok(arena_text(&p, &p.source)),
            "unf" => {
                p.check_differentiable()?;
                let arena = &p.program.arena;
                let source = unfad_ad::source_unf(arena, &p.source).map_err(|e| p.ad_error(e))?;
                let target =
                    unfad_ad::target_unf(arena, &p.source, wrt).map_err(|e| p.ad_error(e))?;
                Ok(format!(
                    "// Source UNF\n{}\n\n// Target UNF: D_rho of it\n{}\n",
                    unfad_ad::unf::print_source(arena, &source),
                    unfad_ad::unf::print_target(arena, &target)
                ))
            }
            "target" => {
                let f = p.reverse(wrt)?;
                Ok(arena_text(&p, &f))
            }
            "optimized" => {
                let f = p.optimized_reverse(wrt)?;
                Ok(arena_text(&p, &f))
            }
            "clif" => {
                let f = p.optimized_reverse(wrt)?;
                Ok(unfad_jit::clif_text_parallel(&mut p.program.arena, &f)
                    .map_err(unfad::Error::from)?)
            }
            _ => Err(unknown_stage(stage, GRADIENT_STAGES)),
        }
    }

    /// The cost model's measure with size variables valued by `given` (100 for the others):
    /// the sizes used, the primal's cost, and for a gradient its cost and the bound.
    pub fn cost(&self, given: &[(String, u64)]) -> Result<CostReport, Failure> {
        let mut p = self.load()?;
        let vars = p.source.size_vars(&p.program.arena);
        if let Some((k, _)) = given
            .iter()
            .find(|(k, _)| !vars.iter().any(|v| v.as_ref() == k))
        {
            let names: Vec<&str> = vars.iter().map(|v| v.as_ref()).collect();
            return Err(Failure::Argument {
                message: format!(
                    "`{k}` is not a size of the program (its sizes: {})",
                    names.join(", ")
                ),
                parameter: None,
            });
        }
        let value_of = |v: &str| given.iter().find(|(k, _)| k == v).map_or(100, |(_, n)| *n);
        let lookup = |v: &str| Some(value_of(v));
        let sizes = vars.iter().map(|v| (v.to_string(), value_of(v))).collect();
        let (bound, gradient) = match &self.wrt {
            Some(wrt) => {
                let opt = p.optimized_reverse(wrt)?;
                let bound = unfad_opt::Bound::measure(&p.program.arena, &p.source, &opt, &lookup);
                (bound, true)
            }
            // The primal alone: measured as its own "gradient", of which only the primal
            // cost and `p` are reported.
            None => (
                unfad_opt::Bound::measure(&p.program.arena, &p.source, &p.source, &lookup),
                false,
            ),
        };
        Ok(CostReport {
            sizes,
            bound,
            gradient,
        })
    }
}

/// What [`Origin::cost`] measured.
pub struct CostReport {
    pub sizes: Vec<(String, u64)>,
    pub bound: unfad_opt::Bound,
    /// Whether `bound.gradient` is a gradient's cost (not the primal's again).
    pub gradient: bool,
}

fn unknown_stage(stage: &str, stages: &[&str]) -> Failure {
    let extra = if GRADIENT_STAGES.contains(&stage) {
        " (that stage is a gradient's: compile with `compile_grad`)"
    } else {
        ""
    };
    Failure::Argument {
        message: format!(
            "no stage `{stage}`{extra}; the stages: {}",
            stages.join(", ")
        ),
        parameter: None,
    }
}
