use unfad_syntax::{print_func, Program};

#[test]
fn scratch() {
    let src = "def f(x1: real, x2: real, x3: real): real =
           let w1 = x1 * x2 in
           let w2 = w1 * x1 in
           w2
           def g(A: [n]real) = prod(A)";
    let mut prog = Program::load(src).unwrap();
    for name in ["f", "g"] {
        let func = prog.inline(prog.entry(Some(name)).unwrap()).unwrap();
        let all: Vec<usize> = (0..func.params.len()).collect();
        let g = crate::gradient(&mut prog.arena, &func, &all).unwrap();
        println!("{}", print_func(&prog.arena, &g));
        let s = crate::source_unf(&prog.arena, &func).unwrap();
        println!("{}", crate::unf::print_source(&prog.arena, &s));
        let t = crate::target_unf(&prog.arena, &func, &all).unwrap();
        println!("{}", crate::unf::print_target(&prog.arena, &t));
        let g = crate::gradient_via_unf(&mut prog.arena, &func, &all).unwrap();
        println!("{}", print_func(&prog.arena, &g));
    }
}
