//! The generated Cranelift IR, as snapshots (`UPDATE_EXPECT=1 cargo test` to refresh).

mod common;

use expect_test::{expect, Expect};

fn clif(src: &str, expect: Expect) {
    let (prog, func) = common::load(src);
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
                v29 = load.i64 notrap aligned v1
                jump block1(v29)

            block1(v7: i64):
                v4 = load.i64 notrap aligned v0
                v5 = load.i64 notrap aligned v0+8
                v6 = load.i64 notrap aligned v2
                v8 = f64const 0.0
                v12 = iconst.i64 0
                brif v7, block2(v12, v8), block3(v8)  ; v12 = 0, v8 = 0.0, v8 = 0.0

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
                v74 = load.i64 notrap aligned v1
                v75 = iconst.i64 1
                v76 = smax v74, v75  ; v75 = 1
                v77 = iconst.i64 3
                v78 = ishl v76, v77  ; v77 = 3
                v79 = iadd v3, v78
                v80 = iconst.i64 1
                v81 = iadd v74, v80  ; v80 = 1
                v82 = iconst.i64 3
                v83 = ishl v81, v82  ; v82 = 3
                v84 = iadd v79, v83
                v85 = iconst.i64 0
                v86 = iconst.i64 3
                v87 = ishl v85, v86  ; v85 = 0, v86 = 3
                v88 = iadd v3, v87
                v89 = iconst.i64 -1
                v90 = iadd v74, v89  ; v89 = -1
                v91 = iconst.i64 0
                v92 = smax v90, v91  ; v91 = 0
                v93 = iconst.i64 3
                v94 = ishl v85, v93  ; v85 = 0, v93 = 3
                v95 = iadd v79, v94
                jump block1(v74, v88, v76, v92, v95, v81)

            block1(v6: i64, v7: i64, v8: i64, v9: i64, v34: i64, v35: i64):
                v4 = load.i64 notrap aligned v0
                v5 = load.i64 notrap aligned v2
                v10 = iconst.i64 8
                v11 = iadd v4, v10  ; v10 = 8
                v12 = iconst.i64 3
                v13 = ishl v9, v12  ; v12 = 3
                v14 = iadd v7, v13
                v15 = f64const 0x1.0000000000000p0
                store notrap aligned v15, v14  ; v15 = 0x1.0000000000000p0
                v19 = iconst.i64 -1
                v20 = iadd v9, v19  ; v19 = -1
                brif v9, block2(v20, v15), block3(v15)  ; v15 = 0x1.0000000000000p0, v15 = 0x1.0000000000000p0

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
                v36 = f64const 0x1.0000000000000p0
                store notrap aligned v36, v34  ; v36 = 0x1.0000000000000p0
                v40 = iconst.i64 0
                brif.i64 v6, block4(v40, v36), block5(v36)  ; v40 = 0, v36 = 0x1.0000000000000p0, v36 = 0x1.0000000000000p0

            block4(v37: i64, v38: f64):
                v41 = iconst.i64 3
                v42 = ishl v37, v41  ; v41 = 3
                v43 = iadd.i64 v4, v42
                v44 = load.f64 notrap aligned v43
                v45 = iconst.i64 1
                v46 = iadd v37, v45  ; v45 = 1
                v47 = iconst.i64 3
                v48 = ishl v46, v47  ; v47 = 3
                v49 = iadd.i64 v34, v48
                v50 = fmul v38, v44
                store notrap aligned v50, v49
                v51 = iconst.i64 1
                v52 = iadd v37, v51  ; v51 = 1
                v53 = icmp ult v52, v6
                brif v53, block4(v52, v50), block5(v50)

            block5(v39: f64):
                v54 = stack_addr.i64 ss0
                store notrap aligned v39, v54
                v55 = atomic_load.i64 notrap aligned v54
                v56 = bitcast.f64 v55
                v58 = iconst.i64 0
                brif.i64 v6, block6(v58), block7  ; v58 = 0

            block6(v57: i64):
                v59 = iconst.i64 3
                v60 = ishl v57, v59  ; v59 = 3
                v61 = iadd.i64 v7, v60
                v62 = load.f64 notrap aligned v61
                v63 = iconst.i64 3
                v64 = ishl v57, v63  ; v63 = 3
                v65 = iadd.i64 v34, v64
                v66 = load.f64 notrap aligned v65
                v67 = iconst.i64 3
                v68 = ishl v57, v67  ; v67 = 3
                v69 = iadd.i64 v5, v68
                v70 = fmul v62, v66
                store notrap aligned v70, v69
                v71 = iconst.i64 1
                v72 = iadd v57, v71  ; v71 = 1
                v73 = icmp ult v72, v6
                brif v73, block6(v72), block7

            block7:
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
                v32 = load.i64 notrap aligned v1+8
                v33 = load.i64 notrap aligned v1
                jump block1(v32, v33)

            block1(v7: i64, v8: i64):
                v4 = load.i64 notrap aligned v0
                v5 = load.i64 notrap aligned v2
                v6 = load.i64 notrap aligned v2+8
                v9 = imul v8, v7
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
