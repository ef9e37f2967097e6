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
                gv0 = symbol colocated userextname0
                sig0 = (f64) -> f64 system_v
                fn0 = colocated u0:1 sig0

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v255 = load.i64 notrap aligned readonly can_move v1
                v256 = symbol_value.i64 gv0
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v8 = iconst.i64 1
                v9 = ushr.i64 v255, v8  ; v8 = 1
                v10 = iconst.i64 -2
                v11 = band.i64 v255, v10  ; v10 = -2
                v12 = iconst.i64 1
                v13 = band.i64 v255, v12  ; v12 = 1
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
                v26 = f64const 0x1.71547652b82fep7
                v27 = f64const 0x1.8000000000000p52
                v31 = iconst.i64 0x4338_0000_0000_0000
                v33 = f64const -0x1.62e42ff000000p-8
                v35 = f64const 0x1.718432a1b0e26p-42
                v37 = iconst.i64 127
                v39 = iconst.i64 4
                v43 = iconst.i64 127
                v45 = iconst.i64 4
                v50 = f64const 0x1.0000000000000p-1
                v51 = f64const 0x1.5555555555555p-3
                v52 = f64const 0x1.5555555555555p-5
                v53 = f64const 0x1.1111111111111p-7
                v60 = iconst.i64 7
                v62 = iconst.i64 8
                v66 = iconst.i64 52
                v70 = iconst.i64 1023
                v72 = iconst.i64 52
                v76 = f64const 0x1.6300000000000p9
                v78 = f64const +Inf
                v80 = f64const -0x1.7500000000000p9
                v82 = f64const 0.0
                v257 = load.f64x2 notrap v20
                v266 = splat.f64x2 v26  ; v26 = 0x1.71547652b82fep7
                v267 = splat.f64x2 v27  ; v27 = 0x1.8000000000000p52
                v268 = fma v257, v266, v267
                v282 = fsub v268, v267
                v269 = bitcast.i64x2 little v268
                v270 = splat.i64x2 v31  ; v31 = 0x4338_0000_0000_0000
                v271 = isub v269, v270
                v284 = splat.f64x2 v33  ; v33 = -0x1.62e42ff000000p-8
                v285 = fma v282, v284, v257
                v283 = splat.f64x2 v35  ; v35 = 0x1.718432a1b0e26p-42
                v286 = fma v282, v283, v285
                v272 = splat.i64x2 v37  ; v37 = 127
                v273 = band v271, v272
                v274 = ishl v273, v39  ; v39 = 4
                v265 = splat.i64x2 v256
                v275 = iadd v265, v274
                v276 = extractlane v275, 0
                v277 = extractlane v275, 1
                v278 = load.f64 notrap aligned readonly can_move v276
                v279 = load.f64 notrap aligned readonly can_move v277
                v280 = splat.f64x2 v278
                v281 = insertlane v280, v279, 1
                v297 = splat.i64x2 v43  ; v43 = 127
                v298 = band v271, v297
                v299 = ishl v298, v45  ; v45 = 4
                v296 = splat.i64x2 v256
                v300 = iadd v296, v299
                v301 = extractlane v300, 0
                v302 = extractlane v300, 1
                v303 = load.f64 notrap aligned readonly can_move v301+8
                v304 = load.f64 notrap aligned readonly can_move v302+8
                v305 = splat.f64x2 v303
                v306 = insertlane v305, v304, 1
                v290 = fmul v286, v286
                v292 = splat.f64x2 v50  ; v50 = 0x1.0000000000000p-1
                v291 = splat.f64x2 v51  ; v51 = 0x1.5555555555555p-3
                v288 = splat.f64x2 v52  ; v52 = 0x1.5555555555555p-5
                v287 = splat.f64x2 v53  ; v53 = 0x1.1111111111111p-7
                v293 = fma v286, v291, v292
                v289 = fma v286, v287, v288
                v294 = fma v289, v290, v293
                v295 = fma v294, v290, v286
                v307 = fma v281, v295, v306
                v308 = fadd v281, v307
                v314 = sshr v271, v60  ; v60 = 7
                v310 = sshr v271, v62  ; v62 = 8
                v315 = isub v314, v310
                v309 = bitcast.i64x2 little v308
                v311 = ishl v310, v66  ; v66 = 52
                v312 = iadd v309, v311
                v313 = bitcast.f64x2 little v312
                v316 = splat.i64x2 v70  ; v70 = 1023
                v317 = iadd v315, v316
                v318 = ishl v317, v72  ; v72 = 52
                v319 = bitcast.f64x2 little v318
                v320 = fmul v313, v319
                v262 = splat.f64x2 v76  ; v76 = 0x1.6300000000000p9
                v263 = fcmp gt v257, v262
                v264 = splat.f64x2 v78  ; v78 = +Inf
                v321 = bitcast.f64x2 little v263
                v322 = bitselect v321, v264, v320
                v259 = splat.f64x2 v80  ; v80 = -0x1.7500000000000p9
                v260 = fcmp lt v257, v259
                v261 = splat.f64x2 v82  ; v82 = 0.0
                v323 = bitcast.f64x2 little v260
                v324 = bitselect v323, v261, v322
                v258 = fcmp ne v257, v257
                v325 = bitcast.f64x2 little v258
                v326 = bitselect v325, v257, v324
                store notrap v326, v24
                v155 = iconst.i64 1
                v156 = iadd v14, v155  ; v155 = 1
                v157 = icmp ult v156, v9
                brif v157, block2(v156), block3

            block3:
                v159 = iconst.i64 0
                brif.i64 v13, block4(v159), block5  ; v159 = 0

            block4(v158: i64):
                v160 = iadd.i64 v11, v158
                v161 = iconst.i64 3
                v162 = ishl v160, v161  ; v161 = 3
                v163 = iadd.i64 v4, v162
                v164 = load.f64 notrap aligned v163
                v165 = iconst.i64 3
                v166 = ishl v160, v165  ; v165 = 3
                v167 = iadd.i64 v5, v166
                v168 = call fn0(v164)
                store notrap aligned v168, v167
                jump block5

            block5:
                v169 = f64const 0.0
                v170 = iconst.i64 2
                v171 = ushr.i64 v255, v170  ; v170 = 2
                v172 = f64const -0.0
                v327 = splat.f64x2 v172  ; v172 = -0.0
                v173 = scalar_to_vector.f64x2 v169  ; v169 = 0.0
                v174 = insertlane v173, v172, 1  ; v172 = -0.0
                v184 = iconst.i64 0
                brif v171, block6(v184, v169, v174, v327), block7(v169, v174, v327)  ; v184 = 0, v169 = 0.0, v169 = 0.0

            block6(v177: i64, v178: f64, v179: f64x2, v180: f64x2):
                v185 = iconst.i64 2
                v186 = ishl v177, v185  ; v185 = 2
                v188 = iconst.i64 3
                v189 = ishl v186, v188  ; v188 = 3
                v190 = iadd.i64 v5, v189
                v328 = load.f64x2 notrap v190
                v329 = fadd v179, v328
                v202 = iconst.i64 2
                v203 = iadd v186, v202  ; v202 = 2
                v204 = iconst.i64 3
                v205 = ishl v203, v204  ; v204 = 3
                v206 = iadd.i64 v5, v205
                v330 = load.f64x2 notrap v206
                v331 = fadd v180, v330
                v221 = iconst.i64 1
                v222 = iadd v177, v221  ; v221 = 1
                v223 = icmp ult v222, v171
                brif v223, block6(v222, v178, v329, v331), block7(v178, v329, v331)

            block7(v181: f64, v182: f64x2, v183: f64x2):
                v224 = stack_addr.i64 ss0
                store notrap aligned v181, v224
                v225 = atomic_load.i64 notrap aligned v224
                v226 = bitcast.f64 v225
                v227 = extractlane v182, 0
                v228 = extractlane v182, 1
                v229 = extractlane v183, 0
                v230 = extractlane v183, 1
                v231 = fadd v227, v228
                v232 = fadd v229, v230
                v233 = fadd v231, v232
                v234 = select v171, v233, v226
                v235 = iconst.i64 2
                v236 = ishl.i64 v171, v235  ; v235 = 2
                v237 = iconst.i64 3
                v238 = band.i64 v255, v237  ; v237 = 3
                v242 = iconst.i64 0
                brif v238, block8(v242, v234), block9(v234)  ; v242 = 0

            block8(v239: i64, v240: f64):
                v243 = iadd.i64 v236, v239
                v244 = iconst.i64 3
                v245 = ishl v243, v244  ; v244 = 3
                v246 = iadd.i64 v5, v245
                v247 = load.f64 notrap aligned v246
                v248 = fadd v240, v247
                v249 = iconst.i64 1
                v250 = iadd v239, v249  ; v249 = 1
                v251 = icmp ult v250, v238
                brif v251, block8(v250, v248), block9(v248)

            block9(v241: f64):
                v252 = stack_addr.i64 ss0
                store notrap aligned v241, v252
                v253 = atomic_load.i64 notrap aligned v252
                v254 = bitcast.f64 v253
                store notrap aligned v254, v6
                return
            }

            ; the function of the kernel `exp`
            function u0:1(f64) -> f64 system_v {
                gv0 = symbol colocated userextname0

            block0(v0: f64):
                v1 = symbol_value.i64 gv0
                v2 = f64const 0x1.71547652b82fep7
                v3 = f64const 0x1.8000000000000p52
                v4 = fma v0, v2, v3  ; v2 = 0x1.71547652b82fep7, v3 = 0x1.8000000000000p52
                v5 = fsub v4, v3  ; v3 = 0x1.8000000000000p52
                v6 = bitcast.i64 v4
                v7 = iconst.i64 0x4338_0000_0000_0000
                v8 = isub v6, v7  ; v7 = 0x4338_0000_0000_0000
                v9 = f64const -0x1.62e42ff000000p-8
                v10 = fma v5, v9, v0  ; v9 = -0x1.62e42ff000000p-8
                v11 = f64const 0x1.718432a1b0e26p-42
                v12 = fma v5, v11, v10  ; v11 = 0x1.718432a1b0e26p-42
                v13 = iconst.i64 127
                v14 = band v8, v13  ; v13 = 127
                v15 = iconst.i64 4
                v16 = ishl v14, v15  ; v15 = 4
                v17 = iadd v1, v16
                v18 = load.f64 notrap aligned readonly can_move v17
                v19 = iconst.i64 127
                v20 = band v8, v19  ; v19 = 127
                v21 = iconst.i64 4
                v22 = ishl v20, v21  ; v21 = 4
                v23 = iadd v1, v22
                v24 = load.f64 notrap aligned readonly can_move v23+8
                v25 = fmul v12, v12
                v26 = f64const 0x1.0000000000000p-1
                v27 = f64const 0x1.5555555555555p-3
                v28 = f64const 0x1.5555555555555p-5
                v29 = f64const 0x1.1111111111111p-7
                v30 = fma v12, v27, v26  ; v27 = 0x1.5555555555555p-3, v26 = 0x1.0000000000000p-1
                v31 = fma v12, v29, v28  ; v29 = 0x1.1111111111111p-7, v28 = 0x1.5555555555555p-5
                v32 = fma v31, v25, v30
                v33 = fma v32, v25, v12
                v34 = fma v18, v33, v24
                v35 = fadd v18, v34
                v36 = iconst.i64 7
                v37 = sshr v8, v36  ; v36 = 7
                v38 = iconst.i64 8
                v39 = sshr v8, v38  ; v38 = 8
                v40 = isub v37, v39
                v41 = bitcast.i64 v35
                v42 = iconst.i64 52
                v43 = ishl v39, v42  ; v42 = 52
                v44 = iadd v41, v43
                v45 = bitcast.f64 v44
                v46 = iconst.i64 1023
                v47 = iadd v40, v46  ; v46 = 1023
                v48 = iconst.i64 52
                v49 = ishl v47, v48  ; v48 = 52
                v50 = bitcast.f64 v49
                v51 = fmul v45, v50
                v52 = f64const 0x1.6300000000000p9
                v53 = fcmp gt v0, v52  ; v52 = 0x1.6300000000000p9
                v54 = f64const +Inf
                v55 = select v53, v54, v51  ; v54 = +Inf
                v56 = f64const -0x1.7500000000000p9
                v57 = fcmp lt v0, v56  ; v56 = -0x1.7500000000000p9
                v58 = f64const 0.0
                v59 = select v57, v58, v55  ; v58 = 0.0
                v60 = fcmp ne v0, v0
                v61 = select v60, v0, v59
                return v61
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
                gv0 = symbol colocated userextname0

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v68 = symbol_value.i64 gv0
                v7 -> v68
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.f64 notrap aligned v4
                v8 = f64const 0x1.71547652b82fep7
                v9 = f64const 0x1.8000000000000p52
                v10 = fma v6, v8, v9  ; v8 = 0x1.71547652b82fep7, v9 = 0x1.8000000000000p52
                v11 = fsub v10, v9  ; v9 = 0x1.8000000000000p52
                v12 = bitcast.i64 v10
                v13 = iconst.i64 0x4338_0000_0000_0000
                v14 = isub v12, v13  ; v13 = 0x4338_0000_0000_0000
                v15 = f64const -0x1.62e42ff000000p-8
                v16 = fma v11, v15, v6  ; v15 = -0x1.62e42ff000000p-8
                v17 = f64const 0x1.718432a1b0e26p-42
                v18 = fma v11, v17, v16  ; v17 = 0x1.718432a1b0e26p-42
                v19 = iconst.i64 127
                v20 = band v14, v19  ; v19 = 127
                v21 = iconst.i64 4
                v22 = ishl v20, v21  ; v21 = 4
                v23 = iadd.i64 v7, v22
                v24 = load.f64 notrap aligned readonly can_move v23
                v25 = iconst.i64 127
                v26 = band v14, v25  ; v25 = 127
                v27 = iconst.i64 4
                v28 = ishl v26, v27  ; v27 = 4
                v29 = iadd.i64 v7, v28
                v30 = load.f64 notrap aligned readonly can_move v29+8
                v31 = fmul v18, v18
                v32 = f64const 0x1.0000000000000p-1
                v33 = f64const 0x1.5555555555555p-3
                v34 = f64const 0x1.5555555555555p-5
                v35 = f64const 0x1.1111111111111p-7
                v36 = fma v18, v33, v32  ; v33 = 0x1.5555555555555p-3, v32 = 0x1.0000000000000p-1
                v37 = fma v18, v35, v34  ; v35 = 0x1.1111111111111p-7, v34 = 0x1.5555555555555p-5
                v38 = fma v37, v31, v36
                v39 = fma v38, v31, v18
                v40 = fma v24, v39, v30
                v41 = fadd v24, v40
                v42 = iconst.i64 7
                v43 = sshr v14, v42  ; v42 = 7
                v44 = iconst.i64 8
                v45 = sshr v14, v44  ; v44 = 8
                v46 = isub v43, v45
                v47 = bitcast.i64 v41
                v48 = iconst.i64 52
                v49 = ishl v45, v48  ; v48 = 52
                v50 = iadd v47, v49
                v51 = bitcast.f64 v50
                v52 = iconst.i64 1023
                v53 = iadd v46, v52  ; v52 = 1023
                v54 = iconst.i64 52
                v55 = ishl v53, v54  ; v54 = 52
                v56 = bitcast.f64 v55
                v57 = fmul v51, v56
                v58 = f64const 0x1.6300000000000p9
                v59 = fcmp gt v6, v58  ; v58 = 0x1.6300000000000p9
                v60 = f64const +Inf
                v61 = select v59, v60, v57  ; v60 = +Inf
                v62 = f64const -0x1.7500000000000p9
                v63 = fcmp lt v6, v62  ; v62 = -0x1.7500000000000p9
                v64 = f64const 0.0
                v65 = select v63, v64, v61  ; v64 = 0.0
                v66 = fcmp ne v6, v6
                v67 = select v66, v6, v65
                store notrap aligned v67, v5
                return
            }
        "#]],
    );
}
