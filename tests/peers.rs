//! The JAX column of the performance report without JAX: the script's reply parsed, values
//! and gradients checked against unfad's, the request written, the column rendered when JAX
//! is absent, failed or disagrees, and the script covering every program of the suite.
//! None of these tests runs Python.

use std::time::Duration;

use unfad_suite::measure::{Budget, Measured, Point};
use unfad_suite::peers::{
    agreement, parse_reply, request_json, write_request, Jax, JaxPoint, JaxRow, Reference,
    ReplyPoint, SCRIPT,
};
use unfad_suite::report::{jax_section, ABSENT};
use unfad_suite::suite::{programs, Data, Size};

const REPLY: &str = r#"{
  "versions": {"jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.4.6", "python": "3.11.7",
               "device": "cpu (cpu)", "cores": 2, "float64": true},
  "results": [
    {"id": "p0", "name": "dot", "value": 2.5, "primal_value": 2.5, "primal_ns": 1000.0,
     "gradient_ns": 2000.0, "rounds": 15, "gradients": ["p0.grad0.bin", "p0.grad1.bin"]},
    {"id": "p1", "name": "huber", "error": "TypeError: no"}
  ]
}"#;

#[test]
fn the_reply_is_parsed_with_versions_and_failures() {
    let reply = parse_reply(REPLY).unwrap();
    let versions: Vec<String> = reply
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    assert_eq!(
        versions,
        [
            "jax 0.10.2",
            "jaxlib 0.10.2",
            "numpy 2.4.6",
            "python 3.11.7",
            "device cpu (cpu)",
            "cores 2",
            "float64 true"
        ]
    );
    assert_eq!(reply.rows.len(), 2);
    assert_eq!(
        reply.rows[0].outcome,
        Ok(ReplyPoint {
            value: 2.5,
            primal_value: 2.5,
            primal_ns: 1000.0,
            gradient_ns: 2000.0,
            rounds: 15,
            gradient_files: vec!["p0.grad0.bin".into(), "p0.grad1.bin".into()],
        })
    );
    assert_eq!(
        (reply.rows[0].id.as_str(), reply.rows[0].name.as_str()),
        ("p0", "dot")
    );
    assert_eq!(
        (reply.rows[1].id.as_str(), reply.rows[1].name.as_str()),
        ("p1", "huber")
    );
    assert_eq!(reply.rows[1].outcome, Err("TypeError: no".into()));
}

#[test]
fn a_reply_without_jax_or_not_json_is_why_there_is_no_column() {
    let absent = parse_reply(r#"{"absent": "JAX not installed (No module named 'jax')"}"#);
    assert_eq!(
        absent,
        Err("JAX not installed (No module named 'jax')".into())
    );
    let garbage = parse_reply("Traceback (most recent call last):").unwrap_err();
    assert!(garbage.contains("not JSON"), "{garbage}");
    let missing = parse_reply(
        r#"{"versions": {}, "results": [{"name": "dot", "value": 1.0, "primal_value": 1.0,
            "primal_ns": 1.0, "rounds": 3, "gradients": []}]}"#,
    )
    .unwrap();
    assert_eq!(
        missing.rows[0].outcome,
        Err("no `gradient_ns` in JAX's answer".into())
    );
}

#[test]
fn values_and_gradients_must_agree_to_1e_9() {
    let reference = Reference {
        value: 1e6,
        gradients: Some(vec![vec![1.0, -2.0, 3e-7], vec![0.5]]),
    };
    let same = [vec![1.0, -2.0, 3e-7], vec![0.5]];
    assert_eq!(agreement(1e6, 1e6, &same, &reference), None);
    // Relative above 1: 1e6 may differ by 1e-3.
    let close = [vec![1.0 + 1e-10, -2.0, 3e-7 + 1e-10], vec![0.5]];
    assert_eq!(agreement(1e6 + 5e-4, 1e6, &close, &reference), None);
    let value = agreement(1e6 + 1.0, 1e6, &same, &reference).unwrap();
    assert!(value.starts_with("JAX's value"), "{value}");
    let primal = agreement(1e6, 1e6 - 1.0, &same, &reference).unwrap();
    assert!(primal.starts_with("JAX's primal value"), "{primal}");
    let off = [vec![1.0, -2.0 + 1e-6, 3e-7], vec![0.5]];
    let gradient = agreement(1e6, 1e6, &off, &reference).unwrap();
    assert!(gradient.contains("parameter 0 at 1"), "{gradient}");
    let short = [vec![1.0, -2.0], vec![0.5]];
    assert!(agreement(1e6, 1e6, &short, &reference)
        .unwrap()
        .contains("2 elements from JAX, 3 from unfad"));
    // Without unfad's gradient only the value is compared.
    let value_only = Reference {
        value: 1e6,
        gradients: None,
    };
    assert_eq!(agreement(1e6, 1e6, &off, &value_only), None);
}

#[test]
fn the_request_names_every_argument_and_its_file() {
    let progs = programs();
    let dot = progs.iter().find(|p| p.name == "dot").unwrap();
    let leastsq = progs.iter().find(|p| p.name == "leastsq").unwrap();
    let points = vec![
        (dot, Size::n(3), (dot.inputs)(Size::n(3))),
        (leastsq, Size::n(2), (leastsq.inputs)(Size::n(2))),
    ];
    let budget = Budget {
        rounds: 7,
        sample: Duration::from_millis(2),
    };
    let json = request_json(&points, budget);
    assert_eq!(json["rounds"], 7);
    assert_eq!(json["sample_seconds"], 0.002);
    assert_eq!(json["programs"][0]["name"], "dot");
    assert_eq!(json["programs"][1]["id"], "p1");
    assert_eq!(json["programs"][0]["size"]["n"], 3);
    assert_eq!(json["programs"][0]["args"][1]["file"], "p0.arg1.bin");
    assert_eq!(
        json["programs"][0]["args"][1]["shape"],
        serde_json::json!([3])
    );
    // A real is a file of one element, of shape [].
    assert_eq!(
        json["programs"][1]["args"][2]["shape"],
        serde_json::json!([])
    );

    let dir = std::env::temp_dir().join(format!("unfad-peers-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_request(&dir, &points, budget).unwrap();
    let bytes = std::fs::read(dir.join("p0.arg1.bin")).unwrap();
    let read: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(read, points[0].2[1].reals());
    let w = std::fs::read(dir.join("p1.arg2.bin")).unwrap();
    assert_eq!(w, 0.7f64.to_le_bytes());
    let request: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("request.json")).unwrap()).unwrap();
    assert_eq!(request, json);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(points[1].2[2], Data::Real(_)));
}

/// A measured point of `size` with the given unfad gradient time.
fn point(size: Size, gradient_ns: Option<f64>) -> Point {
    Point {
        size,
        elements: 20,
        primal_ns: 1000.0,
        hand_primal_ns: 900.0,
        gradient_ns,
        hand_gradient_ns: 1500.0,
        ratio: gradient_ns.map(|g| g / 1000.0),
        hand_ratio: 1.5 / 0.9,
        primal_vs_hand: 1000.0 / 900.0,
        gradient_vs_hand: gradient_ns.map(|g| g / 1500.0),
        model: None,
        workspace_primal: 0,
        workspace_gradient: Some(0),
        workspace_hand: 0,
        agree: true,
    }
}

fn measured(name: &'static str, size: Size) -> Measured {
    Measured {
        name,
        p: 1,
        points: vec![point(size, Some(2000.0))],
        gradient_error: None,
        compile_grad_ms: Some(1.0),
        compile_primal_ms: 1.0,
    }
}

#[test]
fn without_jax_the_column_is_absent_and_says_why() {
    let progs = programs();
    let measured = [
        measured("dot", Size::n(10)),
        measured("matvec_tanh", Size::nm(10, 10)),
    ];
    let mut s = String::new();
    let why = Err("JAX not installed (No module named 'jax')".to_string());
    jax_section(&mut s, &progs, &measured, &why, Budget::QUICK);
    assert!(s.contains("### Core programs"), "{s}");
    assert!(s.contains("### Plainly written programs"), "{s}");
    assert!(
        s.contains(&format!(
            "| dot | 10 | 1.00 µs | 900.0 ns | {ABSENT} | 2.00 µs | 1.50 µs | {ABSENT} | {ABSENT} |"
        )),
        "{s}"
    );
    assert!(s.contains("| matvec_tanh | 10x10 |"), "{s}");
    assert!(
        s.contains(&format!(
            "{ABSENT}: JAX not installed (No module named 'jax')."
        )),
        "{s}"
    );
}

#[test]
fn the_column_shows_times_ratios_failures_and_disagreements() {
    let progs = programs();
    let measured = [
        measured("dot", Size::n(10)),
        measured("sum", Size::n(10)),
        measured("huber", Size::n(10)),
        measured("intro", Size::scalar()),
        Measured {
            points: vec![
                point(Size::nmk(1, 10, 25), Some(500.0)),
                point(Size::nmk(2, 10, 25), Some(2000.0)),
            ],
            ..measured("gmm_plain", Size::nmk(2, 10, 25))
        },
    ];
    let jax_point = |name: &str, gradient_ns, disagreement: Option<&str>| JaxPoint {
        primal_ns: 3000.0,
        gradient_ns,
        rounds: if name == "sum" { 3 } else { 15 },
        disagreement: disagreement.map(str::to_string),
    };
    let jax = Ok(Jax {
        versions: vec![("jax".into(), "0.10.2".into())],
        rows: vec![
            JaxRow {
                name: "dot".into(),
                size: Size::n(10),
                outcome: Ok(jax_point("dot", 4000.0, None)),
            },
            JaxRow {
                name: "sum".into(),
                size: Size::n(10),
                outcome: Ok(jax_point("sum", 4000.0, Some("JAX's value 1, unfad's 2"))),
            },
            JaxRow {
                name: "huber".into(),
                size: Size::n(10),
                outcome: Err("TypeError: no".into()),
            },
            JaxRow {
                name: "intro".into(),
                size: Size::scalar(),
                outcome: Ok(jax_point("intro", 4e6, None)),
            },
            // A second size of a program: a row of its own, after its largest size.
            JaxRow {
                name: "gmm_plain".into(),
                size: Size::nmk(1, 10, 25),
                outcome: Ok(jax_point("gmm_plain", 1000.0, None)),
            },
            JaxRow {
                name: "gmm_plain".into(),
                size: Size::nmk(2, 10, 25),
                outcome: Ok(jax_point("gmm_plain", 4000.0, None)),
            },
        ],
    });
    let mut s = String::new();
    jax_section(&mut s, &progs, &measured, &jax, Budget::REPORT);
    for want in [
        "Measured with jax 0.10.2.",
        "| dot | 10 | 1.00 µs | 900.0 ns | 3.00 µs | 2.00 µs | 1.50 µs | 4.00 µs | 0.50 |",
        "| sum | 10 | 1.00 µs | 900.0 ns | 3.00 µs **disagrees** | 2.00 µs | 1.50 µs | 4.00 µs **disagrees** | - |",
        "| huber | 10 | 1.00 µs | 900.0 ns | failed | 2.00 µs | 1.50 µs | failed | - |",
        // A ratio far below 1 keeps two significant digits.
        "| intro | - | 1.00 µs | 900.0 ns | 3.00 µs | 2.00 µs | 1.50 µs | 4.00 ms | 0.00050 |",
        "| gmm_plain | 2x10, k=25 | 1.00 µs | 900.0 ns | 3.00 µs | 2.00 µs | 1.50 µs | 4.00 µs | 0.50 |\n\
         | gmm_plain | 1x10, k=25 | 1.00 µs | 900.0 ns | 3.00 µs | 500.0 ns | 1.50 µs | 1.00 µs | 0.50 |",
        "- **sum**: JAX disagrees with unfad: JAX's value 1, unfad's 2",
        "- **sum**: JAX's medians are over 3 rounds.",
        "- **huber**: JAX failed: TypeError: no",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    assert!(!s.contains(ABSENT), "{s}");
}

#[test]
fn the_jax_script_writes_every_program_of_the_suite() {
    let script =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SCRIPT))
            .unwrap();
    // The script's table: the lines `"name": function,` of the dict `programs` returns.
    let start = script
        .find("    return {\n")
        .expect("the table of programs")
        + 13;
    let end = start + script[start..].find("\n    }").expect("the table's end");
    let table: Vec<&str> = script[start..end]
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix('"')?;
            let (name, tail) = rest.split_once("\": ")?;
            tail.ends_with(',').then_some(name)
        })
        .collect();
    let suite: Vec<&str> = programs().iter().map(|p| p.name).collect();
    assert_eq!(table, suite, "bench/peers/jax_suite.py's table of programs");
}
