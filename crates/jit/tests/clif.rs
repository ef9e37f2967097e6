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
                v331 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v8 = iconst.i64 1
                v9 = ushr.i64 v331, v8  ; v8 = 1
                v10 = iconst.i64 -2
                v11 = band.i64 v331, v10  ; v10 = -2
                v12 = iconst.i64 1
                v13 = band.i64 v331, v12  ; v12 = 1
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
                v25 = f64const 0x1.71547652b82fep0
                v26 = f64const 0x1.8000000000000p52
                v30 = iconst.i64 0x4338_0000_0000_0000
                v32 = f64const -0x1.62e42ff000000p-1
                v34 = f64const 0x1.718432a1b0e26p-35
                v37 = f64const 0x1.0000000000000p-1
                v38 = f64const 0x1.5555555555557p-3
                v40 = f64const 0x1.5555555555556p-5
                v41 = f64const 0x1.11111111100dcp-7
                v43 = f64const 0x1.6c16c16c162d4p-10
                v44 = f64const 0x1.a01a01abe7fe1p-13
                v46 = f64const 0x1.a01a01a6d889cp-16
                v47 = f64const 0x1.71de0231960ebp-19
                v49 = f64const 0x1.27e4db646b17ep-22
                v50 = f64const 0x1.af4de97ca4194p-26
                v52 = f64const 0x1.1f730349868cep-29
                v64 = f64const 0x1.0000000000000p0
                v66 = iconst.i64 1
                v69 = iconst.i64 1023
                v71 = iconst.i64 52
                v74 = iconst.i64 1023
                v76 = iconst.i64 52
                v81 = f64const 0x1.6300000000000p9
                v83 = f64const +Inf
                v85 = f64const -0x1.7500000000000p9
                v87 = f64const 0.0
                v332 = load.f64x2 notrap v20
                v341 = splat.f64x2 v25  ; v25 = 0x1.71547652b82fep0
                v342 = splat.f64x2 v26  ; v26 = 0x1.8000000000000p52
                v343 = fma v332, v341, v342
                v344 = fsub v343, v342
                v378 = bitcast.i64x2 little v343
                v379 = splat.i64x2 v30  ; v30 = 0x4338_0000_0000_0000
                v380 = isub v378, v379
                v345 = splat.f64x2 v32  ; v32 = -0x1.62e42ff000000p-1
                v346 = fma v344, v345, v332
                v347 = splat.f64x2 v34  ; v34 = 0x1.718432a1b0e26p-35
                v348 = fmul v344, v347
                v349 = fadd v346, v348
                v370 = splat.f64x2 v37  ; v37 = 0x1.0000000000000p-1
                v369 = splat.f64x2 v38  ; v38 = 0x1.5555555555557p-3
                v371 = fma v369, v349, v370
                v367 = splat.f64x2 v40  ; v40 = 0x1.5555555555556p-5
                v366 = splat.f64x2 v41  ; v41 = 0x1.11111111100dcp-7
                v368 = fma v366, v349, v367
                v363 = splat.f64x2 v43  ; v43 = 0x1.6c16c16c162d4p-10
                v362 = splat.f64x2 v44  ; v44 = 0x1.a01a01abe7fe1p-13
                v364 = fma v362, v349, v363
                v360 = splat.f64x2 v46  ; v46 = 0x1.a01a01a6d889cp-16
                v359 = splat.f64x2 v47  ; v47 = 0x1.71de0231960ebp-19
                v361 = fma v359, v349, v360
                v354 = splat.f64x2 v49  ; v49 = 0x1.27e4db646b17ep-22
                v353 = splat.f64x2 v50  ; v50 = 0x1.af4de97ca4194p-26
                v355 = fma v353, v349, v354
                v351 = splat.f64x2 v52  ; v52 = 0x1.1f730349868cep-29
                v352 = fmul v349, v349
                v372 = fma v368, v352, v371
                v365 = fma v361, v352, v364
                v356 = fma v351, v352, v355
                v357 = fmul v352, v352
                v373 = fma v365, v357, v372
                v358 = fmul v357, v357
                v374 = fma v356, v358, v373
                v350 = fmul v349, v349
                v375 = fma v350, v374, v348
                v376 = fadd v346, v375
                v340 = splat.f64x2 v64  ; v64 = 0x1.0000000000000p0
                v377 = fadd v340, v376
                v381 = sshr v380, v66  ; v66 = 1
                v387 = isub v380, v381
                v382 = splat.i64x2 v69  ; v69 = 1023
                v383 = iadd v381, v382
                v384 = ishl v383, v71  ; v71 = 52
                v385 = bitcast.f64x2 little v384
                v388 = splat.i64x2 v74  ; v74 = 1023
                v389 = iadd v387, v388
                v390 = ishl v389, v76  ; v76 = 52
                v391 = bitcast.f64x2 little v390
                v386 = fmul v377, v385
                v392 = fmul v386, v391
                v337 = splat.f64x2 v81  ; v81 = 0x1.6300000000000p9
                v338 = fcmp gt v332, v337
                v339 = splat.f64x2 v83  ; v83 = +Inf
                v393 = bitcast.f64x2 little v338
                v394 = bitselect v393, v339, v392
                v334 = splat.f64x2 v85  ; v85 = -0x1.7500000000000p9
                v335 = fcmp lt v332, v334
                v336 = splat.f64x2 v87  ; v87 = 0.0
                v395 = bitcast.f64x2 little v335
                v396 = bitselect v395, v336, v394
                v333 = fcmp ne v332, v332
                v397 = bitcast.f64x2 little v333
                v398 = bitselect v397, v332, v396
                store notrap v398, v24
                v166 = iconst.i64 1
                v167 = iadd v14, v166  ; v166 = 1
                v168 = icmp ult v167, v9
                brif v168, block2(v167), block3

            block3:
                v170 = iconst.i64 0
                brif.i64 v13, block4(v170), block5  ; v170 = 0

            block4(v169: i64):
                v171 = iadd.i64 v11, v169
                v172 = iconst.i64 3
                v173 = ishl v171, v172  ; v172 = 3
                v174 = iadd.i64 v4, v173
                v175 = load.f64 notrap aligned v174
                v176 = iconst.i64 3
                v177 = ishl v171, v176  ; v176 = 3
                v178 = iadd.i64 v5, v177
                v179 = f64const 0x1.71547652b82fep0
                v180 = f64const 0x1.8000000000000p52
                v181 = fma v175, v179, v180  ; v179 = 0x1.71547652b82fep0, v180 = 0x1.8000000000000p52
                v182 = fsub v181, v180  ; v180 = 0x1.8000000000000p52
                v183 = bitcast.i64 v181
                v184 = iconst.i64 0x4338_0000_0000_0000
                v185 = isub v183, v184  ; v184 = 0x4338_0000_0000_0000
                v186 = f64const -0x1.62e42ff000000p-1
                v187 = fma v182, v186, v175  ; v186 = -0x1.62e42ff000000p-1
                v188 = f64const 0x1.718432a1b0e26p-35
                v189 = fmul v182, v188  ; v188 = 0x1.718432a1b0e26p-35
                v190 = fadd v187, v189
                v191 = f64const 0x1.0000000000000p-1
                v192 = f64const 0x1.5555555555557p-3
                v193 = fma v192, v190, v191  ; v192 = 0x1.5555555555557p-3, v191 = 0x1.0000000000000p-1
                v194 = f64const 0x1.5555555555556p-5
                v195 = f64const 0x1.11111111100dcp-7
                v196 = fma v195, v190, v194  ; v195 = 0x1.11111111100dcp-7, v194 = 0x1.5555555555556p-5
                v197 = f64const 0x1.6c16c16c162d4p-10
                v198 = f64const 0x1.a01a01abe7fe1p-13
                v199 = fma v198, v190, v197  ; v198 = 0x1.a01a01abe7fe1p-13, v197 = 0x1.6c16c16c162d4p-10
                v200 = f64const 0x1.a01a01a6d889cp-16
                v201 = f64const 0x1.71de0231960ebp-19
                v202 = fma v201, v190, v200  ; v201 = 0x1.71de0231960ebp-19, v200 = 0x1.a01a01a6d889cp-16
                v203 = f64const 0x1.27e4db646b17ep-22
                v204 = f64const 0x1.af4de97ca4194p-26
                v205 = fma v204, v190, v203  ; v204 = 0x1.af4de97ca4194p-26, v203 = 0x1.27e4db646b17ep-22
                v206 = f64const 0x1.1f730349868cep-29
                v207 = fmul v190, v190
                v208 = fma v196, v207, v193
                v209 = fma v202, v207, v199
                v210 = fma v206, v207, v205  ; v206 = 0x1.1f730349868cep-29
                v211 = fmul v207, v207
                v212 = fma v209, v211, v208
                v213 = fmul v211, v211
                v214 = fma v210, v213, v212
                v215 = fmul v190, v190
                v216 = fma v215, v214, v189
                v217 = fadd v187, v216
                v218 = f64const 0x1.0000000000000p0
                v219 = fadd v218, v217  ; v218 = 0x1.0000000000000p0
                v220 = iconst.i64 1
                v221 = sshr v185, v220  ; v220 = 1
                v222 = isub v185, v221
                v223 = iconst.i64 1023
                v224 = iadd v221, v223  ; v223 = 1023
                v225 = iconst.i64 52
                v226 = ishl v224, v225  ; v225 = 52
                v227 = bitcast.f64 v226
                v228 = iconst.i64 1023
                v229 = iadd v222, v228  ; v228 = 1023
                v230 = iconst.i64 52
                v231 = ishl v229, v230  ; v230 = 52
                v232 = bitcast.f64 v231
                v233 = fmul v219, v227
                v234 = fmul v233, v232
                v235 = f64const 0x1.6300000000000p9
                v236 = fcmp gt v175, v235  ; v235 = 0x1.6300000000000p9
                v237 = f64const +Inf
                v238 = select v236, v237, v234  ; v237 = +Inf
                v239 = f64const -0x1.7500000000000p9
                v240 = fcmp lt v175, v239  ; v239 = -0x1.7500000000000p9
                v241 = f64const 0.0
                v242 = select v240, v241, v238  ; v241 = 0.0
                v243 = fcmp ne v175, v175
                v244 = select v243, v175, v242
                store notrap aligned v244, v178
                jump block5

            block5:
                v245 = f64const 0.0
                v246 = iconst.i64 2
                v247 = ushr.i64 v331, v246  ; v246 = 2
                v248 = f64const -0.0
                v399 = splat.f64x2 v248  ; v248 = -0.0
                v249 = scalar_to_vector.f64x2 v245  ; v245 = 0.0
                v250 = insertlane v249, v248, 1  ; v248 = -0.0
                v260 = iconst.i64 0
                brif v247, block6(v260, v245, v250, v399), block7(v245, v250, v399)  ; v260 = 0, v245 = 0.0, v245 = 0.0

            block6(v253: i64, v254: f64, v255: f64x2, v256: f64x2):
                v261 = iconst.i64 2
                v262 = ishl v253, v261  ; v261 = 2
                v264 = iconst.i64 3
                v265 = ishl v262, v264  ; v264 = 3
                v266 = iadd.i64 v5, v265
                v400 = load.f64x2 notrap v266
                v401 = fadd v255, v400
                v278 = iconst.i64 2
                v279 = iadd v262, v278  ; v278 = 2
                v280 = iconst.i64 3
                v281 = ishl v279, v280  ; v280 = 3
                v282 = iadd.i64 v5, v281
                v402 = load.f64x2 notrap v282
                v403 = fadd v256, v402
                v297 = iconst.i64 1
                v298 = iadd v253, v297  ; v297 = 1
                v299 = icmp ult v298, v247
                brif v299, block6(v298, v254, v401, v403), block7(v254, v401, v403)

            block7(v257: f64, v258: f64x2, v259: f64x2):
                v300 = stack_addr.i64 ss0
                store notrap aligned v257, v300
                v301 = atomic_load.i64 notrap aligned v300
                v302 = bitcast.f64 v301
                v303 = extractlane v258, 0
                v304 = extractlane v258, 1
                v305 = extractlane v259, 0
                v306 = extractlane v259, 1
                v307 = fadd v303, v304
                v308 = fadd v305, v306
                v309 = fadd v307, v308
                v310 = select v247, v309, v302
                v311 = iconst.i64 2
                v312 = ishl.i64 v247, v311  ; v311 = 2
                v313 = iconst.i64 3
                v314 = band.i64 v331, v313  ; v313 = 3
                v318 = iconst.i64 0
                brif v314, block8(v318, v310), block9(v310)  ; v318 = 0

            block8(v315: i64, v316: f64):
                v319 = iadd.i64 v312, v315
                v320 = iconst.i64 3
                v321 = ishl v319, v320  ; v320 = 3
                v322 = iadd.i64 v5, v321
                v323 = load.f64 notrap aligned v322
                v324 = fadd v316, v323
                v325 = iconst.i64 1
                v326 = iadd v315, v325  ; v325 = 1
                v327 = icmp ult v326, v314
                brif v327, block8(v326, v324), block9(v324)

            block9(v317: f64):
                v328 = stack_addr.i64 ss0
                store notrap aligned v317, v328
                v329 = atomic_load.i64 notrap aligned v328
                v330 = bitcast.f64 v329
                store notrap aligned v330, v6
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
                v7 = f64const 0x1.71547652b82fep0
                v8 = f64const 0x1.8000000000000p52
                v9 = fma v6, v7, v8  ; v7 = 0x1.71547652b82fep0, v8 = 0x1.8000000000000p52
                v10 = fsub v9, v8  ; v8 = 0x1.8000000000000p52
                v11 = bitcast.i64 v9
                v12 = iconst.i64 0x4338_0000_0000_0000
                v13 = isub v11, v12  ; v12 = 0x4338_0000_0000_0000
                v14 = f64const -0x1.62e42ff000000p-1
                v15 = fma v10, v14, v6  ; v14 = -0x1.62e42ff000000p-1
                v16 = f64const 0x1.718432a1b0e26p-35
                v17 = fmul v10, v16  ; v16 = 0x1.718432a1b0e26p-35
                v18 = fadd v15, v17
                v19 = f64const 0x1.0000000000000p-1
                v20 = f64const 0x1.5555555555557p-3
                v21 = fma v20, v18, v19  ; v20 = 0x1.5555555555557p-3, v19 = 0x1.0000000000000p-1
                v22 = f64const 0x1.5555555555556p-5
                v23 = f64const 0x1.11111111100dcp-7
                v24 = fma v23, v18, v22  ; v23 = 0x1.11111111100dcp-7, v22 = 0x1.5555555555556p-5
                v25 = f64const 0x1.6c16c16c162d4p-10
                v26 = f64const 0x1.a01a01abe7fe1p-13
                v27 = fma v26, v18, v25  ; v26 = 0x1.a01a01abe7fe1p-13, v25 = 0x1.6c16c16c162d4p-10
                v28 = f64const 0x1.a01a01a6d889cp-16
                v29 = f64const 0x1.71de0231960ebp-19
                v30 = fma v29, v18, v28  ; v29 = 0x1.71de0231960ebp-19, v28 = 0x1.a01a01a6d889cp-16
                v31 = f64const 0x1.27e4db646b17ep-22
                v32 = f64const 0x1.af4de97ca4194p-26
                v33 = fma v32, v18, v31  ; v32 = 0x1.af4de97ca4194p-26, v31 = 0x1.27e4db646b17ep-22
                v34 = f64const 0x1.1f730349868cep-29
                v35 = fmul v18, v18
                v36 = fma v24, v35, v21
                v37 = fma v30, v35, v27
                v38 = fma v34, v35, v33  ; v34 = 0x1.1f730349868cep-29
                v39 = fmul v35, v35
                v40 = fma v37, v39, v36
                v41 = fmul v39, v39
                v42 = fma v38, v41, v40
                v43 = fmul v18, v18
                v44 = fma v43, v42, v17
                v45 = fadd v15, v44
                v46 = f64const 0x1.0000000000000p0
                v47 = fadd v46, v45  ; v46 = 0x1.0000000000000p0
                v48 = iconst.i64 1
                v49 = sshr v13, v48  ; v48 = 1
                v50 = isub v13, v49
                v51 = iconst.i64 1023
                v52 = iadd v49, v51  ; v51 = 1023
                v53 = iconst.i64 52
                v54 = ishl v52, v53  ; v53 = 52
                v55 = bitcast.f64 v54
                v56 = iconst.i64 1023
                v57 = iadd v50, v56  ; v56 = 1023
                v58 = iconst.i64 52
                v59 = ishl v57, v58  ; v58 = 52
                v60 = bitcast.f64 v59
                v61 = fmul v47, v55
                v62 = fmul v61, v60
                v63 = f64const 0x1.6300000000000p9
                v64 = fcmp gt v6, v63  ; v63 = 0x1.6300000000000p9
                v65 = f64const +Inf
                v66 = select v64, v65, v62  ; v65 = +Inf
                v67 = f64const -0x1.7500000000000p9
                v68 = fcmp lt v6, v67  ; v67 = -0x1.7500000000000p9
                v69 = f64const 0.0
                v70 = select v68, v69, v66  ; v69 = 0.0
                v71 = fcmp ne v6, v6
                v72 = select v71, v6, v70
                store notrap aligned v72, v5
                return
            }
        "#]],
    );
}
