//! unfad in GradBench, the benchmark suite of the AD field.
//!
//! [`serve`] plays the tool side of GradBench's protocol: JSON Lines, one message per
//! line on stdin, exactly one reply per message on stdout (logs go to stderr). `start`,
//! `define`, `evaluate` and `analysis` are handled; any other message is answered with
//! its id. The modules (`hello`, `lse`, `gmm`, `llsq`, `ode`, `lstm`, `ba`, `det`, and those of nested
//! derivatives in [`nested`]: `kmeans`, `saddle`, `particle`) are programs in unfad's own
//! language (`programs/*.ad`), compiled at `define` time with [`unfad::Engine`]; this crate
//! only converts JSON to and from their arguments (and, for `gmm`, unpacks the packed lower
//! triangle `l` and adds the data-independent constants; see [`gmm`]).
//!
//! Evaluations repeat until both `min_runs` and `min_seconds` are met and report one
//! `evaluate` timing per run; compilation is reported as a `define` timing.

#![forbid(unsafe_code)]

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

pub mod ba;
pub mod gmm;
pub mod lstm;
mod modules;
pub mod nested;

pub use modules::{define, Module};

/// The error of a module: a message for GradBench's `error` field.
pub type Fail = String;

/// Serve the protocol until stdin closes.
pub fn serve(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut modules: Vec<(String, Box<dyn Module>)> = Vec::new();
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Json>(&line) {
            Ok(msg) => respond(&msg, &mut modules),
            Err(e) => {
                eprintln!("unfad-gradbench: a message is not JSON ({e}): {line}");
                json!({"id": null})
            }
        };
        writeln!(output, "{reply}")?;
        output.flush()?;
    }
    Ok(())
}

/// The reply to one message.
pub fn respond(msg: &Json, modules: &mut Vec<(String, Box<dyn Module>)>) -> Json {
    let id = msg.get("id").cloned().unwrap_or(Json::Null);
    let kind = msg.get("kind").and_then(Json::as_str).unwrap_or("");
    match kind {
        "start" => json!({"id": id, "tool": "unfad"}),
        "define" => {
            let name = msg.get("module").and_then(Json::as_str).unwrap_or("");
            let t = Instant::now();
            match define(name) {
                Ok(m) => {
                    let ns = t.elapsed().as_nanos() as u64;
                    modules.retain(|(n, _)| n != name);
                    modules.push((name.to_string(), m));
                    json!({"id": id, "success": true, "timings": [{"name": "define", "nanoseconds": ns}]})
                }
                Err(e) => json!({"id": id, "success": false, "error": e}),
            }
        }
        "evaluate" => {
            let name = msg.get("module").and_then(Json::as_str).unwrap_or("");
            let function = msg.get("function").and_then(Json::as_str).unwrap_or("");
            let input = msg.get("input").cloned().unwrap_or(Json::Null);
            let Some((_, module)) = modules.iter_mut().find(|(n, _)| n == name) else {
                return json!({"id": id, "success": false, "error": format!("module `{name}` is not defined")});
            };
            match evaluate(module.as_mut(), function, &input) {
                Ok((output, timings)) => {
                    let timings: Vec<Json> = timings
                        .iter()
                        .map(|d| json!({"name": "evaluate", "nanoseconds": d.as_nanos() as u64}))
                        .collect();
                    json!({"id": id, "success": true, "output": output, "timings": timings})
                }
                Err(e) => json!({"id": id, "success": false, "error": e}),
            }
        }
        _ => json!({"id": id}),
    }
}

/// Run `function` on `input` until `min_runs` runs and `min_seconds` seconds are both
/// reached (once when the input has neither); the output of the last run and every
/// run's time. Preparing the arguments is not timed.
fn evaluate(
    module: &mut dyn Module,
    function: &str,
    input: &Json,
) -> Result<(Json, Vec<Duration>), Fail> {
    let min_runs = input
        .get("min_runs")
        .and_then(Json::as_u64)
        .unwrap_or(1)
        .max(1);
    let min_seconds = input
        .get("min_seconds")
        .and_then(Json::as_f64)
        .unwrap_or(0.0);
    let mut call = module.prepare(function, input)?;
    let mut timings = Vec::new();
    let mut total = Duration::ZERO;
    loop {
        let t = Instant::now();
        call.run()?;
        let d = t.elapsed();
        total += d;
        timings.push(d);
        if timings.len() as u64 >= min_runs && total.as_secs_f64() >= min_seconds {
            break;
        }
    }
    Ok((call.output()?, timings))
}

/// A prepared evaluation: arguments converted, ready to run repeatedly.
pub trait Call {
    /// One run of the function (timed).
    fn run(&mut self) -> Result<(), Fail>;
    /// The result of the last run, as GradBench expects it.
    fn output(&self) -> Result<Json, Fail>;
}

/// A JSON number, refusing NaN and infinities (GradBench rejects them).
pub fn number(x: f64) -> Result<Json, Fail> {
    serde_json::Number::from_f64(x)
        .map(Json::Number)
        .ok_or_else(|| format!("the result is not finite ({x})"))
}

/// `v` as a JSON array of numbers.
pub fn numbers(v: &[f64]) -> Result<Json, Fail> {
    v.iter()
        .map(|&x| number(x))
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

/// The field `name` of the input object.
pub fn field<'a>(input: &'a Json, name: &str) -> Result<&'a Json, Fail> {
    input
        .get(name)
        .ok_or_else(|| format!("the input has no `{name}`"))
}

/// The whole number `name` of the input object (a count or a size).
pub fn count(input: &Json, name: &str) -> Result<usize, Fail> {
    field(input, name)?
        .as_u64()
        .map(|v| v as usize)
        .ok_or_else(|| format!("`{name}` must be a whole number"))
}

/// A JSON array of numbers.
pub fn reals(j: &Json, what: &str) -> Result<Vec<f64>, Fail> {
    let items = j
        .as_array()
        .ok_or_else(|| format!("`{what}` must be an array of numbers"))?;
    items
        .iter()
        .map(|x| {
            x.as_f64()
                .ok_or_else(|| format!("`{what}` must be an array of numbers"))
        })
        .collect()
}

/// A JSON array of equally long arrays of numbers, flattened row-major, with its shape.
pub fn matrix(j: &Json, what: &str) -> Result<(Vec<f64>, usize, usize), Fail> {
    let rows = j
        .as_array()
        .ok_or_else(|| format!("`{what}` must be an array of arrays"))?;
    let mut data = Vec::new();
    let mut width = None;
    for r in rows {
        let r = reals(r, what)?;
        match width {
            None => width = Some(r.len()),
            Some(w) if w != r.len() => {
                return Err(format!("the rows of `{what}` have different lengths"))
            }
            _ => {}
        }
        data.extend(r);
    }
    Ok((data, rows.len(), width.unwrap_or(0)))
}

/// A row-major matrix of `rows` rows as a JSON array of rows.
pub fn rows_json(data: &[f64], rows: usize) -> Result<Json, Fail> {
    let width = data.len().checked_div(rows).unwrap_or(0);
    let out: Result<Vec<Json>, Fail> = (0..rows)
        .map(|r| numbers(&data[r * width..(r + 1) * width]))
        .collect();
    Ok(Json::Array(out?))
}
