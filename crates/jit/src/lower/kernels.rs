//! The math kernels in native code: [`Emit`], the JIT's instance of the kernels'
//! arithmetic ([`unfad_kernels::Arith`]), which emits each operation as one Cranelift
//! instruction into the current block. A kernel written once in `unfad-kernels` thus
//! becomes CLIF performing the same IEEE operations in the same order as the scalar twin
//! the interpreter computes with, so both agree bit for bit. `sin` and `cos` of arguments
//! beyond the kernels' range branch to a cold block calling the standard library, as the
//! twin does.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{
    AbiParam, AliasRegion, AliasRegionData, FuncRef, Function, GlobalValue, InstBuilder,
    MemFlagsData, Signature, Value,
};
use cranelift_codegen::isa::TargetIsa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, DataId, FuncId, FuncOrDataId, Linkage, Module};
use target_lexicon::Architecture;
use unfad_kernels::{Arith, Cmp, Kernel, Table, TABLES, TRIG_BOUND};

use crate::error::{JitError, JitResult};
use crate::runtime;

use super::prologue::PrologueValue;
use super::{blockargs, Translator};

/// How many kernels outside loops a function inlines; beyond, each is a call of the
/// kernel's function ([`kernel_function`]). A call costs some nanoseconds more per use,
/// an inline kernel about a hundred instructions to compile.
pub const INLINE_KERNELS_OUTSIDE_LOOPS: usize = 16;

/// The kernels' arithmetic as Cranelift instructions appended to the builder's current
/// block; `mul_add` is an `fma` instruction when `fused`, else `fmul` then `fadd`.
pub(super) struct Emit<'f, 'a> {
    b: &'f mut FunctionBuilder<'a>,
    fused: bool,
    /// The address of the kernels' tables ([`kernel_tables`]), where the kernel reads
    /// them ([`Kernel::reads_tables`]).
    tables: Option<Value>,
    /// The address of the row each lookup read, by table and index: a table's columns
    /// read at one index share it, so the lanes pass sees one pair of addresses and
    /// reads the row's reals with one load per lane (`lanes.rs`, `table_gather`).
    rows: Vec<(Table, Value, Value)>,
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
    fn ushr(&mut self, a: Value, n: u32) -> Value {
        self.b.ins().ushr_imm_u(a, i64::from(n))
    }
    fn ieq(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().icmp(IntCC::Equal, a, b)
    }
    /// A load at `tables + 8 (start + width (i & (rows - 1)) + column)`: the mask keeps
    /// the read inside the table whatever `i` is. The load is `readonly` and `can_move`
    /// (the tables never change), so that Cranelift may merge and move it and the
    /// two-lane pass may gather two of them (`lanes.rs`).
    fn lookup(&mut self, t: Table, i: Value, column: usize) -> Value {
        let tables = self
            .tables
            .expect("a kernel that reads tables is given their address");
        let known = self.rows.iter().find(|r| r.0 == t && r.1 == i).map(|r| r.2);
        let addr = match known {
            Some(addr) => addr,
            None => {
                let row = self.b.ins().band_imm_u(i, (t.rows() - 1) as i64);
                let shift = (t.width() * 8).trailing_zeros();
                let at = self.b.ins().ishl_imm_u(row, i64::from(shift));
                let addr = self.b.ins().iadd(tables, at);
                self.rows.push((t, i, addr));
                addr
            }
        };
        let offset = ((t.start() + column) * 8) as i32;
        let flags = table_flags(self.b.func);
        self.b.ins().load(F64, flags, addr, offset)
    }
}

/// The flags of a load from the kernels' tables: aligned, never trapping (the index is
/// masked into the table), of memory that never changes, and in an alias region of their
/// own ([`tables_region`]), which marks the loads of these tables alone: the lanes pass
/// reads two reals of a row at once there (`lanes.rs`, `table_gather`), which only this
/// data object's padding makes safe.
fn table_flags(func: &mut Function) -> MemFlagsData {
    MemFlagsData::trusted()
        .with_readonly()
        .with_can_move()
        .with_alias_region(Some(tables_region(func)))
}

/// The alias region of the loads from the kernels' tables in `func` (made at the first).
pub(crate) fn tables_region(func: &mut Function) -> AliasRegion {
    func.dfg.alias_regions.insert(AliasRegionData {
        user_id: TABLES_REGION,
        description: "kernel tables".into(),
    })
}

/// The user id of [`tables_region`].
pub(crate) const TABLES_REGION: u32 = 1;

/// The bytes after the last table in their data object: a 16-byte load at any of the
/// tables' reals stays inside it.
const TABLES_PADDING: usize = 16;

/// The symbol of the data object holding the kernels' tables.
const TABLES_NAME: &str = "unfad_kernel_tables";

/// The data object of `module` holding [`TABLES`] (aligned to 16 bytes), declared and
/// defined at its first use in the module.
pub(crate) fn kernel_tables(module: &mut dyn Module) -> JitResult<DataId> {
    if let Some(FuncOrDataId::Data(id)) = module.get_name(TABLES_NAME) {
        return Ok(id);
    }
    let id = module
        .declare_data(TABLES_NAME, Linkage::Local, false, false)
        .map_err(codegen_error)?;
    let mut bytes: Vec<u8> = TABLES.iter().flat_map(|b| b.to_ne_bytes()).collect();
    bytes.resize(bytes.len() + TABLES_PADDING, 0);
    let mut data = DataDescription::new();
    data.define(bytes.into_boxed_slice());
    data.set_align(16);
    module.define_data(id, &data).map_err(codegen_error)?;
    Ok(id)
}

/// The kernels' tables as a global value of the function being built, declared at the
/// first use (`gv` remembers it).
fn tables_global(
    module: &mut dyn Module,
    func: &mut cranelift_codegen::ir::Function,
    gv: &mut Option<GlobalValue>,
) -> JitResult<GlobalValue> {
    if let Some(gv) = *gv {
        return Ok(gv);
    }
    let id = kernel_tables(module)?;
    let v = module.declare_data_in_func(id, func);
    *gv = Some(v);
    Ok(v)
}

/// The symbol of the module's function computing kernel `k` (see [`kernel_function`]).
fn kernel_function_name(k: Kernel) -> String {
    format!("unfad_kernel_{}", k.name())
}

/// The function of `module` computing kernel `k` on one real: the code
/// [`Translator::kernel`] inlines, as a function of its own, declared and compiled at the
/// first use in the module and called by every later one. It performs the same
/// operations as the inline code, so a call's result equals the inline kernel's bit for
/// bit; a call costs a few nanoseconds more, the inline kernel a hundred instructions to
/// compile per use.
pub(crate) fn kernel_function(module: &mut dyn Module, k: Kernel) -> JitResult<FuncId> {
    let sig = unary_signature(module);
    local_function(module, &kernel_function_name(k), &sig, &mut |m, id, ctx| {
        build_kernel_function(m, k, id, ctx)
    })
}

/// The module's own function `name` of signature `sig`: declared, built by `build` and
/// compiled at the first call, found by its name at every later one.
pub(super) fn local_function(
    module: &mut dyn Module,
    name: &str,
    sig: &Signature,
    build: &mut dyn FnMut(
        &mut dyn Module,
        FuncId,
        &mut cranelift_codegen::Context,
    ) -> JitResult<()>,
) -> JitResult<FuncId> {
    if let Some(FuncOrDataId::Func(id)) = module.get_name(name) {
        return Ok(id);
    }
    let id = module
        .declare_function(name, Linkage::Local, sig)
        .map_err(codegen_error)?;
    let mut ctx = module.make_context();
    build(module, id, &mut ctx)?;
    module
        .define_function(id, &mut ctx)
        .map_err(codegen_error)?;
    Ok(id)
}

/// The CLIF of the functions of kernels that `module` has (see [`kernel_function`]), one
/// after the other, for printing.
pub(crate) fn kernel_functions_text(module: &mut dyn Module) -> JitResult<String> {
    let mut text = String::new();
    for k in Kernel::ALL {
        if let Some(FuncOrDataId::Func(id)) = module.get_name(&kernel_function_name(k)) {
            let mut ctx = module.make_context();
            build_kernel_function(module, k, id, &mut ctx)?;
            text.push_str(&format!(
                "\n; the function of the kernel `{}`\n{}",
                k.name(),
                ctx.func.display()
            ));
        }
    }
    text.push_str(&super::batch::trampolines_text(module)?);
    Ok(text)
}

pub(super) fn codegen_error(e: cranelift_module::ModuleError) -> JitError {
    JitError::Codegen(e.to_string())
}

/// `(f64) -> f64` in the host's calling convention.
fn unary_signature(module: &dyn Module) -> Signature {
    let mut sig = Signature::new(module.isa().default_call_conv());
    sig.params.push(AbiParam::new(F64));
    sig.returns.push(AbiParam::new(F64));
    sig
}

/// The function `id`, computing kernel `k`, built into `ctx`.
fn build_kernel_function(
    module: &mut dyn Module,
    k: Kernel,
    id: FuncId,
    ctx: &mut cranelift_codegen::Context,
) -> JitResult<()> {
    let sig = unary_signature(module);
    let fused = fused(module.isa())?;
    let fallback = match runtime::fallback(k) {
        Some((fallback, _)) => Some(
            module
                .declare_function(fallback, Linkage::Import, &sig)
                .map_err(codegen_error)?,
        ),
        None => None,
    };
    ctx.func.signature = sig;
    ctx.func.name = cranelift_codegen::ir::UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let x = b.block_params(entry)[0];
    let fallback = fallback.map(|f| module.declare_func_in_func(f, b.func));
    let tables = if k.reads_tables() {
        let gv = tables_global(module, b.func, &mut None)?;
        Some(b.ins().symbol_value(module.isa().pointer_type(), gv))
    } else {
        None
    };
    let r = emit_kernel(&mut b, fused, k, x, fallback, tables);
    b.ins().return_(&[r]);
    b.seal_all_blocks();
    b.finalize(module.isa().frontend_config());
    Ok(())
}

/// Kernel `k` on `x` at the builder's position: the kernel's operations, and for `sin`
/// and `cos` (`fallback`, the standard library's) a cold block calling the fallback
/// where `!(|x| <= TRIG_BOUND)`. The builder is left in the block after the kernel.
fn emit_kernel(
    b: &mut FunctionBuilder<'_>,
    fused: bool,
    k: Kernel,
    x: Value,
    fallback: Option<FuncRef>,
    tables: Option<Value>,
) -> Value {
    // The kernel before the branch (pure arithmetic, no trap whatever `x`; its value is
    // unused beyond the bound): `sin(x)` and `cos(x)` of one `x`, as a rotation or a
    // gradient has them, then share their reduction and polynomials, which Cranelift
    // computes once (the first dominates the second).
    let v = k.emit(
        &mut Emit {
            b,
            fused,
            tables,
            rows: Vec::new(),
        },
        x,
    );
    let Some(fallback) = fallback else {
        return v;
    };
    let slow = b.create_block();
    let join = b.create_block();
    b.set_cold_block(slow);
    let r = b.append_block_param(join, F64);
    let ax = b.ins().fabs(x);
    let bound = b.ins().f64const(TRIG_BOUND);
    let inside = b.ins().fcmp(FloatCC::LessThanOrEqual, ax, bound);
    b.ins().brif(inside, join, &blockargs(&[v]), slow, &[]);
    b.switch_to_block(slow);
    let call = b.ins().call(fallback, &[x]);
    let slow_v = b.inst_results(call)[0];
    b.ins().jump(join, &blockargs(&[slow_v]));
    b.switch_to_block(join);
    r
}

impl<'a> Translator<'a> {
    /// Call each math kernel's function ([`kernel_function`]) instead of inlining the
    /// kernel: for the chunks of a long program, where a kernel's hundred instructions per
    /// use dominate the time Cranelift takes (a chain of 10^4 `sin`s), and the code is
    /// compiled for compile time first (see `codegen::long_code_isa`).
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

    /// The kernel `k` on `x`: inline, or a call of its function ([`kernel_function`]) where
    /// the code runs a few times per call of the function (outside loops when there are
    /// many such kernels; the last elements of a loop inside no other), and in the chunks
    /// of a long program.
    pub(super) fn kernel(&mut self, k: Kernel, x: Value) -> JitResult<Value> {
        if let Some(v) = self.batched_kernel(k, x)? {
            return Ok(v);
        }
        // Outside every loop a kernel runs once per call of the function: where there are
        // many such, their hundred instructions each inline cost Cranelift more time than
        // all their calls will (a chain of a hundred `sin`s took 30 ms to compile).
        if self.kernel_calls
            || self.few_per_call == Some(self.counters.len())
            || (self.counters.is_empty() && self.many_kernels_outside_loops)
        {
            let f = match self.kernel_fns.get(&k) {
                Some(&f) => f,
                None => {
                    let id = kernel_function(&mut *self.module, k)?;
                    let f = self.module.declare_func_in_func(id, self.b.func);
                    self.kernel_fns.insert(k, f);
                    f
                }
            };
            let call = self.b.ins().call(f, &[x]);
            return Ok(self.b.inst_results(call)[0]);
        }
        let fused = fused(self.module.isa())?;
        let fallback = match runtime::fallback(k) {
            Some((name, _)) => Some(self.extern_fn(name, 1)?),
            None => None,
        };
        let tables = if k.reads_tables() {
            tables_global(&mut *self.module, self.b.func, &mut self.kernel_tables)?;
            Some(self.prologue_value(PrologueValue::KernelTables))
        } else {
            None
        };
        let r = emit_kernel(&mut self.b, fused, k, x, fallback, tables);
        if fallback.is_some() {
            // Another block: what was numbered in the one before is forgotten, as at
            // every switch.
            self.forget_block();
        }
        Ok(r)
    }
}
