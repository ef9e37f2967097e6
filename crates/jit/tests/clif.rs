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
                sig0 = (f64) -> f64 system_v
                fn0 = colocated u0:1 sig0

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v266 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v8 = iconst.i64 1
                v9 = ushr.i64 v266, v8  ; v8 = 1
                v10 = iconst.i64 -2
                v11 = band.i64 v266, v10  ; v10 = -2
                v12 = iconst.i64 1
                v13 = band.i64 v266, v12  ; v12 = 1
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
                v267 = load.f64x2 notrap v20
                v276 = splat.f64x2 v25  ; v25 = 0x1.71547652b82fep0
                v277 = splat.f64x2 v26  ; v26 = 0x1.8000000000000p52
                v278 = fma v267, v276, v277
                v279 = fsub v278, v277
                v313 = bitcast.i64x2 little v278
                v314 = splat.i64x2 v30  ; v30 = 0x4338_0000_0000_0000
                v315 = isub v313, v314
                v280 = splat.f64x2 v32  ; v32 = -0x1.62e42ff000000p-1
                v281 = fma v279, v280, v267
                v282 = splat.f64x2 v34  ; v34 = 0x1.718432a1b0e26p-35
                v283 = fmul v279, v282
                v284 = fadd v281, v283
                v305 = splat.f64x2 v37  ; v37 = 0x1.0000000000000p-1
                v304 = splat.f64x2 v38  ; v38 = 0x1.5555555555557p-3
                v306 = fma v304, v284, v305
                v302 = splat.f64x2 v40  ; v40 = 0x1.5555555555556p-5
                v301 = splat.f64x2 v41  ; v41 = 0x1.11111111100dcp-7
                v303 = fma v301, v284, v302
                v298 = splat.f64x2 v43  ; v43 = 0x1.6c16c16c162d4p-10
                v297 = splat.f64x2 v44  ; v44 = 0x1.a01a01abe7fe1p-13
                v299 = fma v297, v284, v298
                v295 = splat.f64x2 v46  ; v46 = 0x1.a01a01a6d889cp-16
                v294 = splat.f64x2 v47  ; v47 = 0x1.71de0231960ebp-19
                v296 = fma v294, v284, v295
                v289 = splat.f64x2 v49  ; v49 = 0x1.27e4db646b17ep-22
                v288 = splat.f64x2 v50  ; v50 = 0x1.af4de97ca4194p-26
                v290 = fma v288, v284, v289
                v286 = splat.f64x2 v52  ; v52 = 0x1.1f730349868cep-29
                v287 = fmul v284, v284
                v307 = fma v303, v287, v306
                v300 = fma v296, v287, v299
                v291 = fma v286, v287, v290
                v292 = fmul v287, v287
                v308 = fma v300, v292, v307
                v293 = fmul v292, v292
                v309 = fma v291, v293, v308
                v285 = fmul v284, v284
                v310 = fma v285, v309, v283
                v311 = fadd v281, v310
                v275 = splat.f64x2 v64  ; v64 = 0x1.0000000000000p0
                v312 = fadd v275, v311
                v316 = sshr v315, v66  ; v66 = 1
                v322 = isub v315, v316
                v317 = splat.i64x2 v69  ; v69 = 1023
                v318 = iadd v316, v317
                v319 = ishl v318, v71  ; v71 = 52
                v320 = bitcast.f64x2 little v319
                v323 = splat.i64x2 v74  ; v74 = 1023
                v324 = iadd v322, v323
                v325 = ishl v324, v76  ; v76 = 52
                v326 = bitcast.f64x2 little v325
                v321 = fmul v312, v320
                v327 = fmul v321, v326
                v272 = splat.f64x2 v81  ; v81 = 0x1.6300000000000p9
                v273 = fcmp gt v267, v272
                v274 = splat.f64x2 v83  ; v83 = +Inf
                v328 = bitcast.f64x2 little v273
                v329 = bitselect v328, v274, v327
                v269 = splat.f64x2 v85  ; v85 = -0x1.7500000000000p9
                v270 = fcmp lt v267, v269
                v271 = splat.f64x2 v87  ; v87 = 0.0
                v330 = bitcast.f64x2 little v270
                v331 = bitselect v330, v271, v329
                v268 = fcmp ne v267, v267
                v332 = bitcast.f64x2 little v268
                v333 = bitselect v332, v267, v331
                store notrap v333, v24
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
                v179 = call fn0(v175)
                store notrap aligned v179, v178
                jump block5

            block5:
                v180 = f64const 0.0
                v181 = iconst.i64 2
                v182 = ushr.i64 v266, v181  ; v181 = 2
                v183 = f64const -0.0
                v334 = splat.f64x2 v183  ; v183 = -0.0
                v184 = scalar_to_vector.f64x2 v180  ; v180 = 0.0
                v185 = insertlane v184, v183, 1  ; v183 = -0.0
                v195 = iconst.i64 0
                brif v182, block6(v195, v180, v185, v334), block7(v180, v185, v334)  ; v195 = 0, v180 = 0.0, v180 = 0.0

            block6(v188: i64, v189: f64, v190: f64x2, v191: f64x2):
                v196 = iconst.i64 2
                v197 = ishl v188, v196  ; v196 = 2
                v199 = iconst.i64 3
                v200 = ishl v197, v199  ; v199 = 3
                v201 = iadd.i64 v5, v200
                v335 = load.f64x2 notrap v201
                v336 = fadd v190, v335
                v213 = iconst.i64 2
                v214 = iadd v197, v213  ; v213 = 2
                v215 = iconst.i64 3
                v216 = ishl v214, v215  ; v215 = 3
                v217 = iadd.i64 v5, v216
                v337 = load.f64x2 notrap v217
                v338 = fadd v191, v337
                v232 = iconst.i64 1
                v233 = iadd v188, v232  ; v232 = 1
                v234 = icmp ult v233, v182
                brif v234, block6(v233, v189, v336, v338), block7(v189, v336, v338)

            block7(v192: f64, v193: f64x2, v194: f64x2):
                v235 = stack_addr.i64 ss0
                store notrap aligned v192, v235
                v236 = atomic_load.i64 notrap aligned v235
                v237 = bitcast.f64 v236
                v238 = extractlane v193, 0
                v239 = extractlane v193, 1
                v240 = extractlane v194, 0
                v241 = extractlane v194, 1
                v242 = fadd v238, v239
                v243 = fadd v240, v241
                v244 = fadd v242, v243
                v245 = select v182, v244, v237
                v246 = iconst.i64 2
                v247 = ishl.i64 v182, v246  ; v246 = 2
                v248 = iconst.i64 3
                v249 = band.i64 v266, v248  ; v248 = 3
                v253 = iconst.i64 0
                brif v249, block8(v253, v245), block9(v245)  ; v253 = 0

            block8(v250: i64, v251: f64):
                v254 = iadd.i64 v247, v250
                v255 = iconst.i64 3
                v256 = ishl v254, v255  ; v255 = 3
                v257 = iadd.i64 v5, v256
                v258 = load.f64 notrap aligned v257
                v259 = fadd v251, v258
                v260 = iconst.i64 1
                v261 = iadd v250, v260  ; v260 = 1
                v262 = icmp ult v261, v249
                brif v262, block8(v261, v259), block9(v259)

            block9(v252: f64):
                v263 = stack_addr.i64 ss0
                store notrap aligned v252, v263
                v264 = atomic_load.i64 notrap aligned v263
                v265 = bitcast.f64 v264
                store notrap aligned v265, v6
                return
            }

            ; the function of the kernel `exp`
            function u0:1(f64) -> f64 system_v {
            block0(v0: f64):
                v1 = f64const 0x1.71547652b82fep0
                v2 = f64const 0x1.8000000000000p52
                v3 = fma v0, v1, v2  ; v1 = 0x1.71547652b82fep0, v2 = 0x1.8000000000000p52
                v4 = fsub v3, v2  ; v2 = 0x1.8000000000000p52
                v5 = bitcast.i64 v3
                v6 = iconst.i64 0x4338_0000_0000_0000
                v7 = isub v5, v6  ; v6 = 0x4338_0000_0000_0000
                v8 = f64const -0x1.62e42ff000000p-1
                v9 = fma v4, v8, v0  ; v8 = -0x1.62e42ff000000p-1
                v10 = f64const 0x1.718432a1b0e26p-35
                v11 = fmul v4, v10  ; v10 = 0x1.718432a1b0e26p-35
                v12 = fadd v9, v11
                v13 = f64const 0x1.0000000000000p-1
                v14 = f64const 0x1.5555555555557p-3
                v15 = fma v14, v12, v13  ; v14 = 0x1.5555555555557p-3, v13 = 0x1.0000000000000p-1
                v16 = f64const 0x1.5555555555556p-5
                v17 = f64const 0x1.11111111100dcp-7
                v18 = fma v17, v12, v16  ; v17 = 0x1.11111111100dcp-7, v16 = 0x1.5555555555556p-5
                v19 = f64const 0x1.6c16c16c162d4p-10
                v20 = f64const 0x1.a01a01abe7fe1p-13
                v21 = fma v20, v12, v19  ; v20 = 0x1.a01a01abe7fe1p-13, v19 = 0x1.6c16c16c162d4p-10
                v22 = f64const 0x1.a01a01a6d889cp-16
                v23 = f64const 0x1.71de0231960ebp-19
                v24 = fma v23, v12, v22  ; v23 = 0x1.71de0231960ebp-19, v22 = 0x1.a01a01a6d889cp-16
                v25 = f64const 0x1.27e4db646b17ep-22
                v26 = f64const 0x1.af4de97ca4194p-26
                v27 = fma v26, v12, v25  ; v26 = 0x1.af4de97ca4194p-26, v25 = 0x1.27e4db646b17ep-22
                v28 = f64const 0x1.1f730349868cep-29
                v29 = fmul v12, v12
                v30 = fma v18, v29, v15
                v31 = fma v24, v29, v21
                v32 = fma v28, v29, v27  ; v28 = 0x1.1f730349868cep-29
                v33 = fmul v29, v29
                v34 = fma v31, v33, v30
                v35 = fmul v33, v33
                v36 = fma v32, v35, v34
                v37 = fmul v12, v12
                v38 = fma v37, v36, v11
                v39 = fadd v9, v38
                v40 = f64const 0x1.0000000000000p0
                v41 = fadd v40, v39  ; v40 = 0x1.0000000000000p0
                v42 = iconst.i64 1
                v43 = sshr v7, v42  ; v42 = 1
                v44 = isub v7, v43
                v45 = iconst.i64 1023
                v46 = iadd v43, v45  ; v45 = 1023
                v47 = iconst.i64 52
                v48 = ishl v46, v47  ; v47 = 52
                v49 = bitcast.f64 v48
                v50 = iconst.i64 1023
                v51 = iadd v44, v50  ; v50 = 1023
                v52 = iconst.i64 52
                v53 = ishl v51, v52  ; v52 = 52
                v54 = bitcast.f64 v53
                v55 = fmul v41, v49
                v56 = fmul v55, v54
                v57 = f64const 0x1.6300000000000p9
                v58 = fcmp gt v0, v57  ; v57 = 0x1.6300000000000p9
                v59 = f64const +Inf
                v60 = select v58, v59, v56  ; v59 = +Inf
                v61 = f64const -0x1.7500000000000p9
                v62 = fcmp lt v0, v61  ; v61 = -0x1.7500000000000p9
                v63 = f64const 0.0
                v64 = select v62, v63, v60  ; v63 = 0.0
                v65 = fcmp ne v0, v0
                v66 = select v65, v0, v64
                return v66
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
