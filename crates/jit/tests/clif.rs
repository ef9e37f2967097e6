//! The generated Cranelift IR, as snapshots (`UPDATE_EXPECT=1 cargo test` to refresh).

mod common;

use expect_test::{expect, Expect};

fn clif(src: &str, expect: Expect) {
    let (prog, func) = unfad_test_support::load(src);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    expect.assert_eq(&text);
}

/// [`clif`] for a function with an inline math kernel, whose `mul_add`s are `fma`
/// instructions on a host with FMA (the snapshot's) and `fmul` then `fadd` elsewhere.
fn clif_with_kernel(src: &str, expect: Expect) {
    let (prog, func) = unfad_test_support::load(src);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    if unfad_kernels::host_has_fma() {
        expect.assert_eq(&text);
    } else {
        assert!(!text.contains("fma"), "{text}");
    }
}

#[test]
fn dot_is_one_bottom_tested_loop() {
    clif(
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
                ss0 = explicit_slot 8, align = 8

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v116 = load.i64 notrap aligned readonly can_move v1
                v7 -> v116
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v8 = f64const 0.0
                v9 = iconst.i64 2
                v10 = ushr.i64 v7, v9  ; v9 = 2
                v11 = f64const -0.0
                v12 = f64const -0.0
                v13 = f64const -0.0
                v23 = iconst.i64 0
                brif v10, block2(v23, v8, v11, v12, v13), block3(v8, v11, v12, v13)  ; v23 = 0, v8 = 0.0, v11 = -0.0, v12 = -0.0, v13 = -0.0, v8 = 0.0, v11 = -0.0, v12 = -0.0, v13 = -0.0

            block2(v14: i64, v15: f64, v16: f64, v17: f64, v18: f64):
                v24 = iconst.i64 2
                v25 = ishl v14, v24  ; v24 = 2
                v26 = iconst.i64 3
                v27 = ishl v25, v26  ; v26 = 3
                v28 = iadd.i64 v4, v27
                v29 = load.f64 notrap aligned v28
                v30 = iconst.i64 3
                v31 = ishl v25, v30  ; v30 = 3
                v32 = iadd.i64 v5, v31
                v33 = load.f64 notrap aligned v32
                v34 = fmul v29, v33
                v35 = fadd v15, v34
                v36 = iconst.i64 1
                v37 = iadd v25, v36  ; v36 = 1
                v38 = iconst.i64 3
                v39 = ishl v37, v38  ; v38 = 3
                v40 = iadd.i64 v4, v39
                v41 = load.f64 notrap aligned v40
                v42 = iconst.i64 3
                v43 = ishl v37, v42  ; v42 = 3
                v44 = iadd.i64 v5, v43
                v45 = load.f64 notrap aligned v44
                v46 = fmul v41, v45
                v47 = fadd v16, v46
                v48 = iconst.i64 2
                v49 = iadd v25, v48  ; v48 = 2
                v50 = iconst.i64 3
                v51 = ishl v49, v50  ; v50 = 3
                v52 = iadd.i64 v4, v51
                v53 = load.f64 notrap aligned v52
                v54 = iconst.i64 3
                v55 = ishl v49, v54  ; v54 = 3
                v56 = iadd.i64 v5, v55
                v57 = load.f64 notrap aligned v56
                v58 = fmul v53, v57
                v59 = fadd v17, v58
                v60 = iconst.i64 3
                v61 = iadd v25, v60  ; v60 = 3
                v62 = iconst.i64 3
                v63 = ishl v61, v62  ; v62 = 3
                v64 = iadd.i64 v4, v63
                v65 = load.f64 notrap aligned v64
                v66 = iconst.i64 3
                v67 = ishl v61, v66  ; v66 = 3
                v68 = iadd.i64 v5, v67
                v69 = load.f64 notrap aligned v68
                v70 = fmul v65, v69
                v71 = fadd v18, v70
                v72 = iconst.i64 1
                v73 = iadd v14, v72  ; v72 = 1
                v74 = icmp ult v73, v10
                brif v74, block2(v73, v35, v47, v59, v71), block3(v35, v47, v59, v71)

            block3(v19: f64, v20: f64, v21: f64, v22: f64):
                v75 = stack_addr.i64 ss0
                store notrap aligned v19, v75
                v76 = atomic_load.i64 notrap aligned v75
                v77 = bitcast.f64 v76
                v78 = stack_addr.i64 ss0
                store notrap aligned v20, v78
                v79 = atomic_load.i64 notrap aligned v78
                v80 = bitcast.f64 v79
                v81 = stack_addr.i64 ss0
                store notrap aligned v21, v81
                v82 = atomic_load.i64 notrap aligned v81
                v83 = bitcast.f64 v82
                v84 = stack_addr.i64 ss0
                store notrap aligned v22, v84
                v85 = atomic_load.i64 notrap aligned v84
                v86 = bitcast.f64 v85
                v87 = fadd v77, v80
                v88 = fadd v83, v86
                v89 = fadd v87, v88
                v90 = select v10, v89, v77
                v91 = iconst.i64 2
                v92 = ishl.i64 v10, v91  ; v91 = 2
                v93 = iconst.i64 3
                v94 = band.i64 v7, v93  ; v93 = 3
                v98 = iconst.i64 0
                brif v94, block4(v98, v90), block5(v90)  ; v98 = 0

            block4(v95: i64, v96: f64):
                v99 = iadd.i64 v92, v95
                v100 = iconst.i64 3
                v101 = ishl v99, v100  ; v100 = 3
                v102 = iadd.i64 v4, v101
                v103 = load.f64 notrap aligned v102
                v104 = iconst.i64 3
                v105 = ishl v99, v104  ; v104 = 3
                v106 = iadd.i64 v5, v105
                v107 = load.f64 notrap aligned v106
                v108 = fmul v103, v107
                v109 = fadd v96, v108
                v110 = iconst.i64 1
                v111 = iadd v95, v110  ; v110 = 1
                v112 = icmp ult v111, v94
                brif v112, block4(v111, v109), block5(v109)

            block5(v97: f64):
                v113 = stack_addr.i64 ss0
                store notrap aligned v97, v113
                v114 = atomic_load.i64 notrap aligned v113
                v115 = bitcast.f64 v114
                store notrap aligned v115, v6
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
    clif_with_kernel(
        "def f(A: [n]real) = let B = map (x. exp(x)) A in (B, reduce + 0 B)",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
                ss0 = explicit_slot 8, align = 8

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v174 = load.i64 notrap aligned readonly can_move v1
                v7 -> v174
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
                v17 = f64const 0x1.6300000000000p9
                v18 = fcmp gt v13, v17  ; v17 = 0x1.6300000000000p9
                v19 = select v18, v17, v13  ; v17 = 0x1.6300000000000p9
                v20 = f64const -0x1.7500000000000p9
                v21 = fcmp lt v19, v20  ; v20 = -0x1.7500000000000p9
                v22 = select v21, v20, v19  ; v20 = -0x1.7500000000000p9
                v23 = f64const 0x1.71547652b82fep0
                v24 = fmul v22, v23  ; v23 = 0x1.71547652b82fep0
                v25 = f64const 0x1.8000000000000p52
                v26 = fadd v24, v25  ; v25 = 0x1.8000000000000p52
                v27 = fsub v26, v25  ; v25 = 0x1.8000000000000p52
                v28 = bitcast.i64 v26
                v29 = iconst.i64 0x4338_0000_0000_0000
                v30 = isub v28, v29  ; v29 = 0x4338_0000_0000_0000
                v31 = f64const 0x1.62e42ff000000p-1
                v32 = f64const -0x1.718432a1b0e26p-35
                v33 = fmul v27, v31  ; v31 = 0x1.62e42ff000000p-1
                v34 = fsub v22, v33
                v35 = fmul v27, v32  ; v32 = -0x1.718432a1b0e26p-35
                v36 = fsub v34, v35
                v37 = f64const 0x1.1f730349868cep-29
                v38 = f64const 0x1.af4de97ca4194p-26
                v39 = fma v37, v36, v38  ; v37 = 0x1.1f730349868cep-29, v38 = 0x1.af4de97ca4194p-26
                v40 = f64const 0x1.27e4db646b17ep-22
                v41 = fma v39, v36, v40  ; v40 = 0x1.27e4db646b17ep-22
                v42 = f64const 0x1.71de0231960ebp-19
                v43 = fma v41, v36, v42  ; v42 = 0x1.71de0231960ebp-19
                v44 = f64const 0x1.a01a01a6d889cp-16
                v45 = fma v43, v36, v44  ; v44 = 0x1.a01a01a6d889cp-16
                v46 = f64const 0x1.a01a01abe7fe1p-13
                v47 = fma v45, v36, v46  ; v46 = 0x1.a01a01abe7fe1p-13
                v48 = f64const 0x1.6c16c16c162d4p-10
                v49 = fma v47, v36, v48  ; v48 = 0x1.6c16c16c162d4p-10
                v50 = f64const 0x1.11111111100dcp-7
                v51 = fma v49, v36, v50  ; v50 = 0x1.11111111100dcp-7
                v52 = f64const 0x1.5555555555556p-5
                v53 = fma v51, v36, v52  ; v52 = 0x1.5555555555556p-5
                v54 = f64const 0x1.5555555555557p-3
                v55 = fma v53, v36, v54  ; v54 = 0x1.5555555555557p-3
                v56 = f64const 0x1.0000000000000p-1
                v57 = fma v55, v36, v56  ; v56 = 0x1.0000000000000p-1
                v58 = fmul v36, v36
                v59 = fmul v58, v57
                v60 = fsub v59, v35
                v61 = fadd v34, v60
                v62 = fsub v61, v34
                v63 = fsub v61, v62
                v64 = fsub v60, v62
                v65 = fsub v34, v63
                v66 = fadd v65, v64
                v67 = f64const 0x1.0000000000000p0
                v68 = fadd v67, v61  ; v67 = 0x1.0000000000000p0
                v69 = fsub v67, v68  ; v67 = 0x1.0000000000000p0
                v70 = fadd v69, v61
                v71 = fadd v70, v66
                v72 = fadd v68, v71
                v73 = iconst.i64 1
                v74 = sshr v30, v73  ; v73 = 1
                v75 = isub v30, v74
                v76 = iconst.i64 1023
                v77 = iadd v74, v76  ; v76 = 1023
                v78 = iconst.i64 52
                v79 = ishl v77, v78  ; v78 = 52
                v80 = bitcast.f64 v79
                v81 = iconst.i64 1023
                v82 = iadd v75, v81  ; v81 = 1023
                v83 = iconst.i64 52
                v84 = ishl v82, v83  ; v83 = 52
                v85 = bitcast.f64 v84
                v86 = fmul v72, v80
                v87 = fmul v86, v85
                store notrap aligned v87, v16
                v88 = iconst.i64 1
                v89 = iadd v8, v88  ; v88 = 1
                v90 = icmp ult v89, v7
                brif v90, block2(v89), block3

            block3:
                v91 = f64const 0.0
                v92 = iconst.i64 2
                v93 = ushr.i64 v7, v92  ; v92 = 2
                v94 = f64const -0.0
                v95 = f64const -0.0
                v96 = f64const -0.0
                v106 = iconst.i64 0
                brif v93, block4(v106, v91, v94, v95, v96), block5(v91, v94, v95, v96)  ; v106 = 0, v91 = 0.0, v94 = -0.0, v95 = -0.0, v96 = -0.0, v91 = 0.0, v94 = -0.0, v95 = -0.0, v96 = -0.0

            block4(v97: i64, v98: f64, v99: f64, v100: f64, v101: f64):
                v107 = iconst.i64 2
                v108 = ishl v97, v107  ; v107 = 2
                v109 = iconst.i64 3
                v110 = ishl v108, v109  ; v109 = 3
                v111 = iadd.i64 v5, v110
                v112 = load.f64 notrap aligned v111
                v113 = fadd v98, v112
                v114 = iconst.i64 1
                v115 = iadd v108, v114  ; v114 = 1
                v116 = iconst.i64 3
                v117 = ishl v115, v116  ; v116 = 3
                v118 = iadd.i64 v5, v117
                v119 = load.f64 notrap aligned v118
                v120 = fadd v99, v119
                v121 = iconst.i64 2
                v122 = iadd v108, v121  ; v121 = 2
                v123 = iconst.i64 3
                v124 = ishl v122, v123  ; v123 = 3
                v125 = iadd.i64 v5, v124
                v126 = load.f64 notrap aligned v125
                v127 = fadd v100, v126
                v128 = iconst.i64 3
                v129 = iadd v108, v128  ; v128 = 3
                v130 = iconst.i64 3
                v131 = ishl v129, v130  ; v130 = 3
                v132 = iadd.i64 v5, v131
                v133 = load.f64 notrap aligned v132
                v134 = fadd v101, v133
                v135 = iconst.i64 1
                v136 = iadd v97, v135  ; v135 = 1
                v137 = icmp ult v136, v93
                brif v137, block4(v136, v113, v120, v127, v134), block5(v113, v120, v127, v134)

            block5(v102: f64, v103: f64, v104: f64, v105: f64):
                v138 = stack_addr.i64 ss0
                store notrap aligned v102, v138
                v139 = atomic_load.i64 notrap aligned v138
                v140 = bitcast.f64 v139
                v141 = stack_addr.i64 ss0
                store notrap aligned v103, v141
                v142 = atomic_load.i64 notrap aligned v141
                v143 = bitcast.f64 v142
                v144 = stack_addr.i64 ss0
                store notrap aligned v104, v144
                v145 = atomic_load.i64 notrap aligned v144
                v146 = bitcast.f64 v145
                v147 = stack_addr.i64 ss0
                store notrap aligned v105, v147
                v148 = atomic_load.i64 notrap aligned v147
                v149 = bitcast.f64 v148
                v150 = fadd v140, v143
                v151 = fadd v146, v149
                v152 = fadd v150, v151
                v153 = select v93, v152, v140
                v154 = iconst.i64 2
                v155 = ishl.i64 v93, v154  ; v154 = 2
                v156 = iconst.i64 3
                v157 = band.i64 v7, v156  ; v156 = 3
                v161 = iconst.i64 0
                brif v157, block6(v161, v153), block7(v153)  ; v161 = 0

            block6(v158: i64, v159: f64):
                v162 = iadd.i64 v155, v158
                v163 = iconst.i64 3
                v164 = ishl v162, v163  ; v163 = 3
                v165 = iadd.i64 v5, v164
                v166 = load.f64 notrap aligned v165
                v167 = fadd v159, v166
                v168 = iconst.i64 1
                v169 = iadd v158, v168  ; v168 = 1
                v170 = icmp ult v169, v157
                brif v170, block6(v169, v167), block7(v167)

            block7(v160: f64):
                v171 = stack_addr.i64 ss0
                store notrap aligned v160, v171
                v172 = atomic_load.i64 notrap aligned v171
                v173 = bitcast.f64 v172
                store notrap aligned v173, v6
                return
            }
        "#]],
    );
}

#[test]
fn sum_keeps_four_accumulators() {
    // Blocks of four elements into four independent accumulators, combined by a tree,
    // then the remaining elements (the order of `unfad_syntax::reduction`).
    clif(
        "def f(A: [n]real) = reduce + 0 A",
        expect![[r#"
        function u0:0(i64, i64, i64, i64) system_v {
            ss0 = explicit_slot 8, align = 8

        block0(v0: i64, v1: i64, v2: i64, v3: i64):
            v90 = load.i64 notrap aligned readonly can_move v1
            v6 -> v90
            jump block1

        block1:
            v4 = load.i64 notrap aligned readonly can_move v0
            v5 = load.i64 notrap aligned readonly can_move v2
            v7 = f64const 0.0
            v8 = iconst.i64 2
            v9 = ushr.i64 v6, v8  ; v8 = 2
            v10 = f64const -0.0
            v11 = f64const -0.0
            v12 = f64const -0.0
            v22 = iconst.i64 0
            brif v9, block2(v22, v7, v10, v11, v12), block3(v7, v10, v11, v12)  ; v22 = 0, v7 = 0.0, v10 = -0.0, v11 = -0.0, v12 = -0.0, v7 = 0.0, v10 = -0.0, v11 = -0.0, v12 = -0.0

        block2(v13: i64, v14: f64, v15: f64, v16: f64, v17: f64):
            v23 = iconst.i64 2
            v24 = ishl v13, v23  ; v23 = 2
            v25 = iconst.i64 3
            v26 = ishl v24, v25  ; v25 = 3
            v27 = iadd.i64 v4, v26
            v28 = load.f64 notrap aligned v27
            v29 = fadd v14, v28
            v30 = iconst.i64 1
            v31 = iadd v24, v30  ; v30 = 1
            v32 = iconst.i64 3
            v33 = ishl v31, v32  ; v32 = 3
            v34 = iadd.i64 v4, v33
            v35 = load.f64 notrap aligned v34
            v36 = fadd v15, v35
            v37 = iconst.i64 2
            v38 = iadd v24, v37  ; v37 = 2
            v39 = iconst.i64 3
            v40 = ishl v38, v39  ; v39 = 3
            v41 = iadd.i64 v4, v40
            v42 = load.f64 notrap aligned v41
            v43 = fadd v16, v42
            v44 = iconst.i64 3
            v45 = iadd v24, v44  ; v44 = 3
            v46 = iconst.i64 3
            v47 = ishl v45, v46  ; v46 = 3
            v48 = iadd.i64 v4, v47
            v49 = load.f64 notrap aligned v48
            v50 = fadd v17, v49
            v51 = iconst.i64 1
            v52 = iadd v13, v51  ; v51 = 1
            v53 = icmp ult v52, v9
            brif v53, block2(v52, v29, v36, v43, v50), block3(v29, v36, v43, v50)

        block3(v18: f64, v19: f64, v20: f64, v21: f64):
            v54 = stack_addr.i64 ss0
            store notrap aligned v18, v54
            v55 = atomic_load.i64 notrap aligned v54
            v56 = bitcast.f64 v55
            v57 = stack_addr.i64 ss0
            store notrap aligned v19, v57
            v58 = atomic_load.i64 notrap aligned v57
            v59 = bitcast.f64 v58
            v60 = stack_addr.i64 ss0
            store notrap aligned v20, v60
            v61 = atomic_load.i64 notrap aligned v60
            v62 = bitcast.f64 v61
            v63 = stack_addr.i64 ss0
            store notrap aligned v21, v63
            v64 = atomic_load.i64 notrap aligned v63
            v65 = bitcast.f64 v64
            v66 = fadd v56, v59
            v67 = fadd v62, v65
            v68 = fadd v66, v67
            v69 = select v9, v68, v56
            v70 = iconst.i64 2
            v71 = ishl.i64 v9, v70  ; v70 = 2
            v72 = iconst.i64 3
            v73 = band.i64 v6, v72  ; v72 = 3
            v77 = iconst.i64 0
            brif v73, block4(v77, v69), block5(v69)  ; v77 = 0

        block4(v74: i64, v75: f64):
            v78 = iadd.i64 v71, v74
            v79 = iconst.i64 3
            v80 = ishl v78, v79  ; v79 = 3
            v81 = iadd.i64 v4, v80
            v82 = load.f64 notrap aligned v81
            v83 = fadd v75, v82
            v84 = iconst.i64 1
            v85 = iadd v74, v84  ; v84 = 1
            v86 = icmp ult v85, v73
            brif v86, block4(v85, v83), block5(v83)

        block5(v76: f64):
            v87 = stack_addr.i64 ss0
            store notrap aligned v76, v87
            v88 = atomic_load.i64 notrap aligned v87
            v89 = bitcast.f64 v88
            store notrap aligned v89, v5
            return
        }
    "#]],
    );
}

#[test]
fn exp_is_an_inline_kernel() {
    // No call: range reduction by ln 2, the polynomial (`fma` where the host has FMA) and
    // 2^k from its exponent bits, the same operations as the interpreter's twin.
    clif_with_kernel(
        "def f(x: real) = exp(x)",
        expect![[r#"
        function u0:0(i64, i64, i64, i64) system_v {
        block0(v0: i64, v1: i64, v2: i64, v3: i64):
            jump block1

        block1:
            v4 = load.i64 notrap aligned readonly can_move v0
            v5 = load.i64 notrap aligned readonly can_move v2
            v6 = load.f64 notrap aligned v4
            v7 = f64const 0x1.6300000000000p9
            v8 = fcmp gt v6, v7  ; v7 = 0x1.6300000000000p9
            v9 = select v8, v7, v6  ; v7 = 0x1.6300000000000p9
            v10 = f64const -0x1.7500000000000p9
            v11 = fcmp lt v9, v10  ; v10 = -0x1.7500000000000p9
            v12 = select v11, v10, v9  ; v10 = -0x1.7500000000000p9
            v13 = f64const 0x1.71547652b82fep0
            v14 = fmul v12, v13  ; v13 = 0x1.71547652b82fep0
            v15 = f64const 0x1.8000000000000p52
            v16 = fadd v14, v15  ; v15 = 0x1.8000000000000p52
            v17 = fsub v16, v15  ; v15 = 0x1.8000000000000p52
            v18 = bitcast.i64 v16
            v19 = iconst.i64 0x4338_0000_0000_0000
            v20 = isub v18, v19  ; v19 = 0x4338_0000_0000_0000
            v21 = f64const 0x1.62e42ff000000p-1
            v22 = f64const -0x1.718432a1b0e26p-35
            v23 = fmul v17, v21  ; v21 = 0x1.62e42ff000000p-1
            v24 = fsub v12, v23
            v25 = fmul v17, v22  ; v22 = -0x1.718432a1b0e26p-35
            v26 = fsub v24, v25
            v27 = f64const 0x1.1f730349868cep-29
            v28 = f64const 0x1.af4de97ca4194p-26
            v29 = fma v27, v26, v28  ; v27 = 0x1.1f730349868cep-29, v28 = 0x1.af4de97ca4194p-26
            v30 = f64const 0x1.27e4db646b17ep-22
            v31 = fma v29, v26, v30  ; v30 = 0x1.27e4db646b17ep-22
            v32 = f64const 0x1.71de0231960ebp-19
            v33 = fma v31, v26, v32  ; v32 = 0x1.71de0231960ebp-19
            v34 = f64const 0x1.a01a01a6d889cp-16
            v35 = fma v33, v26, v34  ; v34 = 0x1.a01a01a6d889cp-16
            v36 = f64const 0x1.a01a01abe7fe1p-13
            v37 = fma v35, v26, v36  ; v36 = 0x1.a01a01abe7fe1p-13
            v38 = f64const 0x1.6c16c16c162d4p-10
            v39 = fma v37, v26, v38  ; v38 = 0x1.6c16c16c162d4p-10
            v40 = f64const 0x1.11111111100dcp-7
            v41 = fma v39, v26, v40  ; v40 = 0x1.11111111100dcp-7
            v42 = f64const 0x1.5555555555556p-5
            v43 = fma v41, v26, v42  ; v42 = 0x1.5555555555556p-5
            v44 = f64const 0x1.5555555555557p-3
            v45 = fma v43, v26, v44  ; v44 = 0x1.5555555555557p-3
            v46 = f64const 0x1.0000000000000p-1
            v47 = fma v45, v26, v46  ; v46 = 0x1.0000000000000p-1
            v48 = fmul v26, v26
            v49 = fmul v48, v47
            v50 = fsub v49, v25
            v51 = fadd v24, v50
            v52 = fsub v51, v24
            v53 = fsub v51, v52
            v54 = fsub v50, v52
            v55 = fsub v24, v53
            v56 = fadd v55, v54
            v57 = f64const 0x1.0000000000000p0
            v58 = fadd v57, v51  ; v57 = 0x1.0000000000000p0
            v59 = fsub v57, v58  ; v57 = 0x1.0000000000000p0
            v60 = fadd v59, v51
            v61 = fadd v60, v56
            v62 = fadd v58, v61
            v63 = iconst.i64 1
            v64 = sshr v20, v63  ; v63 = 1
            v65 = isub v20, v64
            v66 = iconst.i64 1023
            v67 = iadd v64, v66  ; v66 = 1023
            v68 = iconst.i64 52
            v69 = ishl v67, v68  ; v68 = 52
            v70 = bitcast.f64 v69
            v71 = iconst.i64 1023
            v72 = iadd v65, v71  ; v71 = 1023
            v73 = iconst.i64 52
            v74 = ishl v72, v73  ; v73 = 52
            v75 = bitcast.f64 v74
            v76 = fmul v62, v70
            v77 = fmul v76, v75
            store notrap aligned v77, v5
            return
        }
    "#]],
    );
}
