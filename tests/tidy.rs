//! Tidy: the conventions of the code base that review would otherwise check by hand, read
//! from the source tree (`CARGO_MANIFEST_DIR`), without the network, in a few seconds.
//!
//! - the code is formatted (`cargo fmt --all -- --check`);
//! - `unsafe` appears only in the boundary modules ([`UNSAFE_BOUNDARY`]), each
//!   `unsafe` block, impl, trait or fn under a `// SAFETY:` comment, and every other crate
//!   root says `#![forbid(unsafe_code)]`;
//! - no test is `#[ignore]`d or `#[should_panic]`;
//! - docs/ARCHITECTURE.md names every source module (the rule is at [`architecture_names`]);
//! - every optimizer rule has a doc comment and a test that names it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The boundary modules, the files allowed `unsafe`: the JIT's two, where Rust calls the
/// compiled code (it turns it into a function pointer and calls it, checked per call or
/// once for many runs) and where the compiled code calls Rust with a pointer (the math
/// kernels applied to a buffer of its stack, on the host's widest vectors); and the
/// kernels' x86-64 instances, whose vector intrinsics are `unsafe` to call outside the
/// functions compiled for their instructions.
const UNSAFE_BOUNDARY: [&str; 4] = [
    "crates/jit/src/compiled.rs",
    "crates/jit/src/batch.rs",
    "crates/jit/src/routines.rs",
    "crates/kernels/src/x86.rs",
];

/// Directories of the workspace whose Rust code is checked.
const RUST_DIRS: &[&str] = &["crates", "src", "tests", "benches", "examples"];

/// Every `.rs` file under `dir` (workspace-relative), sorted; `target` and hidden
/// directories are skipped.
fn rust_files(dir: &str) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(root, &path, out);
                }
            } else if name.ends_with(".rs") {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let root = Path::new(ROOT);
    let mut out = Vec::new();
    walk(root, &root.join(dir), &mut out);
    out.sort();
    out
}

/// Every `.rs` file of the workspace's Rust directories.
fn all_rust_files() -> Vec<String> {
    RUST_DIRS.iter().flat_map(|d| rust_files(d)).collect()
}

fn read(rel: &str) -> String {
    fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The text of a Rust file with comments, string literals and character literals blanked
/// out (replaced by spaces, newlines kept), so what is left is code, line for line.
/// Lifetimes (`'a`) are kept; raw strings (`r#"..."#`) and nested block comments are
/// understood.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (i == 0
                || !is_ident(chars[i - 1])
                || (chars[i - 1] == 'b' && (i < 2 || !is_ident(chars[i - 2]))))
            && matches!(next, Some('"') | Some('#'))
        {
            // A raw string `r"..."`, `r#"..."#`, `br"..."`, or a raw identifier `r#name`.
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                // A raw identifier `r#name`: code.
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            out.push('r');
            for _ in i + 1..=j {
                out.push(' ');
            }
            i = j + 1;
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += hashes + 1;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() {
                if chars[i] == '\\' {
                    out.push(' ');
                    if let Some(&e) = chars.get(i + 1) {
                        out.push(blank(e));
                    }
                    i += 2;
                } else if chars[i] == '"' {
                    out.push(' ');
                    i += 1;
                    break;
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: up to the closing quote.
            out.push_str("  ");
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The byte offsets in `text` where `word` stands as a whole word (not inside a longer
/// identifier).
fn word_columns(text: &str, word: &str) -> Vec<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word)
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
        .map(|(at, _)| at)
        .collect()
}

/// Whether the `unsafe` at `column` of `code` (a line of code only) starts a block, impl,
/// trait or fn declaration, which need a `// SAFETY:` comment (an `unsafe extern "C"
/// fn(...)` pointer type does not). An `unsafe` ending its line counts as a block.
fn needs_safety_comment(code: &str, column: usize) -> bool {
    let rest = code[column + "unsafe".len()..].trim_start();
    if rest.is_empty() || rest.starts_with('{') {
        return true;
    }
    let starts_word = |s: &str, w: &str| word_columns(s, w).first() == Some(&0);
    if starts_word(rest, "impl") || starts_word(rest, "trait") {
        return true;
    }
    // The ABI string of `extern "C"` is blanked out already.
    let rest = match rest.strip_prefix("extern") {
        Some(r) if starts_word(rest, "extern") => r.trim_start(),
        _ => rest,
    };
    // `fn name(` declares a function; `fn(` is a pointer type.
    starts_word(rest, "fn")
        && rest["fn".len()..]
            .trim_start()
            .starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Whether a `// SAFETY:` comment stands directly above line `at` of `lines`: one of the
/// three lines above is a comment line, and the block of comment lines it belongs to (up
/// to the first line that is not a comment) has a line starting with `// SAFETY:`.
fn has_safety_comment(lines: &[&str], at: usize) -> bool {
    let is_comment = |l: &str| l.trim_start().starts_with("//");
    let Some(start) = (at.saturating_sub(3)..at)
        .rev()
        .find(|&k| is_comment(lines[k]))
    else {
        return false;
    };
    (0..=start)
        .rev()
        .take_while(|&k| is_comment(lines[k]))
        .any(|k| lines[k].trim_start().starts_with("// SAFETY:"))
}

#[test]
fn code_is_formatted() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let version = Command::new(&cargo)
        .args(["fmt", "--version"])
        .current_dir(ROOT)
        .output();
    if !version.is_ok_and(|o| o.status.success()) {
        panic!("rustfmt is not installed: run `rustup component add rustfmt` (.ci/run does)");
    }
    let out = Command::new(&cargo)
        .args(["fmt", "--all", "--", "--check", "--files-with-diff"])
        .current_dir(ROOT)
        .output()
        .expect("cargo fmt runs");
    let files = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "`cargo fmt --all` would change these files (run it):\n{files}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unsafe_code_only_in_the_boundary_modules_and_under_a_safety_comment() {
    assert!(
        UNSAFE_BOUNDARY
            .iter()
            .all(|f| Path::new(ROOT).join(f).exists()),
        "a boundary module of {UNSAFE_BOUNDARY:?} does not exist"
    );
    let mut problems = Vec::new();
    for file in all_rust_files() {
        let text = read(&file);
        let code = code_only(&text);
        let lines: Vec<&str> = text.lines().collect();
        for (k, line) in code.lines().enumerate() {
            for column in word_columns(line, "unsafe") {
                let at = format!("{file}:{}", k + 1);
                if !UNSAFE_BOUNDARY.contains(&file.as_str()) {
                    problems.push(format!(
                        "{at}: `unsafe` outside the boundary modules {UNSAFE_BOUNDARY:?}"
                    ));
                }
                if needs_safety_comment(line, column) && !has_safety_comment(&lines, k) {
                    problems.push(format!(
                        "{at}: no `// SAFETY:` comment line directly above (within 3 lines)"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The crate roots of the workspace: every package's `src/lib.rs`, `src/main.rs` and
/// `src/bin/*.rs` (or `src/bin/*/main.rs`).
fn crate_roots() -> Vec<String> {
    let mut packages = vec![String::new()];
    for entry in fs::read_dir(Path::new(ROOT).join("crates"))
        .unwrap()
        .flatten()
    {
        if entry.path().join("Cargo.toml").exists() {
            packages.push(format!("crates/{}/", entry.file_name().to_string_lossy()));
        }
    }
    let mut roots = Vec::new();
    for package in packages {
        for root in ["src/lib.rs", "src/main.rs"] {
            let path = format!("{package}{root}");
            if Path::new(ROOT).join(&path).exists() {
                roots.push(path);
            }
        }
        let bins = format!("{package}src/bin");
        for file in rust_files(&bins) {
            let inner = &file[bins.len() + 1..];
            if !inner.contains('/') || inner.ends_with("/main.rs") {
                roots.push(file);
            }
        }
    }
    roots.sort();
    roots
}

#[test]
fn every_other_crate_root_forbids_unsafe_code() {
    // The JIT's library root is exempt: its `src/` holds the boundary.
    let exempt = |root: &str| {
        root.ends_with("src/lib.rs")
            && UNSAFE_BOUNDARY
                .iter()
                .any(|f| f.starts_with(root.trim_end_matches("lib.rs")))
    };
    let missing: Vec<String> = crate_roots()
        .into_iter()
        .filter(|root| !exempt(root))
        .filter(|root| {
            !code_only(&read(root))
                .lines()
                .any(|l| l.trim() == "#![forbid(unsafe_code)]")
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these crate roots lack `#![forbid(unsafe_code)]`:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_ignored_or_should_panic_tests() {
    let mut found = Vec::new();
    for file in all_rust_files() {
        let code = code_only(&read(&file));
        for (k, line) in code.lines().enumerate() {
            let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            let attribute = squeezed.contains("#[ignore")
                || squeezed.contains("#[should_panic")
                || (squeezed.contains("#[cfg_attr(")
                    && (squeezed.contains("ignore") || squeezed.contains("should_panic")));
            if attribute {
                found.push(format!("{file}:{}: {}", k + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "no `#[ignore]` and no `#[should_panic]` (a test passes by its assertions):\n{}",
        found.join("\n")
    );
}

/// The source modules docs/ARCHITECTURE.md must name, per crate directory (`crates/<dir>`):
/// every `.rs` file under the crate's `src/`, as its path relative to `src/`, except crate
/// and module roots (`lib.rs`, `main.rs`, `mod.rs`), binaries (`bin/`) and test modules
/// (anything under a `tests/` folder, and files named `tests.rs`); and every folder module
/// (a folder under `src/` other than `bin/` and `tests/`), as `folder/`.
fn source_modules(dir: &str) -> Vec<String> {
    let src = format!("crates/{dir}/src/");
    let mut modules = BTreeSet::new();
    for file in rust_files(&src) {
        let rel = &file[src.len()..];
        let parts: Vec<&str> = rel.split('/').collect();
        let (folders, name) = parts.split_at(parts.len() - 1);
        if folders.iter().any(|f| *f == "tests" || *f == "bin") {
            continue;
        }
        for depth in 1..=folders.len() {
            modules.insert(format!("{}/", folders[..depth].join("/")));
        }
        if !["lib.rs", "main.rs", "mod.rs", "tests.rs"].contains(&name[0]) {
            modules.insert(rel.to_string());
        }
    }
    modules.into_iter().collect()
}

/// The section of docs/ARCHITECTURE.md about the crate in `crates/<dir>`: from the heading
/// that names `` `crates/<dir>` `` to the next heading.
fn architecture_section<'a>(doc: &'a str, dir: &str) -> Option<&'a str> {
    let heading = format!("`crates/{dir}`");
    let start = doc
        .lines()
        .position(|l| l.starts_with('#') && l.contains(&heading))?;
    let lines: Vec<&str> = doc.lines().collect();
    let end = (start + 1..lines.len())
        .find(|&k| lines[k].starts_with('#'))
        .unwrap_or(lines.len());
    let from = lines[..start].iter().map(|l| l.len() + 1).sum::<usize>();
    let to = lines[..end].iter().map(|l| l.len() + 1).sum::<usize>();
    Some(&doc[from..to.min(doc.len())])
}

/// Whether the crate's section names `module`: the matching rule. A module is named when
/// its path relative to the crate's `src/` (`rules/arrays.rs`, `direct/`) or its file
/// name alone (`arrays.rs`) appears in backticks in the section of its crate (the heading
/// naming `` `crates/<dir>` `` up to the next heading).
fn architecture_names(section: &str, module: &str) -> bool {
    section.contains(&format!("`{module}`"))
        || section.contains(&format!("`{}`", short_name(module)))
}

/// The last component of a module's path: `arrays.rs` for `rules/arrays.rs`, `unf/` for
/// `direct/unf/`.
fn short_name(module: &str) -> String {
    let folder = module.ends_with('/');
    let trimmed = module.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    if folder {
        format!("{last}/")
    } else {
        last.to_string()
    }
}

#[test]
fn the_architecture_document_names_every_source_module() {
    let doc = read("docs/ARCHITECTURE.md");
    let mut missing = Vec::new();
    let mut dirs: Vec<String> = fs::read_dir(PathBuf::from(ROOT).join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    for dir in dirs {
        let modules = source_modules(&dir);
        let Some(section) = architecture_section(&doc, &dir) else {
            missing.push(format!(
                "crates/{dir}: no section (a heading naming `crates/{dir}`)"
            ));
            continue;
        };
        for module in modules {
            if !architecture_names(section, &module) {
                let name = short_name(&module);
                let how = if name == module {
                    format!("no `{module}`")
                } else {
                    format!("neither `{module}` nor `{name}`")
                };
                missing.push(format!(
                    "crates/{dir}/src/{module}: {how} in the section of `crates/{dir}`"
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name these source modules:\n{}",
        missing.join("\n")
    );
}

/// The optimizer's rules as `apply` in crates/opt/src/rules/mod.rs registers them:
/// every `family::name` whose family is a file `rules/<family>.rs`, in order of appearance.
fn optimizer_rules() -> Vec<(String, String)> {
    let mod_rs = code_only(&read("crates/opt/src/rules/mod.rs"));
    let apply = &mod_rs[mod_rs
        .find("fn apply")
        .expect("rules/mod.rs has `fn apply`")..];
    let families: Vec<String> = rust_files("crates/opt/src/rules")
        .iter()
        .map(|f| {
            f.rsplit('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|f| f != "mod" && f != "tests")
        .collect();
    let mut rules = Vec::new();
    for family in &families {
        for at in word_columns(apply, family) {
            let rest = &apply[at + family.len()..];
            if let Some(rest) = rest.strip_prefix("::") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let rule = (family.clone(), name);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
    }
    rules
}

/// Whether the function `name` in `text` has a doc comment (`///` lines directly above it,
/// attributes in between allowed). `None` if `text` defines no such function.
fn documented(text: &str, name: &str) -> Option<bool> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| {
        let l = l.trim_start();
        let l = l
            .strip_prefix("pub(crate) ")
            .or(l.strip_prefix("pub "))
            .unwrap_or(l);
        l.starts_with(&format!("fn {name}(")) || l.starts_with(&format!("fn {name}<"))
    })?;
    let above = lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim_start())
        .find(|l| !l.starts_with("#["));
    Some(above.is_some_and(|l| l.starts_with("///")))
}

/// Whether test code names `rule`: its name appears in the opt crate's test code (the
/// `tests.rs` modules and files under `tests/` folders in `crates/opt/src`, and
/// `crates/opt/tests/`), delimited on both sides by characters other than letters and
/// digits (so a test function `times_zero_of_a_sum` or a comment `` `times_zero` `` names
/// `times_zero`).
fn test_code_names(tests: &str, rule: &str) -> bool {
    tests.match_indices(rule).any(|(at, _)| {
        let before = tests[..at].chars().next_back();
        let after = tests[at + rule.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[test]
fn every_optimizer_rule_has_a_doc_comment_and_a_test() {
    let rules = optimizer_rules();
    assert!(
        rules.len() > 20,
        "`apply` in crates/opt/src/rules/mod.rs registers only {} rules: is the pattern \
         `family::name` still how rules are listed?",
        rules.len()
    );
    let tests: String = rust_files("crates/opt")
        .iter()
        .filter(|f| f.ends_with("/tests.rs") || f.contains("/tests/"))
        .map(|f| read(f))
        .collect::<Vec<_>>()
        .join("\n");
    let mut problems = Vec::new();
    for (family, name) in rules {
        let file = format!("crates/opt/src/rules/{family}.rs");
        match documented(&read(&file), &name) {
            None => problems.push(format!("{family}::{name}: not defined in {file}")),
            Some(false) => problems.push(format!("{family}::{name}: no doc comment ({file})")),
            Some(true) => {}
        }
        if !test_code_names(&tests, &name) {
            problems.push(format!("{family}::{name}: no test names it"));
        }
    }
    assert!(
        problems.is_empty(),
        "optimizer rules without a doc comment or a test:\n{}",
        problems.join("\n")
    );
}

/// The scanner the checks above rely on: comments and literals are not code.
#[test]
fn code_only_blanks_comments_and_literals_and_keeps_lines() {
    let text = "let a = \"unsafe\"; // unsafe\n/* unsafe /* nested */ unsafe */ let b = 'u';\n\
                let c = r#\"unsafe \"x\"\"#; fn f<'a>(x: &'a str) {}\nunsafe {}";
    let code = code_only(text);
    assert_eq!(code.lines().count(), text.lines().count());
    let words: Vec<usize> = code
        .lines()
        .map(|l| word_columns(l, "unsafe").len())
        .collect();
    assert_eq!(words, [0, 0, 0, 1]);
    assert!(code.contains("fn f<'a>(x: &'a str)"));
}

#[test]
fn safety_comments_are_needed_on_blocks_impls_and_functions_only() {
    assert!(needs_safety_comment("    unsafe { f() }", 4));
    assert!(needs_safety_comment("let f = unsafe {", 8));
    assert!(needs_safety_comment("unsafe impl Send for X {}", 0));
    assert!(needs_safety_comment("pub unsafe fn call(", 4));
    assert!(needs_safety_comment("unsafe extern      fn entry(", 0));
    assert!(!needs_safety_comment(
        "type F = unsafe extern      fn(*const f64);",
        9
    ));
    let lines = [
        "// SAFETY: the buffers are long enough,",
        "// as checked above.",
        "let f: RawFn =",
        "    unsafe { g() };",
        "",
        "unsafe { h() };",
    ];
    assert!(has_safety_comment(&lines, 3));
    assert!(!has_safety_comment(&lines, 5));
}
