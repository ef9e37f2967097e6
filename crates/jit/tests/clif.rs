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
                v119 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v8 = f64const 0.0
                v9 = iconst.i64 2
                v10 = ushr.i64 v119, v9  ; v9 = 2
                v11 = f64const -0.0
                v120 = splat.f64x2 v11  ; v11 = -0.0
                v12 = scalar_to_vector.f64x2 v8  ; v8 = 0.0
                v13 = insertlane v12, v11, 1  ; v11 = -0.0
                v23 = iconst.i64 0
                brif v10, block2(v23, v8, v13, v120), block3(v8, v13, v120)  ; v23 = 0, v8 = 0.0, v8 = 0.0

            block2(v16: i64, v17: f64, v18: f64x2, v19: f64x2):
                v24 = iconst.i64 2
                v25 = ishl v16, v24  ; v24 = 2
                v27 = iconst.i64 3
                v28 = ishl v25, v27  ; v27 = 3
                v29 = iadd.i64 v4, v28
                v31 = iconst.i64 3
                v32 = ishl v25, v31  ; v31 = 3
                v33 = iadd.i64 v5, v32
                v121 = load.f64x2 notrap v29
                v122 = load.f64x2 notrap v33
                v123 = fmul v121, v122
                v124 = fadd v18, v123
                v51 = iconst.i64 2
                v52 = iadd v25, v51  ; v51 = 2
                v53 = iconst.i64 3
                v54 = ishl v52, v53  ; v53 = 3
                v55 = iadd.i64 v4, v54
                v57 = iconst.i64 3
                v58 = ishl v52, v57  ; v57 = 3
                v59 = iadd.i64 v5, v58
                v125 = load.f64x2 notrap v55
                v126 = load.f64x2 notrap v59
                v127 = fmul v125, v126
                v128 = fadd v19, v127
                v80 = iconst.i64 1
                v81 = iadd v16, v80  ; v80 = 1
                v82 = icmp ult v81, v10
                brif v82, block2(v81, v17, v124, v128), block3(v17, v124, v128)

            block3(v20: f64, v21: f64x2, v22: f64x2):
                v83 = stack_addr.i64 ss0
                store notrap aligned v20, v83
                v84 = atomic_load.i64 notrap aligned v83
                v85 = bitcast.f64 v84
                v86 = extractlane v21, 0
                v87 = extractlane v21, 1
                v88 = extractlane v22, 0
                v89 = extractlane v22, 1
                v90 = fadd v86, v87
                v91 = fadd v88, v89
                v92 = fadd v90, v91
                v93 = select v10, v92, v85
                v94 = iconst.i64 2
                v95 = ishl.i64 v10, v94  ; v94 = 2
                v96 = iconst.i64 3
                v97 = band.i64 v119, v96  ; v96 = 3
                v101 = iconst.i64 0
                brif v97, block4(v101, v93), block5(v93)  ; v101 = 0

            block4(v98: i64, v99: f64):
                v102 = iadd.i64 v95, v98
                v103 = iconst.i64 3
                v104 = ishl v102, v103  ; v103 = 3
                v105 = iadd.i64 v4, v104
                v106 = load.f64 notrap aligned v105
                v107 = iconst.i64 3
                v108 = ishl v102, v107  ; v107 = 3
                v109 = iadd.i64 v5, v108
                v110 = load.f64 notrap aligned v109
                v111 = fmul v106, v110
                v112 = fadd v99, v111
                v113 = iconst.i64 1
                v114 = iadd v98, v113  ; v113 = 1
                v115 = icmp ult v114, v97
                brif v115, block4(v114, v112), block5(v112)

            block5(v100: f64):
                v116 = stack_addr.i64 ss0
                store notrap aligned v100, v116
                v117 = atomic_load.i64 notrap aligned v116
                v118 = bitcast.f64 v117
                store notrap aligned v118, v6
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
                v177 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v9 = iconst.i64 0
                brif.i64 v177, block2(v9), block3  ; v9 = 0

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
                v90 = icmp ult v89, v177
                brif v90, block2(v89), block3

            block3:
                v91 = f64const 0.0
                v92 = iconst.i64 2
                v93 = ushr.i64 v177, v92  ; v92 = 2
                v94 = f64const -0.0
                v178 = splat.f64x2 v94  ; v94 = -0.0
                v95 = scalar_to_vector.f64x2 v91  ; v91 = 0.0
                v96 = insertlane v95, v94, 1  ; v94 = -0.0
                v106 = iconst.i64 0
                brif v93, block4(v106, v91, v96, v178), block5(v91, v96, v178)  ; v106 = 0, v91 = 0.0, v91 = 0.0

            block4(v99: i64, v100: f64, v101: f64x2, v102: f64x2):
                v107 = iconst.i64 2
                v108 = ishl v99, v107  ; v107 = 2
                v110 = iconst.i64 3
                v111 = ishl v108, v110  ; v110 = 3
                v112 = iadd.i64 v5, v111
                v179 = load.f64x2 notrap v112
                v180 = fadd v101, v179
                v124 = iconst.i64 2
                v125 = iadd v108, v124  ; v124 = 2
                v126 = iconst.i64 3
                v127 = ishl v125, v126  ; v126 = 3
                v128 = iadd.i64 v5, v127
                v181 = load.f64x2 notrap v128
                v182 = fadd v102, v181
                v143 = iconst.i64 1
                v144 = iadd v99, v143  ; v143 = 1
                v145 = icmp ult v144, v93
                brif v145, block4(v144, v100, v180, v182), block5(v100, v180, v182)

            block5(v103: f64, v104: f64x2, v105: f64x2):
                v146 = stack_addr.i64 ss0
                store notrap aligned v103, v146
                v147 = atomic_load.i64 notrap aligned v146
                v148 = bitcast.f64 v147
                v149 = extractlane v104, 0
                v150 = extractlane v104, 1
                v151 = extractlane v105, 0
                v152 = extractlane v105, 1
                v153 = fadd v149, v150
                v154 = fadd v151, v152
                v155 = fadd v153, v154
                v156 = select v93, v155, v148
                v157 = iconst.i64 2
                v158 = ishl.i64 v93, v157  ; v157 = 2
                v159 = iconst.i64 3
                v160 = band.i64 v177, v159  ; v159 = 3
                v164 = iconst.i64 0
                brif v160, block6(v164, v156), block7(v156)  ; v164 = 0

            block6(v161: i64, v162: f64):
                v165 = iadd.i64 v158, v161
                v166 = iconst.i64 3
                v167 = ishl v165, v166  ; v166 = 3
                v168 = iadd.i64 v5, v167
                v169 = load.f64 notrap aligned v168
                v170 = fadd v162, v169
                v171 = iconst.i64 1
                v172 = iadd v161, v171  ; v171 = 1
                v173 = icmp ult v172, v160
                brif v173, block6(v172, v170), block7(v170)

            block7(v163: f64):
                v174 = stack_addr.i64 ss0
                store notrap aligned v163, v174
                v175 = atomic_load.i64 notrap aligned v174
                v176 = bitcast.f64 v175
                store notrap aligned v176, v6
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
                v93 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v7 = f64const 0.0
                v8 = iconst.i64 2
                v9 = ushr.i64 v93, v8  ; v8 = 2
                v10 = f64const -0.0
                v94 = splat.f64x2 v10  ; v10 = -0.0
                v11 = scalar_to_vector.f64x2 v7  ; v7 = 0.0
                v12 = insertlane v11, v10, 1  ; v10 = -0.0
                v22 = iconst.i64 0
                brif v9, block2(v22, v7, v12, v94), block3(v7, v12, v94)  ; v22 = 0, v7 = 0.0, v7 = 0.0

            block2(v15: i64, v16: f64, v17: f64x2, v18: f64x2):
                v23 = iconst.i64 2
                v24 = ishl v15, v23  ; v23 = 2
                v26 = iconst.i64 3
                v27 = ishl v24, v26  ; v26 = 3
                v28 = iadd.i64 v4, v27
                v95 = load.f64x2 notrap v28
                v96 = fadd v17, v95
                v40 = iconst.i64 2
                v41 = iadd v24, v40  ; v40 = 2
                v42 = iconst.i64 3
                v43 = ishl v41, v42  ; v42 = 3
                v44 = iadd.i64 v4, v43
                v97 = load.f64x2 notrap v44
                v98 = fadd v18, v97
                v59 = iconst.i64 1
                v60 = iadd v15, v59  ; v59 = 1
                v61 = icmp ult v60, v9
                brif v61, block2(v60, v16, v96, v98), block3(v16, v96, v98)

            block3(v19: f64, v20: f64x2, v21: f64x2):
                v62 = stack_addr.i64 ss0
                store notrap aligned v19, v62
                v63 = atomic_load.i64 notrap aligned v62
                v64 = bitcast.f64 v63
                v65 = extractlane v20, 0
                v66 = extractlane v20, 1
                v67 = extractlane v21, 0
                v68 = extractlane v21, 1
                v69 = fadd v65, v66
                v70 = fadd v67, v68
                v71 = fadd v69, v70
                v72 = select v9, v71, v64
                v73 = iconst.i64 2
                v74 = ishl.i64 v9, v73  ; v73 = 2
                v75 = iconst.i64 3
                v76 = band.i64 v93, v75  ; v75 = 3
                v80 = iconst.i64 0
                brif v76, block4(v80, v72), block5(v72)  ; v80 = 0

            block4(v77: i64, v78: f64):
                v81 = iadd.i64 v74, v77
                v82 = iconst.i64 3
                v83 = ishl v81, v82  ; v82 = 3
                v84 = iadd.i64 v4, v83
                v85 = load.f64 notrap aligned v84
                v86 = fadd v78, v85
                v87 = iconst.i64 1
                v88 = iadd v77, v87  ; v87 = 1
                v89 = icmp ult v88, v76
                brif v89, block4(v88, v86), block5(v86)

            block5(v79: f64):
                v90 = stack_addr.i64 ss0
                store notrap aligned v79, v90
                v91 = atomic_load.i64 notrap aligned v90
                v92 = bitcast.f64 v91
                store notrap aligned v92, v5
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
