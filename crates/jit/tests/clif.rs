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
                v325 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v8 = iconst.i64 1
                v9 = ushr.i64 v325, v8  ; v8 = 1
                v10 = iconst.i64 -2
                v11 = band.i64 v325, v10  ; v10 = -2
                v12 = iconst.i64 1
                v13 = band.i64 v325, v12  ; v12 = 1
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
                v326 = load.f64x2 notrap v20
                v334 = splat.f64x2 v25  ; v25 = 0x1.71547652b82fep0
                v335 = splat.f64x2 v26  ; v26 = 0x1.8000000000000p52
                v336 = fma v326, v334, v335
                v337 = fsub v336, v335
                v371 = bitcast.i64x2 little v336
                v372 = splat.i64x2 v30  ; v30 = 0x4338_0000_0000_0000
                v373 = isub v371, v372
                v338 = splat.f64x2 v32  ; v32 = -0x1.62e42ff000000p-1
                v339 = fma v337, v338, v326
                v340 = splat.f64x2 v34  ; v34 = 0x1.718432a1b0e26p-35
                v341 = fmul v337, v340
                v342 = fadd v339, v341
                v363 = splat.f64x2 v37  ; v37 = 0x1.0000000000000p-1
                v362 = splat.f64x2 v38  ; v38 = 0x1.5555555555557p-3
                v364 = fma v362, v342, v363
                v360 = splat.f64x2 v40  ; v40 = 0x1.5555555555556p-5
                v359 = splat.f64x2 v41  ; v41 = 0x1.11111111100dcp-7
                v361 = fma v359, v342, v360
                v356 = splat.f64x2 v43  ; v43 = 0x1.6c16c16c162d4p-10
                v355 = splat.f64x2 v44  ; v44 = 0x1.a01a01abe7fe1p-13
                v357 = fma v355, v342, v356
                v353 = splat.f64x2 v46  ; v46 = 0x1.a01a01a6d889cp-16
                v352 = splat.f64x2 v47  ; v47 = 0x1.71de0231960ebp-19
                v354 = fma v352, v342, v353
                v347 = splat.f64x2 v49  ; v49 = 0x1.27e4db646b17ep-22
                v346 = splat.f64x2 v50  ; v50 = 0x1.af4de97ca4194p-26
                v348 = fma v346, v342, v347
                v344 = splat.f64x2 v52  ; v52 = 0x1.1f730349868cep-29
                v345 = fmul v342, v342
                v365 = fma v361, v345, v364
                v358 = fma v354, v345, v357
                v349 = fma v344, v345, v348
                v350 = fmul v345, v345
                v366 = fma v358, v350, v365
                v351 = fmul v350, v350
                v367 = fma v349, v351, v366
                v343 = fmul v342, v342
                v368 = fma v343, v367, v341
                v369 = fadd v339, v368
                v333 = splat.f64x2 v64  ; v64 = 0x1.0000000000000p0
                v370 = fadd v333, v369
                v374 = sshr v373, v66  ; v66 = 1
                v380 = isub v373, v374
                v375 = splat.i64x2 v69  ; v69 = 1023
                v376 = iadd v374, v375
                v377 = ishl v376, v71  ; v71 = 52
                v378 = bitcast.f64x2 little v377
                v381 = splat.i64x2 v74  ; v74 = 1023
                v382 = iadd v380, v381
                v383 = ishl v382, v76  ; v76 = 52
                v384 = bitcast.f64x2 little v383
                v379 = fmul v370, v378
                v385 = fmul v379, v384
                v330 = splat.f64x2 v81  ; v81 = 0x1.6300000000000p9
                v331 = fcmp gt v326, v330
                v332 = splat.f64x2 v83  ; v83 = +Inf
                v386 = bitcast.f64x2 little v331
                v387 = bitselect v386, v332, v385
                v327 = splat.f64x2 v85  ; v85 = -0x1.7500000000000p9
                v328 = fcmp lt v326, v327
                v329 = splat.f64x2 v87  ; v87 = 0.0
                v388 = bitcast.f64x2 little v328
                v389 = bitselect v388, v329, v387
                store notrap v389, v24
                v162 = iconst.i64 1
                v163 = iadd v14, v162  ; v162 = 1
                v164 = icmp ult v163, v9
                brif v164, block2(v163), block3

            block3:
                v166 = iconst.i64 0
                brif.i64 v13, block4(v166), block5  ; v166 = 0

            block4(v165: i64):
                v167 = iadd.i64 v11, v165
                v168 = iconst.i64 3
                v169 = ishl v167, v168  ; v168 = 3
                v170 = iadd.i64 v4, v169
                v171 = load.f64 notrap aligned v170
                v172 = iconst.i64 3
                v173 = ishl v167, v172  ; v172 = 3
                v174 = iadd.i64 v5, v173
                v175 = f64const 0x1.71547652b82fep0
                v176 = f64const 0x1.8000000000000p52
                v177 = fma v171, v175, v176  ; v175 = 0x1.71547652b82fep0, v176 = 0x1.8000000000000p52
                v178 = fsub v177, v176  ; v176 = 0x1.8000000000000p52
                v179 = bitcast.i64 v177
                v180 = iconst.i64 0x4338_0000_0000_0000
                v181 = isub v179, v180  ; v180 = 0x4338_0000_0000_0000
                v182 = f64const -0x1.62e42ff000000p-1
                v183 = fma v178, v182, v171  ; v182 = -0x1.62e42ff000000p-1
                v184 = f64const 0x1.718432a1b0e26p-35
                v185 = fmul v178, v184  ; v184 = 0x1.718432a1b0e26p-35
                v186 = fadd v183, v185
                v187 = f64const 0x1.0000000000000p-1
                v188 = f64const 0x1.5555555555557p-3
                v189 = fma v188, v186, v187  ; v188 = 0x1.5555555555557p-3, v187 = 0x1.0000000000000p-1
                v190 = f64const 0x1.5555555555556p-5
                v191 = f64const 0x1.11111111100dcp-7
                v192 = fma v191, v186, v190  ; v191 = 0x1.11111111100dcp-7, v190 = 0x1.5555555555556p-5
                v193 = f64const 0x1.6c16c16c162d4p-10
                v194 = f64const 0x1.a01a01abe7fe1p-13
                v195 = fma v194, v186, v193  ; v194 = 0x1.a01a01abe7fe1p-13, v193 = 0x1.6c16c16c162d4p-10
                v196 = f64const 0x1.a01a01a6d889cp-16
                v197 = f64const 0x1.71de0231960ebp-19
                v198 = fma v197, v186, v196  ; v197 = 0x1.71de0231960ebp-19, v196 = 0x1.a01a01a6d889cp-16
                v199 = f64const 0x1.27e4db646b17ep-22
                v200 = f64const 0x1.af4de97ca4194p-26
                v201 = fma v200, v186, v199  ; v200 = 0x1.af4de97ca4194p-26, v199 = 0x1.27e4db646b17ep-22
                v202 = f64const 0x1.1f730349868cep-29
                v203 = fmul v186, v186
                v204 = fma v192, v203, v189
                v205 = fma v198, v203, v195
                v206 = fma v202, v203, v201  ; v202 = 0x1.1f730349868cep-29
                v207 = fmul v203, v203
                v208 = fma v205, v207, v204
                v209 = fmul v207, v207
                v210 = fma v206, v209, v208
                v211 = fmul v186, v186
                v212 = fma v211, v210, v185
                v213 = fadd v183, v212
                v214 = f64const 0x1.0000000000000p0
                v215 = fadd v214, v213  ; v214 = 0x1.0000000000000p0
                v216 = iconst.i64 1
                v217 = sshr v181, v216  ; v216 = 1
                v218 = isub v181, v217
                v219 = iconst.i64 1023
                v220 = iadd v217, v219  ; v219 = 1023
                v221 = iconst.i64 52
                v222 = ishl v220, v221  ; v221 = 52
                v223 = bitcast.f64 v222
                v224 = iconst.i64 1023
                v225 = iadd v218, v224  ; v224 = 1023
                v226 = iconst.i64 52
                v227 = ishl v225, v226  ; v226 = 52
                v228 = bitcast.f64 v227
                v229 = fmul v215, v223
                v230 = fmul v229, v228
                v231 = f64const 0x1.6300000000000p9
                v232 = fcmp gt v171, v231  ; v231 = 0x1.6300000000000p9
                v233 = f64const +Inf
                v234 = select v232, v233, v230  ; v233 = +Inf
                v235 = f64const -0x1.7500000000000p9
                v236 = fcmp lt v171, v235  ; v235 = -0x1.7500000000000p9
                v237 = f64const 0.0
                v238 = select v236, v237, v234  ; v237 = 0.0
                store notrap aligned v238, v174
                jump block5

            block5:
                v239 = f64const 0.0
                v240 = iconst.i64 2
                v241 = ushr.i64 v325, v240  ; v240 = 2
                v242 = f64const -0.0
                v390 = splat.f64x2 v242  ; v242 = -0.0
                v243 = scalar_to_vector.f64x2 v239  ; v239 = 0.0
                v244 = insertlane v243, v242, 1  ; v242 = -0.0
                v254 = iconst.i64 0
                brif v241, block6(v254, v239, v244, v390), block7(v239, v244, v390)  ; v254 = 0, v239 = 0.0, v239 = 0.0

            block6(v247: i64, v248: f64, v249: f64x2, v250: f64x2):
                v255 = iconst.i64 2
                v256 = ishl v247, v255  ; v255 = 2
                v258 = iconst.i64 3
                v259 = ishl v256, v258  ; v258 = 3
                v260 = iadd.i64 v5, v259
                v391 = load.f64x2 notrap v260
                v392 = fadd v249, v391
                v272 = iconst.i64 2
                v273 = iadd v256, v272  ; v272 = 2
                v274 = iconst.i64 3
                v275 = ishl v273, v274  ; v274 = 3
                v276 = iadd.i64 v5, v275
                v393 = load.f64x2 notrap v276
                v394 = fadd v250, v393
                v291 = iconst.i64 1
                v292 = iadd v247, v291  ; v291 = 1
                v293 = icmp ult v292, v241
                brif v293, block6(v292, v248, v392, v394), block7(v248, v392, v394)

            block7(v251: f64, v252: f64x2, v253: f64x2):
                v294 = stack_addr.i64 ss0
                store notrap aligned v251, v294
                v295 = atomic_load.i64 notrap aligned v294
                v296 = bitcast.f64 v295
                v297 = extractlane v252, 0
                v298 = extractlane v252, 1
                v299 = extractlane v253, 0
                v300 = extractlane v253, 1
                v301 = fadd v297, v298
                v302 = fadd v299, v300
                v303 = fadd v301, v302
                v304 = select v241, v303, v296
                v305 = iconst.i64 2
                v306 = ishl.i64 v241, v305  ; v305 = 2
                v307 = iconst.i64 3
                v308 = band.i64 v325, v307  ; v307 = 3
                v312 = iconst.i64 0
                brif v308, block8(v312, v304), block9(v304)  ; v312 = 0

            block8(v309: i64, v310: f64):
                v313 = iadd.i64 v306, v309
                v314 = iconst.i64 3
                v315 = ishl v313, v314  ; v314 = 3
                v316 = iadd.i64 v5, v315
                v317 = load.f64 notrap aligned v316
                v318 = fadd v310, v317
                v319 = iconst.i64 1
                v320 = iadd v309, v319  ; v319 = 1
                v321 = icmp ult v320, v308
                brif v321, block8(v320, v318), block9(v318)

            block9(v311: f64):
                v322 = stack_addr.i64 ss0
                store notrap aligned v311, v322
                v323 = atomic_load.i64 notrap aligned v322
                v324 = bitcast.f64 v323
                store notrap aligned v324, v6
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
                store notrap aligned v70, v5
                return
            }
        "#]],
    );
}
