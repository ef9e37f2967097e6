//! The math kernels in native code: [`Emit`], the JIT's instance of the kernels'
//! arithmetic ([`unfad_kernels::Arith`]), which emits each operation as one Cranelift
//! instruction into the current block. A kernel written once in `unfad-kernels` thus
//! becomes CLIF performing the same IEEE operations in the same order as the scalar twin
//! the interpreter computes with, so both agree bit for bit. `sin` and `cos` of arguments
//! beyond the kernels' range branch to a cold block calling the standard library, as the
//! twin does.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_codegen::isa::TargetIsa;
use cranelift_frontend::FunctionBuilder;
use target_lexicon::Architecture;
use unfad_kernels::{Arith, Cmp, Kernel, TRIG_BOUND};

use crate::error::{JitError, JitResult};
use crate::runtime;

use super::{blockargs, Translator};

/// How many kernels outside loops a function inlines; beyond, each is a call of its twin.
/// A call costs some nanoseconds more per use (the twin, compiled for any x86-64, calls
/// the C library's `fma`), an inline kernel about a hundred instructions to compile.
pub const INLINE_KERNELS_OUTSIDE_LOOPS: usize = 16;

/// The kernels' arithmetic as Cranelift instructions appended to the builder's current
/// block; `mul_add` is an `fma` instruction when `fused`, else `fmul` then `fadd`.
pub(super) struct Emit<'f, 'a> {
    b: &'f mut FunctionBuilder<'a>,
    fused: bool,
}

/// Whether kernels fuse `mul_add` in code for `isa`: exactly when the host has FMA, the
/// fact the scalar twin decides by ([`unfad_kernels::host_has_fma`]). The ISA must then
/// have FMA too (Cranelift would make `fma` a library call otherwise); if it lacks it on a
/// host that has it, native code could not equal the interpreter, and compiling fails.
pub(super) fn fused(isa: &dyn TargetIsa) -> JitResult<bool> {
    let host = unfad_kernels::host_has_fma();
    let isa_has = match isa.triple().architecture {
        Architecture::X86_64 => isa
            .isa_flags()
            .iter()
            .any(|f| f.name == "has_fma" && f.as_bool() == Some(true)),
        Architecture::Aarch64(_) => true,
        _ => false,
    };
    if host && !isa_has {
        return Err(JitError::Codegen(
            "the host has FMA but the target ISA does not: kernels would differ from the \
             interpreter's"
                .into(),
        ));
    }
    Ok(host)
}

impl Arith for Emit<'_, '_> {
    type Real = Value;
    type Int = Value;
    type Mask = Value;

    fn fused(&self) -> bool {
        self.fused
    }
    fn real(&mut self, c: f64) -> Value {
        self.b.ins().f64const(c)
    }
    fn int(&mut self, c: i64) -> Value {
        self.b.ins().iconst(I64, c)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }
    fn div(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }
    fn mul_add(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.fused {
            self.b.ins().fma(a, b, c)
        } else {
            let p = self.b.ins().fmul(a, b);
            self.b.ins().fadd(p, c)
        }
    }
    fn neg(&mut self, a: Value) -> Value {
        self.b.ins().fneg(a)
    }
    fn abs(&mut self, a: Value) -> Value {
        self.b.ins().fabs(a)
    }
    fn cmp(&mut self, op: Cmp, a: Value, b: Value) -> Value {
        let cc = match op {
            Cmp::Lt => FloatCC::LessThan,
            Cmp::Le => FloatCC::LessThanOrEqual,
            Cmp::Gt => FloatCC::GreaterThan,
            Cmp::Ge => FloatCC::GreaterThanOrEqual,
            Cmp::Eq => FloatCC::Equal,
            Cmp::Ne => FloatCC::NotEqual,
        };
        self.b.ins().fcmp(cc, a, b)
    }
    fn select(&mut self, m: Value, a: Value, b: Value) -> Value {
        self.b.ins().select(m, a, b)
    }
    fn to_bits(&mut self, a: Value) -> Value {
        self.b.ins().bitcast(I64, MemFlagsData::new(), a)
    }
    fn bits_to_real(&mut self, i: Value) -> Value {
        self.b.ins().bitcast(F64, MemFlagsData::new(), i)
    }
    fn iadd(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().iadd(a, b)
    }
    fn isub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().isub(a, b)
    }
    fn iand(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().band(a, b)
    }
    fn ixor(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().bxor(a, b)
    }
    fn shl(&mut self, a: Value, n: u32) -> Value {
        self.b.ins().ishl_imm_u(a, i64::from(n))
    }
    fn sshr(&mut self, a: Value, n: u32) -> Value {
        self.b.ins().sshr_imm_u(a, i64::from(n))
    }
    fn ieq(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().icmp(IntCC::Equal, a, b)
    }
}

impl<'a> Translator<'a> {
    /// Call each math kernel's scalar twin ([`Kernel::eval`], the same operations, so the
    /// same bits) instead of inlining the kernel: for the chunks of a long program, where
    /// a kernel's hundred instructions per use dominate the time Cranelift takes (a chain
    /// of 10^4 `sin`s), and the code is compiled for compile time first (see
    /// `codegen::long_code_isa`).
    pub fn call_kernels(&mut self) {
        self.kernel_calls = true;
    }

    /// Note whether the term `body` has more than [`INLINE_KERNELS_OUTSIDE_LOOPS`] kernels
    /// outside its loops (see [`Translator::kernel`]).
    pub fn count_kernels_outside_loops(&mut self, body: unfad_syntax::ExprId) {
        let arena = self.arena;
        let mut count = 0;
        let mut stack = vec![body];
        while let Some(e) = stack.pop() {
            let node = arena[e];
            if let unfad_syntax::Node::Op1(op, _) = node {
                count += usize::from(op.kernel().is_some());
            }
            // The functions of array operations run in their loops.
            if node.is_array_op() {
                arena.for_each_child(e, |c| {
                    if !matches!(arena[c], unfad_syntax::Node::Lambda(..)) {
                        stack.push(c);
                    }
                });
            } else {
                arena.for_each_child(e, |c| stack.push(c));
            }
        }
        self.many_kernels_outside_loops = count > INLINE_KERNELS_OUTSIDE_LOOPS;
    }

    /// The kernel `k` on `x`, inline; for `sin` and `cos`, arguments the kernel does not
    /// reduce (`!(|x| <= TRIG_BOUND)`) take a cold block that calls the standard library.
    pub(super) fn kernel(&mut self, k: Kernel, x: Value) -> JitResult<Value> {
        let fused = fused(self.module.isa())?;
        // Outside every loop a kernel runs once per call of the function: where there are
        // many such, their hundred instructions each inline cost Cranelift more time than
        // all their calls will (a chain of a hundred `sin`s took 30 ms to compile), and
        // they are calls too.
        if self.kernel_calls || (self.counters.is_empty() && self.many_kernels_outside_loops) {
            let (name, _) = runtime::kernel_call(k);
            return self.call(name, &[x]);
        }
        let Some((name, _)) = runtime::fallback(k) else {
            return Ok(k.emit(
                &mut Emit {
                    b: &mut self.b,
                    fused,
                },
                x,
            ));
        };
        // The kernel before the branch (pure arithmetic, no trap whatever `x`; its value is
        // unused beyond the bound): `sin(x)` and `cos(x)` of one `x`, as a rotation or a
        // gradient has them, then share their reduction and polynomials, which Cranelift
        // computes once (the first dominates the second).
        let v = k.emit(
            &mut Emit {
                b: &mut self.b,
                fused,
            },
            x,
        );
        let slow = self.b.create_block();
        let join = self.b.create_block();
        self.b.set_cold_block(slow);
        let r = self.b.append_block_param(join, F64);
        let ax = self.b.ins().fabs(x);
        let bound = self.b.ins().f64const(TRIG_BOUND);
        let inside = self.b.ins().fcmp(FloatCC::LessThanOrEqual, ax, bound);
        self.b.ins().brif(inside, join, &blockargs(&[v]), slow, &[]);
        self.switch_to(slow);
        let v = self.call(name, &[x])?;
        self.b.ins().jump(join, &blockargs(&[v]));
        self.switch_to(join);
        Ok(r)
    }
}
