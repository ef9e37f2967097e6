//! Showing front-end errors with the offending line, like a compiler does.

use std::io::Write;

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor::NoColor};
use unfad_syntax::{Error, SourceId, PRELUDE};

/// Write `err` (from the program `text` read from `name`) to `out`.
pub fn error(out: &mut dyn Write, name: &str, text: &str, err: &Error) {
    let mut files = SimpleFiles::new();
    let prelude = files.add("<prelude>".to_string(), PRELUDE.to_string());
    let user = files.add(name.to_string(), text.to_string());
    let mut diag = Diagnostic::error().with_message(format!("{}: {}", err.kind, err.message));
    if err.position.is_some() {
        let file = if err.span.src == SourceId::PRELUDE {
            prelude
        } else {
            user
        };
        let range = err.span.lo as usize..(err.span.hi as usize).max(err.span.lo as usize);
        diag = diag.with_labels(vec![Label::primary(file, range)]);
    }
    let mut writer = NoColor::new(Vec::new());
    let config = term::Config::default();
    if term::emit(&mut writer, &config, &files, &diag).is_err() {
        let _ = writeln!(out, "error: {err}");
        return;
    }
    let _ = out.write_all(&writer.into_inner());
}
