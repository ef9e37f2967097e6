//! Errors as Python exceptions: every failure of compiling or calling becomes an instance of
//! a class of `unfad._errors` (the Python side defines them, with their attributes), and a
//! panic of the native call is caught and reported as an internal error.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// An error on its way to Python: which class, its message, and its attributes.
pub enum Failure {
    /// The program: syntax, type, unsupported construct, usage (no such entry point).
    Program(unfad_syntax::Error),
    /// The arguments do not fit the parameters (or a request does not fit the program).
    Argument {
        message: String,
        /// The parameter the argument is for, when one is at fault.
        parameter: Option<String>,
    },
    /// A bug of unfad, reported instead of crashing.
    Internal(String),
}

impl Failure {
    /// An argument error about parameter `name`.
    pub fn argument(name: &str, message: impl Into<String>) -> Failure {
        Failure::Argument {
            message: message.into(),
            parameter: Some(name.to_string()),
        }
    }

    /// The Python exception for this failure.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self.exception(py) {
            Ok(e) => e,
            Err(e) => e,
        }
    }

    fn exception(self, py: Python<'_>) -> PyResult<PyErr> {
        let module = py.import("unfad._errors")?;
        let kwargs = PyDict::new(py);
        let (class, message) = match self {
            Failure::Program(e) => {
                kwargs.set_item("kind", e.kind.to_string())?;
                kwargs.set_item("line", e.position.map(|p| p.line))?;
                kwargs.set_item("column", e.position.map(|p| p.col))?;
                kwargs.set_item("detail", e.message.clone())?;
                ("ProgramError", e.to_string())
            }
            Failure::Argument { message, parameter } => {
                kwargs.set_item("parameter", parameter)?;
                ("ArgumentError", message)
            }
            Failure::Internal(message) => ("InternalError", message),
        };
        let instance = module.getattr(class)?.call((message,), Some(&kwargs))?;
        Ok(PyErr::from_value(instance))
    }
}

impl From<unfad::Error> for Failure {
    fn from(e: unfad::Error) -> Failure {
        match e {
            unfad::Error::Program(e) => Failure::Program(e),
            unfad::Error::Argument(message) => {
                let parameter = parameter_named_in(&message);
                Failure::Argument { message, parameter }
            }
            unfad::Error::Internal(_) => Failure::Internal(e.to_string()),
        }
    }
}

/// The parameter an argument error of the facade is about: its messages about one
/// parameter start with ``parameter `NAME` `` (the facade's error carries only text).
fn parameter_named_in(message: &str) -> Option<String> {
    let rest = message.strip_prefix("parameter `")?;
    let name = &rest[..rest.find('`')?];
    // `A[3].0` names a place inside parameter `A`.
    let end = name.find(['[', '.']).unwrap_or(name.len());
    Some(name[..end].to_string())
}

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string());
    format!("internal error: {text}")
}

/// Run `f`, turning a panic into [`Failure::Internal`], so that none crosses into Python.
pub fn no_panic<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|payload| Err(Failure::Internal(panic_message(payload.as_ref()))))
}
