//! Properties of the front end over random input: printing and parsing back gives the
//! same term, and no input whatsoever makes the parser or type checker panic.

use std::collections::HashMap;

use unfad_syntax::{alpha_eq, print_func, Program};
use unfad_testgen::{generate, Features, Rng};

/// Load `src`, print its entry point, load the printout, and compare the two terms.
fn round_trip(seed: u64, src: &str) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    let printed = print_func(&prog.arena, &func);
    let mut again = Program::load(&printed)
        .unwrap_or_else(|e| panic!("seed {seed}: printout does not load: {e}\n{printed}"));
    let func2 = again.inline(again.entry(None).unwrap()).unwrap();
    let free: HashMap<_, _> = func
        .params
        .iter()
        .copied()
        .zip(func2.params.iter().copied())
        .collect();
    assert!(
        alpha_eq(&prog.arena, func.body, &again.arena, func2.body, &free),
        "seed {seed}: round trip changed the term\n{printed}"
    );
    // Printing is deterministic and a fixed point after one round.
    assert_eq!(printed, print_func(&again.arena, &func2), "seed {seed}");
}

#[test]
fn printing_then_parsing_gives_the_same_term() {
    for seed in 0..1500 {
        round_trip(seed, &generate(seed, &Features::all()).source);
    }
    for seed in 0..500 {
        round_trip(
            seed,
            &generate(
                seed,
                &Features {
                    real_result: false,
                    ..Features::all()
                },
            )
            .source,
        );
    }
}

/// Run the whole front end on `text`; it may fail, but only with an error value.
fn front_end(text: &str) {
    if let Ok(mut prog) = Program::load(text) {
        if let Ok(d) = prog.entry(None) {
            let _ = prog.inline(d);
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(1);
    let alphabet: Vec<char> =
        "defletinifthenelsefunmapreduce()[],.:=+-*/<>!&|0123456789 \n\tABnxyé#_'"
            .chars()
            .collect();
    for _ in 0..3000 {
        let len = rng.below(60);
        let text: String = if rng.chance(0.3) {
            // arbitrary bytes, made into a string the way a file reader would
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            (0..len).map(|_| *rng.pick(&alphabet)).collect()
        };
        front_end(&text);
    }
}

#[test]
fn mutated_programs_never_panic() {
    let mut rng = Rng::new(2);
    let tokens = [
        "(", ")", "[", "]", ",", ".", "let", "in", "map2", "reduce", "fst", "x", "A", "1", "-",
        "*", ":", "[n]real", "if", "fun",
    ];
    for seed in 0..1500 {
        let src = generate(seed, &Features::all()).source;
        let mut chars: Vec<char> = src.chars().collect();
        for _ in 0..1 + rng.below(4) {
            if chars.is_empty() {
                break;
            }
            let i = rng.below(chars.len());
            match rng.below(3) {
                0 => {
                    chars.remove(i);
                }
                1 => {
                    let t = rng.pick(&tokens);
                    for (k, c) in t.chars().enumerate() {
                        chars.insert(i + k, c);
                    }
                }
                _ => {
                    let j = rng.below(chars.len());
                    chars.swap(i, j);
                }
            }
        }
        front_end(&chars.into_iter().collect::<String>());
    }
}
