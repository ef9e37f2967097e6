//! `jvp`, `hvp` and `hessian`: derivatives beyond the gradient, with the JSON conventions
//! of `grad` (objects keyed by parameter name, each shaped like its parameter).

use std::path::Path;

use serde_json::{json, Value as Json};
use unfad::{Engine, GradOptions, Pipeline, SecondOrder};
use unfad_interp::{args_from_json, value_from_leaves, value_to_json, SizeEnv, Value};
use unfad_syntax::Type;

use crate::convert::Args;
use crate::{fail, gradient_json, load, print_json, read_args, read_json, report, Io, Reported};

/// What every derivative command reads: the program, its input, the entry point and the
/// parameters to differentiate against.
pub struct Request<'a> {
    file: &'a Path,
    input: &'a Path,
    entry: Option<&'a str>,
    wrt: Option<&'a [String]>,
}

impl<'a> Request<'a> {
    pub fn new(
        file: &'a Path,
        input: &'a Path,
        entry: Option<&'a str>,
        wrt: Option<&'a [String]>,
    ) -> Request<'a> {
        Request {
            file,
            input,
            entry,
            wrt,
        }
    }
}

/// A request loaded: the source text, the pipeline, the arguments and the parameters to
/// differentiate against (indices in order, and their names).
struct Loaded {
    text: String,
    pipeline: Pipeline,
    values: Vec<Value<f64>>,
    sizes: SizeEnv,
    input_json: Json,
    wrt: Vec<usize>,
    wrt_names: Vec<String>,
}

impl Loaded {
    fn names(&self) -> Vec<String> {
        let p = &self.pipeline;
        p.source.param_names(&p.program.arena)
    }

    fn types(&self) -> Vec<Type> {
        let p = &self.pipeline;
        p.source.param_types(&p.program.arena)
    }

    fn wrt_strs(&self) -> Vec<&str> {
        self.wrt_names.iter().map(String::as_str).collect()
    }
}

fn load_request(r: &Request, io: &mut Io) -> Result<Loaded, Reported> {
    let (text, p) = load(r.file, r.entry, io)?;
    let (values, sizes) = read_args(&p, r.input, io)?;
    let input_json = read_json(r.input, io)?;
    let wrt_names: Option<Vec<&str>> = r.wrt.map(|w| w.iter().map(String::as_str).collect());
    let mut wrt = match p.wrt(wrt_names.as_deref()) {
        Ok(w) => w,
        Err(e) => return report(io, r.file, &text, e),
    };
    wrt.sort_unstable();
    let names = p.source.param_names(&p.program.arena);
    let wrt_names = wrt.iter().map(|&i| names[i].clone()).collect();
    Ok(Loaded {
        text,
        pipeline: p,
        values,
        sizes,
        input_json,
        wrt,
        wrt_names,
    })
}

/// The direction (a tangent, or the direction of a Hessian-vector product) from a JSON
/// file of the input's shape. The parameters that are not differentiated may be left
/// out: they take the input's values, which are not read.
fn read_direction(
    l: &Loaded,
    path: &Path,
    what: &str,
    io: &mut Io,
) -> Result<Vec<Value<f64>>, Reported> {
    let mut json = read_json(path, io)?;
    let Json::Object(map) = &mut json else {
        return fail(
            io,
            &format!(
                "error: the {what} in {} must be a JSON object from parameter name to value",
                path.display()
            ),
        );
    };
    let names = l.names();
    for (i, name) in names.iter().enumerate() {
        if let (false, Some(v)) = (l.wrt.contains(&i), l.input_json.get(name)) {
            map.insert(name.clone(), v.clone());
        }
    }
    let p = &l.pipeline;
    let (values, _) = match args_from_json::<f64>(&p.program.arena, &p.source, &json) {
        Ok(r) => r,
        Err(e) => return fail(io, &format!("error: the {what}: {e}")),
    };
    for &i in &l.wrt {
        if !same_shape(&values[i], &l.values[i]) {
            return fail(
                io,
                &format!(
                    "error: the {what} of `{}` has the shape {}, its input {}",
                    names[i],
                    shape_text(&values[i]),
                    shape_text(&l.values[i])
                ),
            );
        }
    }
    Ok(values)
}

fn same_shape(a: &Value<f64>, b: &Value<f64>) -> bool {
    match (a, b) {
        (Value::Real(_), Value::Real(_)) => true,
        (Value::Tuple(x), Value::Tuple(y)) | (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same_shape(p, q))
        }
        _ => false,
    }
}

/// A value's shape for an error: `[3][2]`, `(real, [4])`.
fn shape_text(v: &Value<f64>) -> String {
    match v {
        Value::Real(_) => "real".into(),
        Value::Array(items) => format!(
            "[{}]{}",
            items.len(),
            items.first().map_or(String::new(), |x| match x {
                Value::Real(_) => String::new(),
                x => shape_text(x),
            })
        ),
        Value::Tuple(items) => format!(
            "({})",
            items.iter().map(shape_text).collect::<Vec<_>>().join(", ")
        ),
        _ => "?".into(),
    }
}

/// `unfad jvp`: `{"value": v, "tangent": t}`.
pub fn jvp(
    file: &Path,
    input: &Path,
    tangent: &Path,
    entry: Option<&str>,
    wrt: Option<&[String]>,
    io: &mut Io,
) -> Result<(), Reported> {
    let l = load_request(&Request::new(file, input, entry, wrt), io)?;
    let tangents = read_direction(&l, tangent, "tangent", io)?;
    let names = l.wrt_strs();
    let f = match Engine::new().compile_jvp_with(
        &l.text,
        GradOptions {
            entry,
            wrt: Some(&names),
        },
    ) {
        Ok(f) => f,
        Err(e) => return report(io, file, &l.text, e),
    };
    let types = l.types();
    let (args, dirs) = (Args::new(&l.values, &types), Args::new(&tangents, &types));
    let out = match f.call(&args.args(), &dirs.args()) {
        Ok(out) => out,
        Err(e) => return fail(io, &format!("error: {e}")),
    };
    let ret = l.pipeline.source.ret.clone();
    let shaped = |flat: &[f64]| result_json(&ret, flat, &l.sizes);
    print_json(
        io,
        &json!({ "value": shaped(&out.value), "tangent": shaped(&out.tangent) }),
    )
}

/// A result (flat leaves) as JSON shaped like its type.
fn result_json(ty: &Type, flat: &[f64], sizes: &SizeEnv) -> Json {
    if *ty == Type::Real && flat.len() == 1 {
        return unfad_interp::number_to_json(flat[0]);
    }
    let lookup = sizes.lookup();
    match value_from_leaves(ty, flat, &|v| Some(lookup(v).unwrap_or(0))) {
        Some(v) => value_to_json(&v),
        None => gradient_json(ty, flat, sizes),
    }
}

/// Which second-order command.
pub enum SecondOrderOutput<'a> {
    /// The Hessian times the direction in this file.
    Hvp(&'a Path, SecondOrder),
    /// The dense Hessian.
    Hessian,
}

/// `unfad hvp` and `unfad hessian`.
pub fn second_order(r: &Request, output: SecondOrderOutput, io: &mut Io) -> Result<(), Reported> {
    let l = load_request(r, io)?;
    let names = l.wrt_strs();
    let options = GradOptions {
        entry: r.entry,
        wrt: Some(&names),
    };
    let all_names = l.names();
    let types = l.types();
    let args = Args::new(&l.values, &types);
    let gradient_of = |grad: &dyn Fn(usize) -> Vec<f64>| {
        let mut m = serde_json::Map::new();
        for &i in &l.wrt {
            m.insert(
                all_names[i].clone(),
                gradient_json(&types[i], &grad(i), &l.sizes),
            );
        }
        Json::Object(m)
    };
    let engine = Engine::new();
    match output {
        SecondOrderOutput::Hvp(direction, route) => {
            let dirs = read_direction(&l, direction, "direction", io)?;
            let f = match engine.compile_hvp_with(&l.text, options, route) {
                Ok(f) => f,
                Err(e) => return report(io, r.file, &l.text, e),
            };
            let dirs = Args::new(&dirs, &types);
            let out = match f.call(&args.args(), &dirs.args()) {
                Ok(out) => out,
                Err(e) => return fail(io, &format!("error: {e}")),
            };
            let gradient = gradient_of(&|i| out.gradient(i).to_vec());
            let hvp = gradient_of(&|i| out.hvp(i).to_vec());
            print_json(
                io,
                &json!({
                    "value": unfad_interp::number_to_json(out.value),
                    "gradient": gradient,
                    "hvp": hvp,
                }),
            )
        }
        SecondOrderOutput::Hessian => {
            let f = match engine.compile_hessian_with(&l.text, options) {
                Ok(f) => f,
                Err(e) => return report(io, r.file, &l.text, e),
            };
            let out = match f.call(&args.args()) {
                Ok(out) => out,
                Err(e) => return fail(io, &format!("error: {e}")),
            };
            let gradient = gradient_of(&|i| out.gradient(i).to_vec());
            let rows: Vec<Json> = out
                .hessian
                .iter()
                .map(|row| {
                    Json::Array(
                        row.iter()
                            .map(|&x| unfad_interp::number_to_json(x))
                            .collect(),
                    )
                })
                .collect();
            print_json(
                io,
                &json!({
                    "value": unfad_interp::number_to_json(out.value),
                    "gradient": gradient,
                    "hessian": rows,
                }),
            )
        }
    }
}
