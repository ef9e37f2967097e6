//! The generated Cranelift IR, as snapshots (`UPDATE_EXPECT=1 cargo test` to refresh).

mod common;

use expect_test::{expect, Expect};

fn clif(src: &str, expect: Expect) {
    let (prog, func) = unfad_test_support::load(src);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    expect.assert_eq(&text);
}

#[test]
fn dot_is_one_bottom_tested_loop() {
    clif(
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
                ss0 = explicit_slot 8, align = 8

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v29 = load.i64 notrap aligned readonly can_move v1
                v7 -> v29
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v8 = f64const 0.0
                v12 = iconst.i64 0
                brif.i64 v7, block2(v12, v8), block3(v8)  ; v12 = 0, v8 = 0.0, v8 = 0.0

            block2(v9: i64, v10: f64):
                v13 = iconst.i64 3
                v14 = ishl v9, v13  ; v13 = 3
                v15 = iadd.i64 v4, v14
                v16 = load.f64 notrap aligned v15
                v17 = iconst.i64 3
                v18 = ishl v9, v17  ; v17 = 3
                v19 = iadd.i64 v5, v18
                v20 = load.f64 notrap aligned v19
                v21 = fmul v16, v20
                v22 = fadd v10, v21
                v23 = iconst.i64 1
                v24 = iadd v9, v23  ; v23 = 1
                v25 = icmp ult v24, v7
                brif v25, block2(v24, v22), block3(v22)

            block3(v11: f64):
                v26 = stack_addr.i64 ss0
                store notrap aligned v11, v26
                v27 = atomic_load.i64 notrap aligned v26
                v28 = bitcast.f64 v27
                store notrap aligned v28, v6
                return
            }
        "#]],
    );
}

#[test]
fn prod_gradient() {
    clif(
        "def f(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
                ss0 = explicit_slot 8, align = 8

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v54 = load.i64 notrap aligned readonly can_move v1
                v6 -> v54
                v55 = iconst.i64 1
                v56 = smax v54, v55  ; v55 = 1
                v8 -> v56
                v57 = iconst.i64 3
                v58 = ishl v56, v57  ; v57 = 3
                v59 = iadd v3, v58
                v60 = iconst.i64 0
                v61 = iconst.i64 3
                v62 = ishl v60, v61  ; v60 = 0, v61 = 3
                v63 = iadd v3, v62
                v7 -> v63
                v64 = iconst.i64 -1
                v65 = iadd v54, v64  ; v64 = -1
                v66 = iconst.i64 0
                v67 = smax v65, v66  ; v66 = 0
                v9 -> v67
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v10 = iconst.i64 8
                v11 = iadd v4, v10  ; v10 = 8
                v12 = iconst.i64 3
                v13 = ishl.i64 v9, v12  ; v12 = 3
                v14 = iadd.i64 v7, v13
                v15 = f64const 0x1.0000000000000p0
                store notrap aligned v15, v14  ; v15 = 0x1.0000000000000p0
                v19 = iconst.i64 -1
                v20 = iadd.i64 v9, v19  ; v19 = -1
                brif.i64 v9, block2(v20, v15), block3(v15)  ; v15 = 0x1.0000000000000p0, v15 = 0x1.0000000000000p0

            block2(v16: i64, v17: f64):
                v21 = iconst.i64 3
                v22 = ishl v16, v21  ; v21 = 3
                v23 = iadd.i64 v11, v22
                v24 = load.f64 notrap aligned v23
                v25 = iconst.i64 3
                v26 = ishl v16, v25  ; v25 = 3
                v27 = iadd.i64 v7, v26
                v28 = fmul v24, v17
                store notrap aligned v28, v27
                v29 = iconst.i64 -1
                v30 = iadd v16, v29  ; v29 = -1
                brif v16, block2(v30, v28), block3(v28)

            block3(v18: f64):
                v31 = stack_addr.i64 ss0
                store notrap aligned v18, v31
                v32 = atomic_load.i64 notrap aligned v31
                v33 = bitcast.f64 v32
                v34 = f64const 0x1.0000000000000p0
                v36 = iconst.i64 0
                brif.i64 v6, block4(v36, v34), block5  ; v36 = 0, v34 = 0x1.0000000000000p0

            block4(v35: i64, v41: f64):
                v37 = iconst.i64 3
                v38 = ishl v35, v37  ; v37 = 3
                v39 = iadd.i64 v7, v38
                v40 = load.f64 notrap aligned v39
                v42 = iconst.i64 3
                v43 = ishl v35, v42  ; v42 = 3
                v44 = iadd.i64 v4, v43
                v45 = load.f64 notrap aligned v44
                v46 = fmul v41, v45
                v47 = iconst.i64 3
                v48 = ishl v35, v47  ; v47 = 3
                v49 = iadd.i64 v5, v48
                v50 = fmul v40, v41
                store notrap aligned v50, v49
                v51 = iconst.i64 1
                v52 = iadd v35, v51  ; v51 = 1
                v53 = icmp ult v52, v6
                brif v53, block4(v52, v46), block5

            block5:
                return
            }
        "#]],
    );
}

#[test]
fn nested_fills_and_copies_are_single_loops() {
    clif(
        "def f(M: [n][m]real) = (zeros_like(M), M)",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v32 = load.i64 notrap aligned readonly can_move v1+8
                v7 -> v32
                v33 = load.i64 notrap aligned readonly can_move v1
                v8 -> v33
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v9 = imul.i64 v8, v7
                v11 = iconst.i64 0
                brif v9, block2(v11), block3  ; v11 = 0

            block2(v10: i64):
                v12 = f64const 0.0
                v13 = iconst.i64 3
                v14 = ishl v10, v13  ; v13 = 3
                v15 = iadd.i64 v5, v14
                store notrap aligned v12, v15  ; v12 = 0.0
                v16 = iconst.i64 1
                v17 = iadd v10, v16  ; v16 = 1
                v18 = icmp ult v17, v9
                brif v18, block2(v17), block3

            block3:
                v19 = imul.i64 v8, v7
                v21 = iconst.i64 0
                brif v19, block4(v21), block5  ; v21 = 0

            block4(v20: i64):
                v22 = iconst.i64 3
                v23 = ishl v20, v22  ; v22 = 3
                v24 = iadd.i64 v4, v23
                v25 = load.f64 notrap aligned v24
                v26 = iconst.i64 3
                v27 = ishl v20, v26  ; v26 = 3
                v28 = iadd.i64 v6, v27
                store notrap aligned v25, v28
                v29 = iconst.i64 1
                v30 = iadd v20, v29  ; v29 = 1
                v31 = icmp ult v30, v19
                brif v31, block4(v30), block5

            block5:
                return
            }
        "#]],
    );
}

/// A fold whose accumulator is an array carries its phase and buffer address only: the
/// length and strides are the same on every iteration and stay out of the loop's state.
#[test]
fn array_accumulator_carries_only_its_address() {
    clif(
        "def f(M: [m][n]real, z: [n]real) = reduce (s, r. map2 + s r) z M",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v71 = load.i64 notrap aligned readonly can_move v1+8
                v7 -> v71
                v72 = iconst.i64 3
                v73 = ishl v71, v72  ; v72 = 3
                v74 = iadd v3, v73
                v75 = iconst.i64 3
                v76 = ishl v71, v75  ; v75 = 3
                v77 = iadd v74, v76
                v78 = load.i64 notrap aligned readonly can_move v1
                v8 -> v78
                v79 = iconst.i64 0
                v80 = iconst.i64 3
                v81 = ishl v79, v80  ; v79 = 0, v80 = 3
                v82 = iadd v3, v81
                v9 -> v82
                v83 = iconst.i64 3
                v84 = ishl v79, v83  ; v79 = 0, v83 = 3
                v85 = iadd v74, v84
                v10 -> v85
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v12 = iconst.i64 0
                brif.i64 v7, block2(v12), block3  ; v12 = 0

            block2(v11: i64):
                v13 = iconst.i64 3
                v14 = ishl v11, v13  ; v13 = 3
                v15 = iadd.i64 v5, v14
                v16 = load.f64 notrap aligned v15
                v17 = iconst.i64 3
                v18 = ishl v11, v17  ; v17 = 3
                v19 = iadd.i64 v9, v18
                store notrap aligned v16, v19
                v20 = iconst.i64 1
                v21 = iadd v11, v20  ; v20 = 1
                v22 = icmp ult v21, v7
                brif v22, block2(v21), block3

            block3:
                v23 = iconst.i64 1
                v24 = iconst.i8 0
                v30 = iconst.i64 0
                brif.i64 v8, block4(v30, v24, v9), block5(v24, v9)  ; v30 = 0, v24 = 0, v24 = 0

            block4(v25: i64, v26: i8, v27: i64):
                v31 = select.i64 v26, v9, v10
                v32 = imul v25, v7
                v33 = iconst.i64 3
                v34 = ishl v32, v33  ; v33 = 3
                v35 = iadd.i64 v4, v34
                v37 = iconst.i64 0
                brif.i64 v7, block6(v37), block7  ; v37 = 0

            block6(v36: i64):
                v38 = iconst.i64 3
                v39 = ishl v36, v38  ; v38 = 3
                v40 = iadd.i64 v27, v39
                v41 = load.f64 notrap aligned v40
                v42 = iconst.i64 3
                v43 = ishl v36, v42  ; v42 = 3
                v44 = iadd.i64 v35, v43
                v45 = load.f64 notrap aligned v44
                v46 = iconst.i64 3
                v47 = ishl v36, v46  ; v46 = 3
                v48 = iadd.i64 v31, v47
                v49 = fadd v41, v45
                store notrap aligned v49, v48
                v50 = iconst.i64 1
                v51 = iadd v36, v50  ; v50 = 1
                v52 = icmp ult v51, v7
                brif v52, block6(v51), block7

            block7:
                v53 = iconst.i8 1
                v54 = bxor.i8 v26, v53  ; v53 = 1
                v55 = iconst.i64 1
                v56 = iconst.i64 1
                v57 = iadd.i64 v25, v56  ; v56 = 1
                v58 = icmp ult v57, v8
                brif v58, block4(v57, v54, v31), block5(v54, v31)

            block5(v28: i8, v29: i64):
                v60 = iconst.i64 0
                brif.i64 v7, block8(v60), block9  ; v60 = 0

            block8(v59: i64):
                v61 = iconst.i64 3
                v62 = ishl v59, v61  ; v61 = 3
                v63 = iadd.i64 v29, v62
                v64 = load.f64 notrap aligned v63
                v65 = iconst.i64 3
                v66 = ishl v59, v65  ; v65 = 3
                v67 = iadd.i64 v6, v66
                store notrap aligned v64, v67
                v68 = iconst.i64 1
                v69 = iadd v59, v68  ; v68 = 1
                v70 = icmp ult v69, v7
                brif v70, block8(v69), block9

            block9:
                return
            }
        "#]],
    );
}

/// A `let`-bound array that is a component of the result is computed into its output
/// buffer (one loop writes `exp`s there, one sums them), not copied there at the end.
#[test]
fn result_component_is_computed_in_place() {
    clif(
        "def f(A: [n]real) = let B = map (x. exp(x)) A in (B, reduce + 0 B)",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
                ss0 = explicit_slot 8, align = 8
                sig0 = (f64) -> f64 system_v
                fn0 = u0:1 sig0

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v37 = load.i64 notrap aligned readonly can_move v1
                v7 -> v37
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v9 = iconst.i64 0
                brif.i64 v7, block2(v9), block3  ; v9 = 0

            block2(v8: i64):
                v10 = iconst.i64 3
                v11 = ishl v8, v10  ; v10 = 3
                v12 = iadd.i64 v4, v11
                v13 = load.f64 notrap aligned v12
                v14 = iconst.i64 3
                v15 = ishl v8, v14  ; v14 = 3
                v16 = iadd.i64 v5, v15
                v17 = call fn0(v13)
                store notrap aligned v17, v16
                v18 = iconst.i64 1
                v19 = iadd v8, v18  ; v18 = 1
                v20 = icmp ult v19, v7
                brif v20, block2(v19), block3

            block3:
                v21 = f64const 0.0
                v25 = iconst.i64 0
                brif.i64 v7, block4(v25, v21), block5(v21)  ; v25 = 0, v21 = 0.0, v21 = 0.0

            block4(v22: i64, v23: f64):
                v26 = iconst.i64 3
                v27 = ishl v22, v26  ; v26 = 3
                v28 = iadd.i64 v5, v27
                v29 = load.f64 notrap aligned v28
                v30 = fadd v23, v29
                v31 = iconst.i64 1
                v32 = iadd v22, v31  ; v31 = 1
                v33 = icmp ult v32, v7
                brif v33, block4(v32, v30), block5(v30)

            block5(v24: f64):
                v34 = stack_addr.i64 ss0
                store notrap aligned v24, v34
                v35 = atomic_load.i64 notrap aligned v34
                v36 = bitcast.f64 v35
                store notrap aligned v36, v6
                return
            }
        "#]],
    );
}
