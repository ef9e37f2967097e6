//! The GradBench protocol, message by message, and the binary's lifecycle.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value as Json};

/// Feed `messages` to `serve`, one per line; the replies, one per message.
fn exchange(messages: &[Json]) -> Vec<Json> {
    let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
    let mut out = Vec::new();
    unfad_gradbench::serve(input.as_bytes(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn hello_start_define_evaluate_analysis() {
    let replies = exchange(&[
        json!({"id": 0, "kind": "start", "eval": "hello"}),
        json!({"id": 1, "kind": "define", "module": "hello"}),
        json!({"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 3.0}),
        json!({"id": 3, "kind": "analysis", "of": 2, "valid": true}),
        json!({"id": 4, "kind": "evaluate", "module": "hello", "function": "double", "input": 9.0}),
    ]);
    assert_eq!(replies.len(), 5);
    assert_eq!(replies[0], json!({"id": 0, "tool": "unfad"}));
    assert_eq!(replies[1]["success"], true);
    assert_eq!(replies[1]["timings"][0]["name"], "define");
    assert_eq!(
        (replies[2]["id"].clone(), replies[2]["output"].clone()),
        (json!(2), json!(9.0))
    );
    assert_eq!(replies[3], json!({"id": 3}));
    assert_eq!(replies[4]["output"], json!(18.0));
}

#[test]
fn a_malformed_input_is_an_error_reply() {
    let replies = exchange(&[
        json!({"id": 0, "kind": "define", "module": "hello"}),
        json!({"id": 1, "kind": "evaluate", "module": "hello", "function": "square", "input": {"min_runs": 5}}),
    ]);
    // `hello` inputs are bare numbers: an object is an error, answered, not a crash.
    assert_eq!(replies[1]["success"], false);
}

#[test]
fn unknown_things_are_answered_not_crashed_on() {
    let replies = exchange(&[
        json!({"id": 0, "kind": "define", "module": "ht"}),
        json!({"id": 1, "kind": "evaluate", "module": "hello", "function": "square", "input": 1.0}),
        json!({"id": 2, "kind": "define", "module": "hello"}),
        json!({"id": 3, "kind": "evaluate", "module": "hello", "function": "cube", "input": 1.0}),
        json!({"id": 4, "kind": "something new"}),
    ]);
    assert_eq!(
        replies[0],
        json!({"id": 0, "success": false, "error": "unfad has no module `ht` (it has hello, lse, gmm, llsq, lstm, ode, kmeans, saddle, particle, ba and det)"})
    );
    assert_eq!(
        replies[1],
        json!({"id": 1, "success": false, "error": "module `hello` is not defined"})
    );
    assert_eq!(
        replies[3],
        json!({"id": 3, "success": false, "error": "the module `hello` has no function `cube`"})
    );
    assert_eq!(replies[4], json!({"id": 4}));
}

#[test]
fn the_binary_exits_when_stdin_closes() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_unfad-gradbench"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"id\": 0, \"kind\": \"start\", \"eval\": \"hello\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"id\":0,\"tool\":\"unfad\"}\n"
    );
}
