//! `parse(print(t))` is `t` up to the names of bound variables.

use crate::fast_hash::FastMap as HashMap;

use unfad_testgen::{generate, Features, Rng};

use crate::{alpha_eq, print_func, Program};

/// Print the entry point of `src`, parse the printout, and compare the two terms.
pub(crate) fn assert_round_trip(src: &str) {
    let mut prog = Program::load(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    let printed = print_func(&prog.arena, &func);
    let mut again = Program::load(&printed)
        .unwrap_or_else(|e| panic!("printed program does not load: {e}\n{printed}"));
    let func2 = again.inline(again.entry(None).unwrap()).unwrap();
    let free: HashMap<_, _> = func
        .params
        .iter()
        .copied()
        .zip(func2.params.iter().copied())
        .collect();
    assert!(
        alpha_eq(&prog.arena, func.body, &again.arena, func2.body, &free),
        "round trip changed the term:\n{printed}\nbecame\n{}",
        print_func(&again.arena, &func2)
    );
    assert_eq!(func.ret, func2.ret);
    // Printing is deterministic and a fixed point after one round.
    assert_eq!(printed, print_func(&again.arena, &func2));
}

#[test]
fn hand_written_programs_round_trip() {
    for src in [
        "def f(x: real) = -(-x) - -2 + (0 - 1) * -x",
        "def f(p: (real, (real, real))) = (snd p).1 + fst (snd p) + (fst p)",
        "def f(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))",
        "def f(x: real) = let Y = fun (a: real, B: [2]real) -> (a, B) in fst Y(x, [x, x])",
        "def f(x: real) = (fun (Y: (real) -> real) -> Y(x))(fun (z: real) -> z)",
        "def f(x: real) = if x > 0 then if x < 1 then 1 else 2 else let y = x in y",
        "def f(A: [n](real, [m]real)) = map (p. (fst p, map (q. q * fst p) (snd p))) A",
        "def f(x: real) = 1 + (let y = x in y) * 2 + (if x > 0 then x else 0)",
    ] {
        assert_round_trip(src);
    }
}

#[test]
fn random_programs_round_trip() {
    for seed in 0..1500 {
        assert_round_trip(&generate(seed, &Features::all()).source);
    }
    for seed in 0..500 {
        assert_round_trip(
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
