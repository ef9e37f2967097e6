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
                v94 = load.i64 notrap aligned readonly can_move v1
                v95 = iconst.i64 1
                v96 = smax v94, v95  ; v95 = 1
                v97 = iconst.i64 3
                v98 = ishl v96, v97  ; v97 = 3
                v99 = iadd v3, v98
                v100 = iconst.i64 0
                v101 = iconst.i64 3
                v102 = ishl v100, v101  ; v100 = 0, v101 = 3
                v103 = iadd v3, v102
                v104 = iconst.i64 -1
                v105 = iadd v94, v104  ; v104 = -1
                v106 = iconst.i64 0
                v107 = smax v105, v106  ; v106 = 0
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v10 = iconst.i64 8
                v11 = iadd v4, v10  ; v10 = 8
                v12 = iconst.i64 3
                v13 = ishl.i64 v107, v12  ; v12 = 3
                v14 = iadd.i64 v103, v13
                v15 = f64const 0x1.0000000000000p0
                store notrap aligned v15, v14  ; v15 = 0x1.0000000000000p0
                v19 = iconst.i64 -1
                v20 = iadd.i64 v107, v19  ; v19 = -1
                brif.i64 v107, block2(v20, v15), block3(v15)  ; v15 = 0x1.0000000000000p0, v15 = 0x1.0000000000000p0

            block2(v16: i64, v17: f64):
                v21 = iconst.i64 3
                v22 = ishl v16, v21  ; v21 = 3
                v23 = iadd.i64 v11, v22
                v24 = load.f64 notrap aligned v23
                v25 = iconst.i64 3
                v26 = ishl v16, v25  ; v25 = 3
                v27 = iadd.i64 v103, v26
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
                v35 = iconst.i64 1
                v36 = ushr.i64 v94, v35  ; v35 = 1
                v37 = iconst.i64 -2
                v38 = band.i64 v94, v37  ; v37 = -2
                v39 = iconst.i64 1
                v40 = band.i64 v94, v39  ; v39 = 1
                v42 = iconst.i64 0
                brif v36, block4(v42, v34), block5(v34)  ; v42 = 0, v34 = 0x1.0000000000000p0, v34 = 0x1.0000000000000p0

            block4(v41: i64, v49: f64):
                v43 = iconst.i64 1
                v44 = ishl v41, v43  ; v43 = 1
                v45 = iconst.i64 3
                v46 = ishl v44, v45  ; v45 = 3
                v47 = iadd.i64 v103, v46
                v50 = iconst.i64 3
                v51 = ishl v44, v50  ; v50 = 3
                v52 = iadd.i64 v4, v51
                v53 = load.f64 notrap aligned v52
                v54 = fmul v49, v53
                v55 = iconst.i64 3
                v56 = ishl v44, v55  ; v55 = 3
                v57 = iadd.i64 v5, v56
                v59 = iconst.i64 1
                v60 = iadd v44, v59  ; v59 = 1
                v109 = load.f64x2 notrap v47
                v65 = iconst.i64 3
                v66 = ishl v60, v65  ; v65 = 3
                v67 = iadd.i64 v4, v66
                v68 = load.f64 notrap aligned v67
                v69 = fmul v54, v68
                v110 = scalar_to_vector.f64x2 v49
                v111 = insertlane v110, v54, 1
                v112 = fmul v109, v111
                store notrap v112, v57
                v74 = iconst.i64 1
                v75 = iadd v41, v74  ; v74 = 1
                v76 = icmp ult v75, v36
                brif v76, block4(v75, v69), block5(v69)

            block5(v108: f64):
                v78 = iconst.i64 0
                brif.i64 v40, block6(v78), block7  ; v78 = 0

            block6(v77: i64):
                v79 = iadd.i64 v38, v77
                v80 = iconst.i64 3
                v81 = ishl v79, v80  ; v80 = 3
                v82 = iadd.i64 v103, v81
                v83 = load.f64 notrap aligned v82
                v85 = iconst.i64 3
                v86 = ishl v79, v85  ; v85 = 3
                v87 = iadd.i64 v4, v86
                v88 = load.f64 notrap aligned v87
                v89 = fmul.f64 v108, v88
                v90 = iconst.i64 3
                v91 = ishl v79, v90  ; v90 = 3
                v92 = iadd.i64 v5, v91
                v93 = fmul v83, v108
                store notrap aligned v93, v92
                jump block7

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
                v108 = load.i64 notrap aligned readonly can_move v1+8
                v109 = iconst.i64 3
                v110 = ishl v108, v109  ; v109 = 3
                v111 = iadd v3, v110
                v112 = iconst.i64 3
                v113 = ishl v108, v112  ; v112 = 3
                v114 = iadd v111, v113
                v115 = load.i64 notrap aligned readonly can_move v1
                v116 = iconst.i64 0
                v117 = iconst.i64 3
                v118 = ishl v116, v117  ; v116 = 0, v117 = 3
                v119 = iadd v3, v118
                v120 = iconst.i64 3
                v121 = ishl v116, v120  ; v116 = 0, v120 = 3
                v122 = iadd v111, v121
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v12 = iconst.i64 0
                brif.i64 v108, block2(v12), block3  ; v12 = 0

            block2(v11: i64):
                v13 = iconst.i64 3
                v14 = ishl v11, v13  ; v13 = 3
                v15 = iadd.i64 v5, v14
                v16 = load.f64 notrap aligned v15
                v17 = iconst.i64 3
                v18 = ishl v11, v17  ; v17 = 3
                v19 = iadd.i64 v119, v18
                store notrap aligned v16, v19
                v20 = iconst.i64 1
                v21 = iadd v11, v20  ; v20 = 1
                v22 = icmp ult v21, v108
                brif v22, block2(v21), block3

            block3:
                v23 = iconst.i64 1
                v24 = iconst.i8 0
                v30 = iconst.i64 0
                brif.i64 v115, block4(v30, v24, v119), block5(v24, v119)  ; v30 = 0, v24 = 0, v24 = 0

            block4(v25: i64, v26: i8, v27: i64):
                v31 = select.i64 v26, v119, v122
                v32 = imul v25, v108
                v33 = iconst.i64 3
                v34 = ishl v32, v33  ; v33 = 3
                v35 = iadd.i64 v4, v34
                v36 = iconst.i64 1
                v37 = ushr.i64 v108, v36  ; v36 = 1
                v38 = iconst.i64 -2
                v39 = band.i64 v108, v38  ; v38 = -2
                v40 = iconst.i64 1
                v41 = band.i64 v108, v40  ; v40 = 1
                v43 = iconst.i64 0
                brif v37, block6(v43), block7  ; v43 = 0

            block6(v42: i64):
                v44 = iconst.i64 1
                v45 = ishl v42, v44  ; v44 = 1
                v46 = iconst.i64 3
                v47 = ishl v45, v46  ; v46 = 3
                v48 = iadd.i64 v27, v47
                v49 = load.f64 notrap aligned v48
                v50 = iconst.i64 3
                v51 = ishl v45, v50  ; v50 = 3
                v52 = iadd.i64 v35, v51
                v53 = load.f64 notrap aligned v52
                v54 = iconst.i64 3
                v55 = ishl v45, v54  ; v54 = 3
                v56 = iadd.i64 v31, v55
                v57 = fadd v49, v53
                store notrap aligned v57, v56
                v58 = iconst.i64 1
                v59 = iadd v45, v58  ; v58 = 1
                v60 = iconst.i64 3
                v61 = ishl v59, v60  ; v60 = 3
                v62 = iadd.i64 v27, v61
                v63 = load.f64 notrap aligned v62
                v64 = iconst.i64 3
                v65 = ishl v59, v64  ; v64 = 3
                v66 = iadd.i64 v35, v65
                v67 = load.f64 notrap aligned v66
                v68 = iconst.i64 3
                v69 = ishl v59, v68  ; v68 = 3
                v70 = iadd.i64 v31, v69
                v71 = fadd v63, v67
                store notrap aligned v71, v70
                v72 = iconst.i64 1
                v73 = iadd v42, v72  ; v72 = 1
                v74 = icmp ult v73, v37
                brif v74, block6(v73), block7

            block7:
                v76 = iconst.i64 0
                brif.i64 v41, block8(v76), block9  ; v76 = 0

            block8(v75: i64):
                v77 = iadd.i64 v39, v75
                v78 = iconst.i64 3
                v79 = ishl v77, v78  ; v78 = 3
                v80 = iadd.i64 v27, v79
                v81 = load.f64 notrap aligned v80
                v82 = iconst.i64 3
                v83 = ishl v77, v82  ; v82 = 3
                v84 = iadd.i64 v35, v83
                v85 = load.f64 notrap aligned v84
                v86 = iconst.i64 3
                v87 = ishl v77, v86  ; v86 = 3
                v88 = iadd.i64 v31, v87
                v89 = fadd v81, v85
                store notrap aligned v89, v88
                jump block9

            block9:
                v90 = iconst.i8 1
                v91 = bxor.i8 v26, v90  ; v90 = 1
                v92 = iconst.i64 1
                v93 = iconst.i64 1
                v94 = iadd.i64 v25, v93  ; v93 = 1
                v95 = icmp ult v94, v115
                brif v95, block4(v94, v91, v31), block5(v91, v31)

            block5(v28: i8, v29: i64):
                v97 = iconst.i64 0
                brif.i64 v108, block10(v97), block11  ; v97 = 0

            block10(v96: i64):
                v98 = iconst.i64 3
                v99 = ishl v96, v98  ; v98 = 3
                v100 = iadd.i64 v29, v99
                v101 = load.f64 notrap aligned v100
                v102 = iconst.i64 3
                v103 = ishl v96, v102  ; v102 = 3
                v104 = iadd.i64 v6, v103
                store notrap aligned v101, v104
                v105 = iconst.i64 1
                v106 = iadd v96, v105  ; v105 = 1
                v107 = icmp ult v106, v108
                brif v107, block10(v106), block11

            block11:
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
                v346 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v8 = iconst.i64 1
                v9 = ushr.i64 v346, v8  ; v8 = 1
                v10 = iconst.i64 -2
                v11 = band.i64 v346, v10  ; v10 = -2
                v12 = iconst.i64 1
                v13 = band.i64 v346, v12  ; v12 = 1
                v15 = iconst.i64 0
                brif v9, block2(v15), block3  ; v15 = 0

            block2(v14: i64):
                v16 = iconst.i64 1
                v17 = ishl v14, v16  ; v16 = 1
                v18 = iconst.i64 3
                v19 = ishl v17, v18  ; v18 = 3
                v20 = iadd.i64 v4, v19
                v22 = iconst.i64 3
                v23 = ishl v17, v22  ; v22 = 3
                v24 = iadd.i64 v5, v23
                v25 = f64const 0x1.6300000000000p9
                v28 = f64const -0x1.7500000000000p9
                v31 = f64const 0x1.71547652b82fep0
                v33 = f64const 0x1.8000000000000p52
                v37 = iconst.i64 0x4338_0000_0000_0000
                v39 = f64const 0x1.62e42ff000000p-1
                v40 = f64const -0x1.718432a1b0e26p-35
                v45 = f64const 0x1.1f730349868cep-29
                v46 = f64const 0x1.af4de97ca4194p-26
                v48 = f64const 0x1.27e4db646b17ep-22
                v50 = f64const 0x1.71de0231960ebp-19
                v52 = f64const 0x1.a01a01a6d889cp-16
                v54 = f64const 0x1.a01a01abe7fe1p-13
                v56 = f64const 0x1.6c16c16c162d4p-10
                v58 = f64const 0x1.11111111100dcp-7
                v60 = f64const 0x1.5555555555556p-5
                v62 = f64const 0x1.5555555555557p-3
                v64 = f64const 0x1.0000000000000p-1
                v75 = f64const 0x1.0000000000000p0
                v81 = iconst.i64 1
                v84 = iconst.i64 1023
                v86 = iconst.i64 52
                v89 = iconst.i64 1023
                v91 = iconst.i64 52
                v348 = load.f64x2 notrap v20
                v349 = splat.f64x2 v25  ; v25 = 0x1.6300000000000p9
                v350 = fcmp gt v348, v349
                v351 = bitcast.f64x2 little v350
                v352 = bitselect v351, v349, v348
                v353 = splat.f64x2 v28  ; v28 = -0x1.7500000000000p9
                v354 = fcmp lt v352, v353
                v355 = bitcast.f64x2 little v354
                v356 = bitselect v355, v353, v352
                v357 = splat.f64x2 v31  ; v31 = 0x1.71547652b82fep0
                v358 = fmul v356, v357
                v359 = splat.f64x2 v33  ; v33 = 0x1.8000000000000p52
                v360 = fadd v358, v359
                v361 = fsub v360, v359
                v403 = bitcast.i64x2 little v360
                v404 = splat.i64x2 v37  ; v37 = 0x4338_0000_0000_0000
                v405 = isub v403, v404
                v362 = splat.f64x2 v39  ; v39 = 0x1.62e42ff000000p-1
                v365 = splat.f64x2 v40  ; v40 = -0x1.718432a1b0e26p-35
                v363 = fmul v361, v362
                v364 = fsub v356, v363
                v366 = fmul v361, v365
                v367 = fsub v364, v366
                v369 = splat.f64x2 v45  ; v45 = 0x1.1f730349868cep-29
                v370 = splat.f64x2 v46  ; v46 = 0x1.af4de97ca4194p-26
                v371 = fma v369, v367, v370
                v372 = splat.f64x2 v48  ; v48 = 0x1.27e4db646b17ep-22
                v373 = fma v371, v367, v372
                v374 = splat.f64x2 v50  ; v50 = 0x1.71de0231960ebp-19
                v375 = fma v373, v367, v374
                v376 = splat.f64x2 v52  ; v52 = 0x1.a01a01a6d889cp-16
                v377 = fma v375, v367, v376
                v378 = splat.f64x2 v54  ; v54 = 0x1.a01a01abe7fe1p-13
                v379 = fma v377, v367, v378
                v380 = splat.f64x2 v56  ; v56 = 0x1.6c16c16c162d4p-10
                v381 = fma v379, v367, v380
                v382 = splat.f64x2 v58  ; v58 = 0x1.11111111100dcp-7
                v383 = fma v381, v367, v382
                v384 = splat.f64x2 v60  ; v60 = 0x1.5555555555556p-5
                v385 = fma v383, v367, v384
                v386 = splat.f64x2 v62  ; v62 = 0x1.5555555555557p-3
                v387 = fma v385, v367, v386
                v388 = splat.f64x2 v64  ; v64 = 0x1.0000000000000p-1
                v389 = fma v387, v367, v388
                v368 = fmul v367, v367
                v390 = fmul v368, v389
                v391 = fsub v390, v366
                v392 = fadd v364, v391
                v396 = fsub v392, v364
                v397 = fsub v392, v396
                v399 = fsub v391, v396
                v398 = fsub v364, v397
                v400 = fadd v398, v399
                v347 = splat.f64x2 v75  ; v75 = 0x1.0000000000000p0
                v393 = fadd v347, v392
                v394 = fsub v347, v393
                v395 = fadd v394, v392
                v401 = fadd v395, v400
                v402 = fadd v393, v401
                v406 = sshr v405, v81  ; v81 = 1
                v412 = isub v405, v406
                v407 = splat.i64x2 v84  ; v84 = 1023
                v408 = iadd v406, v407
                v409 = ishl v408, v86  ; v86 = 52
                v410 = bitcast.f64x2 little v409
                v413 = splat.i64x2 v89  ; v89 = 1023
                v414 = iadd v412, v413
                v415 = ishl v414, v91  ; v91 = 52
                v416 = bitcast.f64x2 little v415
                v411 = fmul v402, v410
                v417 = fmul v411, v416
                store notrap v417, v24
                v176 = iconst.i64 1
                v177 = iadd v14, v176  ; v176 = 1
                v178 = icmp ult v177, v9
                brif v178, block2(v177), block3

            block3:
                v180 = iconst.i64 0
                brif.i64 v13, block4(v180), block5  ; v180 = 0

            block4(v179: i64):
                v181 = iadd.i64 v11, v179
                v182 = iconst.i64 3
                v183 = ishl v181, v182  ; v182 = 3
                v184 = iadd.i64 v4, v183
                v185 = load.f64 notrap aligned v184
                v186 = iconst.i64 3
                v187 = ishl v181, v186  ; v186 = 3
                v188 = iadd.i64 v5, v187
                v189 = f64const 0x1.6300000000000p9
                v190 = fcmp gt v185, v189  ; v189 = 0x1.6300000000000p9
                v191 = select v190, v189, v185  ; v189 = 0x1.6300000000000p9
                v192 = f64const -0x1.7500000000000p9
                v193 = fcmp lt v191, v192  ; v192 = -0x1.7500000000000p9
                v194 = select v193, v192, v191  ; v192 = -0x1.7500000000000p9
                v195 = f64const 0x1.71547652b82fep0
                v196 = fmul v194, v195  ; v195 = 0x1.71547652b82fep0
                v197 = f64const 0x1.8000000000000p52
                v198 = fadd v196, v197  ; v197 = 0x1.8000000000000p52
                v199 = fsub v198, v197  ; v197 = 0x1.8000000000000p52
                v200 = bitcast.i64 v198
                v201 = iconst.i64 0x4338_0000_0000_0000
                v202 = isub v200, v201  ; v201 = 0x4338_0000_0000_0000
                v203 = f64const 0x1.62e42ff000000p-1
                v204 = f64const -0x1.718432a1b0e26p-35
                v205 = fmul v199, v203  ; v203 = 0x1.62e42ff000000p-1
                v206 = fsub v194, v205
                v207 = fmul v199, v204  ; v204 = -0x1.718432a1b0e26p-35
                v208 = fsub v206, v207
                v209 = f64const 0x1.1f730349868cep-29
                v210 = f64const 0x1.af4de97ca4194p-26
                v211 = fma v209, v208, v210  ; v209 = 0x1.1f730349868cep-29, v210 = 0x1.af4de97ca4194p-26
                v212 = f64const 0x1.27e4db646b17ep-22
                v213 = fma v211, v208, v212  ; v212 = 0x1.27e4db646b17ep-22
                v214 = f64const 0x1.71de0231960ebp-19
                v215 = fma v213, v208, v214  ; v214 = 0x1.71de0231960ebp-19
                v216 = f64const 0x1.a01a01a6d889cp-16
                v217 = fma v215, v208, v216  ; v216 = 0x1.a01a01a6d889cp-16
                v218 = f64const 0x1.a01a01abe7fe1p-13
                v219 = fma v217, v208, v218  ; v218 = 0x1.a01a01abe7fe1p-13
                v220 = f64const 0x1.6c16c16c162d4p-10
                v221 = fma v219, v208, v220  ; v220 = 0x1.6c16c16c162d4p-10
                v222 = f64const 0x1.11111111100dcp-7
                v223 = fma v221, v208, v222  ; v222 = 0x1.11111111100dcp-7
                v224 = f64const 0x1.5555555555556p-5
                v225 = fma v223, v208, v224  ; v224 = 0x1.5555555555556p-5
                v226 = f64const 0x1.5555555555557p-3
                v227 = fma v225, v208, v226  ; v226 = 0x1.5555555555557p-3
                v228 = f64const 0x1.0000000000000p-1
                v229 = fma v227, v208, v228  ; v228 = 0x1.0000000000000p-1
                v230 = fmul v208, v208
                v231 = fmul v230, v229
                v232 = fsub v231, v207
                v233 = fadd v206, v232
                v234 = fsub v233, v206
                v235 = fsub v233, v234
                v236 = fsub v232, v234
                v237 = fsub v206, v235
                v238 = fadd v237, v236
                v239 = f64const 0x1.0000000000000p0
                v240 = fadd v239, v233  ; v239 = 0x1.0000000000000p0
                v241 = fsub v239, v240  ; v239 = 0x1.0000000000000p0
                v242 = fadd v241, v233
                v243 = fadd v242, v238
                v244 = fadd v240, v243
                v245 = iconst.i64 1
                v246 = sshr v202, v245  ; v245 = 1
                v247 = isub v202, v246
                v248 = iconst.i64 1023
                v249 = iadd v246, v248  ; v248 = 1023
                v250 = iconst.i64 52
                v251 = ishl v249, v250  ; v250 = 52
                v252 = bitcast.f64 v251
                v253 = iconst.i64 1023
                v254 = iadd v247, v253  ; v253 = 1023
                v255 = iconst.i64 52
                v256 = ishl v254, v255  ; v255 = 52
                v257 = bitcast.f64 v256
                v258 = fmul v244, v252
                v259 = fmul v258, v257
                store notrap aligned v259, v188
                jump block5

            block5:
                v260 = f64const 0.0
                v261 = iconst.i64 2
                v262 = ushr.i64 v346, v261  ; v261 = 2
                v263 = f64const -0.0
                v418 = splat.f64x2 v263  ; v263 = -0.0
                v264 = scalar_to_vector.f64x2 v260  ; v260 = 0.0
                v265 = insertlane v264, v263, 1  ; v263 = -0.0
                v275 = iconst.i64 0
                brif v262, block6(v275, v260, v265, v418), block7(v260, v265, v418)  ; v275 = 0, v260 = 0.0, v260 = 0.0

            block6(v268: i64, v269: f64, v270: f64x2, v271: f64x2):
                v276 = iconst.i64 2
                v277 = ishl v268, v276  ; v276 = 2
                v279 = iconst.i64 3
                v280 = ishl v277, v279  ; v279 = 3
                v281 = iadd.i64 v5, v280
                v419 = load.f64x2 notrap v281
                v420 = fadd v270, v419
                v293 = iconst.i64 2
                v294 = iadd v277, v293  ; v293 = 2
                v295 = iconst.i64 3
                v296 = ishl v294, v295  ; v295 = 3
                v297 = iadd.i64 v5, v296
                v421 = load.f64x2 notrap v297
                v422 = fadd v271, v421
                v312 = iconst.i64 1
                v313 = iadd v268, v312  ; v312 = 1
                v314 = icmp ult v313, v262
                brif v314, block6(v313, v269, v420, v422), block7(v269, v420, v422)

            block7(v272: f64, v273: f64x2, v274: f64x2):
                v315 = stack_addr.i64 ss0
                store notrap aligned v272, v315
                v316 = atomic_load.i64 notrap aligned v315
                v317 = bitcast.f64 v316
                v318 = extractlane v273, 0
                v319 = extractlane v273, 1
                v320 = extractlane v274, 0
                v321 = extractlane v274, 1
                v322 = fadd v318, v319
                v323 = fadd v320, v321
                v324 = fadd v322, v323
                v325 = select v262, v324, v317
                v326 = iconst.i64 2
                v327 = ishl.i64 v262, v326  ; v326 = 2
                v328 = iconst.i64 3
                v329 = band.i64 v346, v328  ; v328 = 3
                v333 = iconst.i64 0
                brif v329, block8(v333, v325), block9(v325)  ; v333 = 0

            block8(v330: i64, v331: f64):
                v334 = iadd.i64 v327, v330
                v335 = iconst.i64 3
                v336 = ishl v334, v335  ; v335 = 3
                v337 = iadd.i64 v5, v336
                v338 = load.f64 notrap aligned v337
                v339 = fadd v331, v338
                v340 = iconst.i64 1
                v341 = iadd v330, v340  ; v340 = 1
                v342 = icmp ult v341, v329
                brif v342, block8(v341, v339), block9(v339)

            block9(v332: f64):
                v343 = stack_addr.i64 ss0
                store notrap aligned v332, v343
                v344 = atomic_load.i64 notrap aligned v343
                v345 = bitcast.f64 v344
                store notrap aligned v345, v6
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
