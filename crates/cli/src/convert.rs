//! Values between JSON, the interpreter and the native functions' arguments.

use unfad::Arg;
use unfad_interp::Value;
use unfad_syntax::Type;

/// Owned storage for the arguments of a native call, built from checked values.
pub struct Args {
    /// One flat buffer per array-of-reals argument (or nested array of reals, or of ints).
    buffers: Vec<Vec<f64>>,
    shapes: Vec<Vec<usize>>,
    plan: Vec<Plan>,
}

/// How to build one `Arg` from the storage.
enum Plan {
    Real(f64),
    /// An array of reals of any rank: buffer index.
    Array(usize),
    Tuple(Vec<Plan>),
    Elements(Vec<Plan>),
}

impl Args {
    /// Storage for `values` of the parameter types `types`.
    pub fn new(values: &[Value<f64>], types: &[Type]) -> Args {
        let mut args = Args {
            buffers: Vec::new(),
            shapes: Vec::new(),
            plan: Vec::new(),
        };
        for (v, t) in values.iter().zip(types) {
            let p = args.plan_of(v, t);
            args.plan.push(p);
        }
        args
    }

    fn plan_of(&mut self, v: &Value<f64>, t: &Type) -> Plan {
        match (v, t) {
            (Value::Real(x), _) => Plan::Real(*x),
            (Value::Tuple(items), Type::Tuple(ts)) => Plan::Tuple(
                items
                    .iter()
                    .zip(ts.iter())
                    .map(|(v, t)| self.plan_of(v, t))
                    .collect(),
            ),
            (Value::Array(items), Type::Array(_, elem)) => {
                if unfad::component_count(t) == 1 && leaf_is_real(t) {
                    let mut shape = Vec::new();
                    array_shape(v, t, &mut shape);
                    self.buffers.push(v.leaves());
                    self.shapes.push(shape);
                    Plan::Array(self.buffers.len() - 1)
                } else {
                    Plan::Elements(items.iter().map(|v| self.plan_of(v, elem)).collect())
                }
            }
            // Values were checked against the types; nothing else occurs.
            _ => Plan::Real(f64::NAN),
        }
    }

    /// The arguments, borrowing the storage.
    pub fn args(&self) -> Vec<Arg<'_>> {
        self.plan.iter().map(|p| self.arg(p)).collect()
    }

    fn arg<'a>(&'a self, p: &Plan) -> Arg<'a> {
        match p {
            Plan::Real(x) => Arg::Real(*x),
            Plan::Array(i) => Arg::array(&self.buffers[*i], &self.shapes[*i]),
            Plan::Tuple(items) => Arg::tuple(items.iter().map(|q| self.arg(q)).collect()),
            Plan::Elements(items) => Arg::elements(items.iter().map(|q| self.arg(q)).collect()),
        }
    }
}

/// Arrays of reals or of ints (carried as reals) go as one flat buffer.
fn leaf_is_real(t: &Type) -> bool {
    match t {
        Type::Real | Type::Int => true,
        Type::Array(_, e) => leaf_is_real(e),
        _ => false,
    }
}

/// The lengths of the nested arrays of `v`, of type `t` (rectangular: checked on input).
/// Below an empty array the lengths are unknown and given as 0: only the rank matters.
fn array_shape(v: &Value<f64>, t: &Type, out: &mut Vec<usize>) {
    if let Type::Array(_, elem) = t {
        match v {
            Value::Array(items) if !items.is_empty() => {
                out.push(items.len());
                array_shape(&items[0], elem, out);
            }
            _ => {
                out.push(0);
                array_shape(v, elem, out);
            }
        }
    }
}
