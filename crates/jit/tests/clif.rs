//! The generated Cranelift IR, as snapshots (`UPDATE_EXPECT=1 cargo test` to refresh).

mod common;

use expect_test::{expect, Expect};

fn clif(src: &str, expect: Expect) {
    let (prog, func) = unfad_test_support::load(src);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    expect.assert_eq(&text);
}

/// [`clif`] for a function with an inline math kernel, whose `mul_add`s are `fma`
/// instructions on a host with FMA (the snapshot's) and `fmul` then `fadd` elsewhere.
fn clif_with_kernel(src: &str, expect: Expect) {
    let (prog, func) = unfad_test_support::load(src);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
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
                v202 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v8 = f64const 0.0
                v9 = iconst.i64 3
                v10 = ushr.i64 v202, v9  ; v9 = 3
                v11 = f64const -0.0
                v203 = splat.f64x2 v11  ; v11 = -0.0
                v12 = scalar_to_vector.f64x2 v8  ; v8 = 0.0
                v13 = insertlane v12, v11, 1  ; v11 = -0.0
                v31 = iconst.i64 0
                brif v10, block2(v31, v8, v13, v203, v203, v203), block3(v8, v13, v203, v203, v203)  ; v31 = 0, v8 = 0.0, v8 = 0.0

            block2(v20: i64, v21: f64, v22: f64x2, v23: f64x2, v24: f64x2, v25: f64x2):
                v32 = iconst.i64 3
                v33 = ishl v20, v32  ; v32 = 3
                v35 = iconst.i64 3
                v36 = ishl v33, v35  ; v35 = 3
                v37 = iadd.i64 v4, v36
                v39 = iconst.i64 3
                v40 = ishl v33, v39  ; v39 = 3
                v41 = iadd.i64 v5, v40
                v204 = load.f64x2 notrap v37
                v205 = load.f64x2 notrap v41
                v206 = fmul v204, v205
                v207 = fadd v22, v206
                v59 = iconst.i64 2
                v60 = iadd v33, v59  ; v59 = 2
                v61 = iconst.i64 3
                v62 = ishl v60, v61  ; v61 = 3
                v63 = iadd.i64 v4, v62
                v65 = iconst.i64 3
                v66 = ishl v60, v65  ; v65 = 3
                v67 = iadd.i64 v5, v66
                v208 = load.f64x2 notrap v63
                v209 = load.f64x2 notrap v67
                v210 = fmul v208, v209
                v211 = fadd v23, v210
                v85 = iconst.i64 4
                v86 = iadd v33, v85  ; v85 = 4
                v87 = iconst.i64 3
                v88 = ishl v86, v87  ; v87 = 3
                v89 = iadd.i64 v4, v88
                v91 = iconst.i64 3
                v92 = ishl v86, v91  ; v91 = 3
                v93 = iadd.i64 v5, v92
                v212 = load.f64x2 notrap v89
                v213 = load.f64x2 notrap v93
                v214 = fmul v212, v213
                v215 = fadd v24, v214
                v111 = iconst.i64 6
                v112 = iadd v33, v111  ; v111 = 6
                v113 = iconst.i64 3
                v114 = ishl v112, v113  ; v113 = 3
                v115 = iadd.i64 v4, v114
                v117 = iconst.i64 3
                v118 = ishl v112, v117  ; v117 = 3
                v119 = iadd.i64 v5, v118
                v216 = load.f64x2 notrap v115
                v217 = load.f64x2 notrap v119
                v218 = fmul v216, v217
                v219 = fadd v25, v218
                v144 = iconst.i64 1
                v145 = iadd v20, v144  ; v144 = 1
                v146 = icmp ult v145, v10
                brif v146, block2(v145, v21, v207, v211, v215, v219), block3(v21, v207, v211, v215, v219)

            block3(v26: f64, v27: f64x2, v28: f64x2, v29: f64x2, v30: f64x2):
                v147 = stack_addr.i64 ss0
                store notrap aligned v26, v147
                v148 = atomic_load.i64 notrap aligned v147
                v220 = fadd v27, v29
                v221 = fadd v28, v30
                v222 = fadd v220, v221
                v174 = extractlane v222, 0
                v175 = extractlane v222, 1
                v176 = fadd v174, v175
                v177 = iconst.i64 3
                v178 = ishl.i64 v10, v177  ; v177 = 3
                v179 = iconst.i64 7
                v180 = band.i64 v202, v179  ; v179 = 7
                v184 = iconst.i64 0
                brif v180, block4(v184, v176), block5(v176)  ; v184 = 0

            block4(v181: i64, v182: f64):
                v185 = iadd.i64 v178, v181
                v186 = iconst.i64 3
                v187 = ishl v185, v186  ; v186 = 3
                v188 = iadd.i64 v4, v187
                v189 = load.f64 notrap aligned v188
                v190 = iconst.i64 3
                v191 = ishl v185, v190  ; v190 = 3
                v192 = iadd.i64 v5, v191
                v193 = load.f64 notrap aligned v192
                v194 = fmul v189, v193
                v195 = fadd v182, v194
                v196 = iconst.i64 1
                v197 = iadd v181, v196  ; v196 = 1
                v198 = icmp ult v197, v180
                brif v198, block4(v197, v195), block5(v195)

            block5(v183: f64):
                v199 = stack_addr.i64 ss0
                store notrap aligned v183, v199
                v200 = atomic_load.i64 notrap aligned v199
                v201 = bitcast.f64 v200
                store notrap aligned v201, v6
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
                v101 = load.i64 notrap aligned readonly can_move v1
                v102 = iconst.i64 -1
                v103 = iadd v101, v102  ; v102 = -1
                v104 = iconst.i64 0
                v105 = smax v103, v104  ; v104 = 0
                v106 = iconst.i64 1
                v107 = smax v101, v106  ; v106 = 1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v7 = iconst.i64 1
                v8 = umin.i64 v101, v7  ; v7 = 1
                v10 = iconst.i64 0
                brif v8, block2(v10), block3  ; v10 = 0

            block2(v9: i64):
                v12 = iconst.i64 8
                v13 = iadd.i64 v4, v12  ; v12 = 8
                v14 = iconst.i64 3
                v15 = ishl.i64 v105, v14  ; v14 = 3
                v16 = iadd.i64 v5, v15
                v17 = f64const 0x1.0000000000000p0
                store notrap aligned v17, v16  ; v17 = 0x1.0000000000000p0
                v21 = iconst.i64 -1
                v22 = iadd.i64 v105, v21  ; v21 = -1
                brif.i64 v105, block4(v22, v17), block5(v17)  ; v17 = 0x1.0000000000000p0, v17 = 0x1.0000000000000p0

            block4(v18: i64, v19: f64):
                v23 = iconst.i64 3
                v24 = ishl v18, v23  ; v23 = 3
                v25 = iadd.i64 v13, v24
                v26 = load.f64 notrap aligned v25
                v27 = iconst.i64 3
                v28 = ishl v18, v27  ; v27 = 3
                v29 = iadd.i64 v5, v28
                v30 = fmul v26, v19
                store notrap aligned v30, v29
                v31 = iconst.i64 -1
                v32 = iadd v18, v31  ; v31 = -1
                brif v18, block4(v32, v30), block5(v30)

            block5(v20: f64):
                v33 = stack_addr.i64 ss0
                store notrap aligned v20, v33
                v34 = atomic_load.i64 notrap aligned v33
                v35 = bitcast.f64 v34
                v37 = umin.i64 v107, v101
                v38 = isub.i64 v101, v37
                v40 = iconst.i64 0
                brif v38, block6(v40), block7  ; v40 = 0

            block6(v39: i64):
                v41 = iadd.i64 v37, v39
                v42 = iconst.i64 3
                v43 = ishl v41, v42  ; v42 = 3
                v44 = iadd.i64 v5, v43
                v45 = f64const 0.0
                store notrap aligned v45, v44  ; v45 = 0.0
                v46 = iconst.i64 1
                v47 = iadd v39, v46  ; v46 = 1
                v48 = icmp ult v47, v38
                brif v48, block6(v47), block7

            block7:
                v49 = umin.i64 v107, v101
                jump block3

            block3:
                v50 = f64const 0x1.0000000000000p0
                v51 = iconst.i64 1
                v52 = ushr.i64 v101, v51  ; v51 = 1
                v53 = iconst.i64 -2
                v54 = band.i64 v101, v53  ; v53 = -2
                v55 = iconst.i64 1
                v56 = band.i64 v101, v55  ; v55 = 1
                v58 = iconst.i64 0
                brif v52, block8(v58, v50), block9(v50)  ; v58 = 0, v50 = 0x1.0000000000000p0, v50 = 0x1.0000000000000p0

            block8(v57: i64, v65: f64):
                v59 = iconst.i64 1
                v60 = ishl v57, v59  ; v59 = 1
                v61 = iconst.i64 3
                v62 = ishl v60, v61  ; v61 = 3
                v63 = iadd.i64 v5, v62
                v66 = iconst.i64 3
                v67 = ishl v60, v66  ; v66 = 3
                v68 = iadd.i64 v4, v67
                v69 = load.f64 notrap aligned v68
                v70 = fmul v65, v69
                v72 = iconst.i64 1
                v73 = iadd v60, v72  ; v72 = 1
                v109 = load.f64x2 notrap v63
                v78 = iconst.i64 3
                v79 = ishl v73, v78  ; v78 = 3
                v80 = iadd.i64 v4, v79
                v81 = load.f64 notrap aligned v80
                v82 = fmul v70, v81
                v110 = scalar_to_vector.f64x2 v65
                v111 = insertlane v110, v70, 1
                v112 = fmul v109, v111
                store notrap v112, v63
                v84 = iconst.i64 1
                v85 = iadd v57, v84  ; v84 = 1
                v86 = icmp ult v85, v52
                brif v86, block8(v85, v82), block9(v82)

            block9(v108: f64):
                v88 = iconst.i64 0
                brif.i64 v56, block10(v88), block11  ; v88 = 0

            block10(v87: i64):
                v89 = iadd.i64 v54, v87
                v90 = iconst.i64 3
                v91 = ishl v89, v90  ; v90 = 3
                v92 = iadd.i64 v5, v91
                v93 = load.f64 notrap aligned v92
                v95 = iconst.i64 3
                v96 = ishl v89, v95  ; v95 = 3
                v97 = iadd.i64 v4, v96
                v98 = load.f64 notrap aligned v97
                v99 = fmul.f64 v108, v98
                v100 = fmul v93, v108
                store notrap aligned v100, v92
                jump block11

            block11:
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

/// A fold whose accumulator is an array added into in place carries its phase only: the
/// length and strides are the same on every iteration, and so is the buffer's address,
/// all out of the loop's state; the additions then pair on two lanes (`load.f64x2`).
#[test]
fn array_accumulator_added_in_place_carries_only_its_phase() {
    clif(
        "def f(M: [m][n]real, z: [n]real) = reduce (s, r. map2 + s r) z M",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v82 = load.i64 notrap aligned readonly can_move v1+8
                v83 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v0+8
                v6 = load.i64 notrap aligned readonly can_move v2
                v10 = iconst.i64 0
                brif.i64 v82, block2(v10), block3  ; v10 = 0

            block2(v9: i64):
                v11 = iconst.i64 3
                v12 = ishl v9, v11  ; v11 = 3
                v13 = iadd.i64 v5, v12
                v14 = load.f64 notrap aligned v13
                v15 = iconst.i64 3
                v16 = ishl v9, v15  ; v15 = 3
                v17 = iadd.i64 v6, v16
                store notrap aligned v14, v17
                v18 = iconst.i64 1
                v19 = iadd v9, v18  ; v18 = 1
                v20 = icmp ult v19, v82
                brif v20, block2(v19), block3

            block3:
                v21 = iconst.i64 1
                v22 = iconst.i8 0
                v26 = iconst.i64 0
                brif.i64 v83, block4(v26, v22), block5(v22)  ; v26 = 0, v22 = 0, v22 = 0

            block4(v23: i64, v24: i8):
                v27 = imul v23, v82
                v28 = iconst.i64 3
                v29 = ishl v27, v28  ; v28 = 3
                v30 = iadd.i64 v4, v29
                v31 = iconst.i64 1
                v32 = ushr.i64 v82, v31  ; v31 = 1
                v33 = iconst.i64 -2
                v34 = band.i64 v82, v33  ; v33 = -2
                v35 = iconst.i64 1
                v36 = band.i64 v82, v35  ; v35 = 1
                v38 = iconst.i64 0
                brif v32, block6(v38), block7  ; v38 = 0

            block6(v37: i64):
                v39 = iconst.i64 1
                v40 = ishl v37, v39  ; v39 = 1
                v41 = iconst.i64 3
                v42 = ishl v40, v41  ; v41 = 3
                v43 = iadd.i64 v6, v42
                v45 = iconst.i64 3
                v46 = ishl v40, v45  ; v45 = 3
                v47 = iadd.i64 v30, v46
                v84 = load.f64x2 notrap v43
                v85 = load.f64x2 notrap v47
                v86 = fadd v84, v85
                store notrap v86, v43
                v61 = iconst.i64 1
                v62 = iadd v37, v61  ; v61 = 1
                v63 = icmp ult v62, v32
                brif v63, block6(v62), block7

            block7:
                v65 = iconst.i64 0
                brif.i64 v36, block8(v65), block9  ; v65 = 0

            block8(v64: i64):
                v66 = iadd.i64 v34, v64
                v67 = iconst.i64 3
                v68 = ishl v66, v67  ; v67 = 3
                v69 = iadd.i64 v6, v68
                v70 = load.f64 notrap aligned v69
                v71 = iconst.i64 3
                v72 = ishl v66, v71  ; v71 = 3
                v73 = iadd.i64 v30, v72
                v74 = load.f64 notrap aligned v73
                v75 = fadd v70, v74
                store notrap aligned v75, v69
                jump block9

            block9:
                v76 = iconst.i8 1
                v77 = bxor.i8 v24, v76  ; v76 = 1
                v78 = iconst.i64 1
                v79 = iconst.i64 1
                v80 = iadd.i64 v23, v79  ; v79 = 1
                v81 = icmp ult v80, v83
                brif v81, block4(v80, v77), block5(v77)

            block5(v25: i8):
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
                region0 = 1 "kernel tables"
                gv0 = symbol colocated userextname0
                sig0 = (f64) -> f64 system_v
                fn0 = colocated u0:1 sig0

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v308 = load.i64 notrap aligned readonly can_move v1
                v309 = symbol_value.i64 gv0
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v6 = load.i64 notrap aligned readonly can_move v2+8
                v8 = iconst.i64 1
                v9 = ushr.i64 v308, v8  ; v8 = 1
                v10 = iconst.i64 -2
                v11 = band.i64 v308, v10  ; v10 = -2
                v12 = iconst.i64 1
                v13 = band.i64 v308, v12  ; v12 = 1
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
                v31 = iconst.i64 0x4337_ffff_fff0_0000
                v33 = f64const -0x1.62e42ff000000p-8
                v35 = f64const 0x1.718432a1b0e26p-42
                v37 = iconst.i64 127
                v39 = iconst.i64 4
                v45 = f64const 0x1.0000000000000p-1
                v46 = f64const 0x1.5555555555555p-3
                v47 = f64const 0x1.5555555555555p-5
                v48 = f64const 0x1.1111111111111p-7
                v55 = iconst.i64 7
                v57 = iconst.i64 8
                v61 = iconst.i64 52
                v65 = iconst.i64 1023
                v67 = iconst.i64 52
                v71 = f64const 0x1.6300000000000p9
                v73 = f64const +Inf
                v75 = f64const -0x1.7500000000000p9
                v77 = f64const 0.0
                v310 = load.f64x2 notrap v20
                v319 = splat.f64x2 v26  ; v26 = 0x1.71547652b82fep7
                v320 = splat.f64x2 v27  ; v27 = 0x1.8000000000000p52
                v321 = fma v310, v319, v320
                v341 = fsub v321, v320
                v322 = bitcast.i64x2 little v321
                v323 = splat.i64x2 v31  ; v31 = 0x4337_ffff_fff0_0000
                v324 = isub v322, v323
                v343 = splat.f64x2 v33  ; v33 = -0x1.62e42ff000000p-8
                v344 = fma v341, v343, v310
                v342 = splat.f64x2 v35  ; v35 = 0x1.718432a1b0e26p-42
                v345 = fma v341, v342, v344
                v325 = splat.i64x2 v37  ; v37 = 127
                v326 = band v324, v325
                v327 = ishl v326, v39  ; v39 = 4
                v318 = splat.i64x2 v309
                v328 = iadd v318, v327
                v329 = extractlane v328, 0
                v330 = extractlane v328, 1
                v331 = load.f64x2 notrap readonly can_move region0 v329
                v332 = load.f64x2 notrap readonly can_move region0 v330
                v333 = bitcast.i8x16 little v331
                v334 = bitcast.i8x16 little v332
                v335 = shuffle v333, v334, 0x17161514131211100706050403020100
                v336 = bitcast.f64x2 little v335
                v337 = bitcast.i8x16 little v331
                v338 = bitcast.i8x16 little v332
                v339 = shuffle v337, v338, 0x17161514131211100706050403020100
                v340 = bitcast.f64x2 little v339
                v355 = bitcast.i8x16 little v331
                v356 = bitcast.i8x16 little v332
                v357 = shuffle v355, v356, 0x1f1e1d1c1b1a19180f0e0d0c0b0a0908
                v358 = bitcast.f64x2 little v357
                v349 = fmul v345, v345
                v351 = splat.f64x2 v45  ; v45 = 0x1.0000000000000p-1
                v350 = splat.f64x2 v46  ; v46 = 0x1.5555555555555p-3
                v347 = splat.f64x2 v47  ; v47 = 0x1.5555555555555p-5
                v346 = splat.f64x2 v48  ; v48 = 0x1.1111111111111p-7
                v352 = fma v345, v350, v351
                v348 = fma v345, v346, v347
                v353 = fma v348, v349, v352
                v354 = fma v353, v349, v345
                v359 = fma v340, v354, v358
                v360 = fadd v336, v359
                v366 = ushr v324, v55  ; v55 = 7
                v362 = ushr v324, v57  ; v57 = 8
                v367 = isub v366, v362
                v361 = bitcast.i64x2 little v360
                v363 = ishl v362, v61  ; v61 = 52
                v364 = iadd v361, v363
                v365 = bitcast.f64x2 little v364
                v368 = splat.i64x2 v65  ; v65 = 1023
                v369 = iadd v367, v368
                v370 = ishl v369, v67  ; v67 = 52
                v371 = bitcast.f64x2 little v370
                v372 = fmul v365, v371
                v315 = splat.f64x2 v71  ; v71 = 0x1.6300000000000p9
                v316 = fcmp gt v310, v315
                v317 = splat.f64x2 v73  ; v73 = +Inf
                v373 = bitcast.f64x2 little v316
                v374 = bitselect v373, v317, v372
                v312 = splat.f64x2 v75  ; v75 = -0x1.7500000000000p9
                v313 = fcmp lt v310, v312
                v314 = splat.f64x2 v77  ; v77 = 0.0
                v375 = bitcast.f64x2 little v313
                v376 = bitselect v375, v314, v374
                v311 = fcmp ne v310, v310
                v377 = bitcast.f64x2 little v311
                v378 = bitselect v377, v310, v376
                store notrap v378, v24
                v145 = iconst.i64 1
                v146 = iadd v14, v145  ; v145 = 1
                v147 = icmp ult v146, v9
                brif v147, block2(v146), block3

            block3:
                v149 = iconst.i64 0
                brif.i64 v13, block4(v149), block5  ; v149 = 0

            block4(v148: i64):
                v150 = iadd.i64 v11, v148
                v151 = iconst.i64 3
                v152 = ishl v150, v151  ; v151 = 3
                v153 = iadd.i64 v4, v152
                v154 = load.f64 notrap aligned v153
                v155 = iconst.i64 3
                v156 = ishl v150, v155  ; v155 = 3
                v157 = iadd.i64 v5, v156
                v158 = call fn0(v154)
                store notrap aligned v158, v157
                jump block5

            block5:
                v159 = f64const 0.0
                v160 = iconst.i64 3
                v161 = ushr.i64 v308, v160  ; v160 = 3
                v162 = f64const -0.0
                v379 = splat.f64x2 v162  ; v162 = -0.0
                v163 = scalar_to_vector.f64x2 v159  ; v159 = 0.0
                v164 = insertlane v163, v162, 1  ; v162 = -0.0
                v182 = iconst.i64 0
                brif v161, block6(v182, v159, v164, v379, v379, v379), block7(v159, v164, v379, v379, v379)  ; v182 = 0, v159 = 0.0, v159 = 0.0

            block6(v171: i64, v172: f64, v173: f64x2, v174: f64x2, v175: f64x2, v176: f64x2):
                v183 = iconst.i64 3
                v184 = ishl v171, v183  ; v183 = 3
                v186 = iconst.i64 3
                v187 = ishl v184, v186  ; v186 = 3
                v188 = iadd.i64 v5, v187
                v380 = load.f64x2 notrap v188
                v381 = fadd v173, v380
                v200 = iconst.i64 2
                v201 = iadd v184, v200  ; v200 = 2
                v202 = iconst.i64 3
                v203 = ishl v201, v202  ; v202 = 3
                v204 = iadd.i64 v5, v203
                v382 = load.f64x2 notrap v204
                v383 = fadd v174, v382
                v216 = iconst.i64 4
                v217 = iadd v184, v216  ; v216 = 4
                v218 = iconst.i64 3
                v219 = ishl v217, v218  ; v218 = 3
                v220 = iadd.i64 v5, v219
                v384 = load.f64x2 notrap v220
                v385 = fadd v175, v384
                v232 = iconst.i64 6
                v233 = iadd v184, v232  ; v232 = 6
                v234 = iconst.i64 3
                v235 = ishl v233, v234  ; v234 = 3
                v236 = iadd.i64 v5, v235
                v386 = load.f64x2 notrap v236
                v387 = fadd v176, v386
                v255 = iconst.i64 1
                v256 = iadd v171, v255  ; v255 = 1
                v257 = icmp ult v256, v161
                brif v257, block6(v256, v172, v381, v383, v385, v387), block7(v172, v381, v383, v385, v387)

            block7(v177: f64, v178: f64x2, v179: f64x2, v180: f64x2, v181: f64x2):
                v258 = stack_addr.i64 ss0
                store notrap aligned v177, v258
                v259 = atomic_load.i64 notrap aligned v258
                v388 = fadd v178, v180
                v389 = fadd v179, v181
                v390 = fadd v388, v389
                v285 = extractlane v390, 0
                v286 = extractlane v390, 1
                v287 = fadd v285, v286
                v288 = iconst.i64 3
                v289 = ishl.i64 v161, v288  ; v288 = 3
                v290 = iconst.i64 7
                v291 = band.i64 v308, v290  ; v290 = 7
                v295 = iconst.i64 0
                brif v291, block8(v295, v287), block9(v287)  ; v295 = 0

            block8(v292: i64, v293: f64):
                v296 = iadd.i64 v289, v292
                v297 = iconst.i64 3
                v298 = ishl v296, v297  ; v297 = 3
                v299 = iadd.i64 v5, v298
                v300 = load.f64 notrap aligned v299
                v301 = fadd v293, v300
                v302 = iconst.i64 1
                v303 = iadd v292, v302  ; v302 = 1
                v304 = icmp ult v303, v291
                brif v304, block8(v303, v301), block9(v301)

            block9(v294: f64):
                v305 = stack_addr.i64 ss0
                store notrap aligned v294, v305
                v306 = atomic_load.i64 notrap aligned v305
                v307 = bitcast.f64 v306
                store notrap aligned v307, v6
                return
            }

            ; the function of the kernel `exp`
            function u0:1(f64) -> f64 system_v {
                region0 = 1 "kernel tables"
                gv0 = symbol colocated userextname0

            block0(v0: f64):
                v1 = symbol_value.i64 gv0
                v2 = f64const 0x1.71547652b82fep7
                v3 = f64const 0x1.8000000000000p52
                v4 = fma v0, v2, v3  ; v2 = 0x1.71547652b82fep7, v3 = 0x1.8000000000000p52
                v5 = fsub v4, v3  ; v3 = 0x1.8000000000000p52
                v6 = bitcast.i64 v4
                v7 = iconst.i64 0x4337_ffff_fff0_0000
                v8 = isub v6, v7  ; v7 = 0x4337_ffff_fff0_0000
                v9 = f64const -0x1.62e42ff000000p-8
                v10 = fma v5, v9, v0  ; v9 = -0x1.62e42ff000000p-8
                v11 = f64const 0x1.718432a1b0e26p-42
                v12 = fma v5, v11, v10  ; v11 = 0x1.718432a1b0e26p-42
                v13 = iconst.i64 127
                v14 = band v8, v13  ; v13 = 127
                v15 = iconst.i64 4
                v16 = ishl v14, v15  ; v15 = 4
                v17 = iadd v1, v16
                v18 = load.f64 notrap aligned readonly can_move region0 v17
                v19 = load.f64 notrap aligned readonly can_move region0 v17+8
                v20 = fmul v12, v12
                v21 = f64const 0x1.0000000000000p-1
                v22 = f64const 0x1.5555555555555p-3
                v23 = f64const 0x1.5555555555555p-5
                v24 = f64const 0x1.1111111111111p-7
                v25 = fma v12, v22, v21  ; v22 = 0x1.5555555555555p-3, v21 = 0x1.0000000000000p-1
                v26 = fma v12, v24, v23  ; v24 = 0x1.1111111111111p-7, v23 = 0x1.5555555555555p-5
                v27 = fma v26, v20, v25
                v28 = fma v27, v20, v12
                v29 = fma v18, v28, v19
                v30 = fadd v18, v29
                v31 = iconst.i64 7
                v32 = ushr v8, v31  ; v31 = 7
                v33 = iconst.i64 8
                v34 = ushr v8, v33  ; v33 = 8
                v35 = isub v32, v34
                v36 = bitcast.i64 v30
                v37 = iconst.i64 52
                v38 = ishl v34, v37  ; v37 = 52
                v39 = iadd v36, v38
                v40 = bitcast.f64 v39
                v41 = iconst.i64 1023
                v42 = iadd v35, v41  ; v41 = 1023
                v43 = iconst.i64 52
                v44 = ishl v42, v43  ; v43 = 52
                v45 = bitcast.f64 v44
                v46 = fmul v40, v45
                v47 = f64const 0x1.6300000000000p9
                v48 = fcmp gt v0, v47  ; v47 = 0x1.6300000000000p9
                v49 = f64const +Inf
                v50 = select v48, v49, v46  ; v49 = +Inf
                v51 = f64const -0x1.7500000000000p9
                v52 = fcmp lt v0, v51  ; v51 = -0x1.7500000000000p9
                v53 = f64const 0.0
                v54 = select v52, v53, v50  ; v53 = 0.0
                v55 = fcmp ne v0, v0
                v56 = select v55, v0, v54
                return v56
            }
        "#]],
    );
}

#[test]
fn sum_keeps_eight_accumulators() {
    // Blocks of eight elements into eight independent accumulators (four vectors of two
    // lanes), combined by a tree, then the remaining elements (the order of
    // `unfad_syntax::reduction`).
    clif(
        "def f(A: [n]real) = reduce + 0 A",
        expect![[r#"
            function u0:0(i64, i64, i64, i64) system_v {
                ss0 = explicit_slot 8, align = 8

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v156 = load.i64 notrap aligned readonly can_move v1
                jump block1

            block1:
                v4 = load.i64 notrap aligned readonly can_move v0
                v5 = load.i64 notrap aligned readonly can_move v2
                v7 = f64const 0.0
                v8 = iconst.i64 3
                v9 = ushr.i64 v156, v8  ; v8 = 3
                v10 = f64const -0.0
                v157 = splat.f64x2 v10  ; v10 = -0.0
                v11 = scalar_to_vector.f64x2 v7  ; v7 = 0.0
                v12 = insertlane v11, v10, 1  ; v10 = -0.0
                v30 = iconst.i64 0
                brif v9, block2(v30, v7, v12, v157, v157, v157), block3(v7, v12, v157, v157, v157)  ; v30 = 0, v7 = 0.0, v7 = 0.0

            block2(v19: i64, v20: f64, v21: f64x2, v22: f64x2, v23: f64x2, v24: f64x2):
                v31 = iconst.i64 3
                v32 = ishl v19, v31  ; v31 = 3
                v34 = iconst.i64 3
                v35 = ishl v32, v34  ; v34 = 3
                v36 = iadd.i64 v4, v35
                v158 = load.f64x2 notrap v36
                v159 = fadd v21, v158
                v48 = iconst.i64 2
                v49 = iadd v32, v48  ; v48 = 2
                v50 = iconst.i64 3
                v51 = ishl v49, v50  ; v50 = 3
                v52 = iadd.i64 v4, v51
                v160 = load.f64x2 notrap v52
                v161 = fadd v22, v160
                v64 = iconst.i64 4
                v65 = iadd v32, v64  ; v64 = 4
                v66 = iconst.i64 3
                v67 = ishl v65, v66  ; v66 = 3
                v68 = iadd.i64 v4, v67
                v162 = load.f64x2 notrap v68
                v163 = fadd v23, v162
                v80 = iconst.i64 6
                v81 = iadd v32, v80  ; v80 = 6
                v82 = iconst.i64 3
                v83 = ishl v81, v82  ; v82 = 3
                v84 = iadd.i64 v4, v83
                v164 = load.f64x2 notrap v84
                v165 = fadd v24, v164
                v103 = iconst.i64 1
                v104 = iadd v19, v103  ; v103 = 1
                v105 = icmp ult v104, v9
                brif v105, block2(v104, v20, v159, v161, v163, v165), block3(v20, v159, v161, v163, v165)

            block3(v25: f64, v26: f64x2, v27: f64x2, v28: f64x2, v29: f64x2):
                v106 = stack_addr.i64 ss0
                store notrap aligned v25, v106
                v107 = atomic_load.i64 notrap aligned v106
                v166 = fadd v26, v28
                v167 = fadd v27, v29
                v168 = fadd v166, v167
                v133 = extractlane v168, 0
                v134 = extractlane v168, 1
                v135 = fadd v133, v134
                v136 = iconst.i64 3
                v137 = ishl.i64 v9, v136  ; v136 = 3
                v138 = iconst.i64 7
                v139 = band.i64 v156, v138  ; v138 = 7
                v143 = iconst.i64 0
                brif v139, block4(v143, v135), block5(v135)  ; v143 = 0

            block4(v140: i64, v141: f64):
                v144 = iadd.i64 v137, v140
                v145 = iconst.i64 3
                v146 = ishl v144, v145  ; v145 = 3
                v147 = iadd.i64 v4, v146
                v148 = load.f64 notrap aligned v147
                v149 = fadd v141, v148
                v150 = iconst.i64 1
                v151 = iadd v140, v150  ; v150 = 1
                v152 = icmp ult v151, v139
                brif v152, block4(v151, v149), block5(v149)

            block5(v142: f64):
                v153 = stack_addr.i64 ss0
                store notrap aligned v142, v153
                v154 = atomic_load.i64 notrap aligned v153
                v155 = bitcast.f64 v154
                store notrap aligned v155, v5
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
                region0 = 1 "kernel tables"
                gv0 = symbol colocated userextname0

            block0(v0: i64, v1: i64, v2: i64, v3: i64):
                v63 = symbol_value.i64 gv0
                v7 -> v63
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
                v13 = iconst.i64 0x4337_ffff_fff0_0000
                v14 = isub v12, v13  ; v13 = 0x4337_ffff_fff0_0000
                v15 = f64const -0x1.62e42ff000000p-8
                v16 = fma v11, v15, v6  ; v15 = -0x1.62e42ff000000p-8
                v17 = f64const 0x1.718432a1b0e26p-42
                v18 = fma v11, v17, v16  ; v17 = 0x1.718432a1b0e26p-42
                v19 = iconst.i64 127
                v20 = band v14, v19  ; v19 = 127
                v21 = iconst.i64 4
                v22 = ishl v20, v21  ; v21 = 4
                v23 = iadd.i64 v7, v22
                v24 = load.f64 notrap aligned readonly can_move region0 v23
                v25 = load.f64 notrap aligned readonly can_move region0 v23+8
                v26 = fmul v18, v18
                v27 = f64const 0x1.0000000000000p-1
                v28 = f64const 0x1.5555555555555p-3
                v29 = f64const 0x1.5555555555555p-5
                v30 = f64const 0x1.1111111111111p-7
                v31 = fma v18, v28, v27  ; v28 = 0x1.5555555555555p-3, v27 = 0x1.0000000000000p-1
                v32 = fma v18, v30, v29  ; v30 = 0x1.1111111111111p-7, v29 = 0x1.5555555555555p-5
                v33 = fma v32, v26, v31
                v34 = fma v33, v26, v18
                v35 = fma v24, v34, v25
                v36 = fadd v24, v35
                v37 = iconst.i64 7
                v38 = ushr v14, v37  ; v37 = 7
                v39 = iconst.i64 8
                v40 = ushr v14, v39  ; v39 = 8
                v41 = isub v38, v40
                v42 = bitcast.i64 v36
                v43 = iconst.i64 52
                v44 = ishl v40, v43  ; v43 = 52
                v45 = iadd v42, v44
                v46 = bitcast.f64 v45
                v47 = iconst.i64 1023
                v48 = iadd v41, v47  ; v47 = 1023
                v49 = iconst.i64 52
                v50 = ishl v48, v49  ; v49 = 52
                v51 = bitcast.f64 v50
                v52 = fmul v46, v51
                v53 = f64const 0x1.6300000000000p9
                v54 = fcmp gt v6, v53  ; v53 = 0x1.6300000000000p9
                v55 = f64const +Inf
                v56 = select v54, v55, v52  ; v55 = +Inf
                v57 = f64const -0x1.7500000000000p9
                v58 = fcmp lt v6, v57  ; v57 = -0x1.7500000000000p9
                v59 = f64const 0.0
                v60 = select v58, v59, v56  ; v59 = 0.0
                v61 = fcmp ne v6, v6
                v62 = select v61, v6, v60
                store notrap aligned v62, v5
                return
            }
        "#]],
    );
}
