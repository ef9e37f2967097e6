//! The generated code as text, to read when tuning the lowering: Cranelift IR before
//! Cranelift's optimizations, and the host's assembly after them.

use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module};
use unfad_syntax::{Arena, Func};

use crate::codegen::{build, host_isa, new_module, type_in_place, typed, ENTRY};
use crate::error::JitError;
use crate::lower::kernel_functions_text;
use crate::parallel::{build_entry, build_parts, cores, crossing_lens, merge_results};
use crate::split;

/// The Cranelift IR of `func`, as text (before Cranelift's optimizations).
pub fn clif_text(arena: &Arena, func: &Func) -> Result<String, JitError> {
    let arena = typed(arena, func)?;
    let mut module = new_module()?;
    let mut ctx = module.make_context();
    build(&arena, func, &mut module, &mut ctx, ENTRY)?;
    Ok(format!(
        "{}{}",
        ctx.func.display(),
        kernel_functions_text(&mut module)?
    ))
}

/// The Cranelift IR [`compile_parallel`](crate::compile_parallel) compiles: [`clif_text`] of
/// the whole term, or, when it cuts the term in two, of the two parts and the entry that
/// runs them.
pub fn clif_text_parallel(arena: &mut Arena, func: &Func) -> Result<String, JitError> {
    if cores() >= 2 {
        type_in_place(arena, func)?;
        if let Some(parts) = split::split(arena, func) {
            // A part that cannot be compiled alone (see `compile_parallel`): the whole.
            match parts_text(arena, &parts) {
                Ok(Some(text)) => return Ok(text),
                Ok(None) | Err(JitError::Unsupported(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    clif_text(arena, func)
}

/// The two parts of a cut and the entry running them, if they fit each other.
fn parts_text(arena: &Arena, parts: &split::Parts) -> Result<Option<String>, JitError> {
    let mut module = new_module()?;
    let [mut c1, mut c2, mut c0] = [(); 3].map(|()| module.make_context());
    let ((id1, b1), (id2, b2)) = build_parts(arena, parts, &mut module, &mut c1, &mut c2)?;
    let lens = crossing_lens(&b1, &b2);
    let results = lens
        .as_ref()
        .and_then(|l| merge_results(&b1, &b2, parts, l.len()));
    let (Some(lens), Some(results)) = (lens, results) else {
        return Ok(None);
    };
    build_entry(
        &mut module,
        &mut c0,
        [id1, id2],
        [&b1, &b2],
        &lens,
        &results,
    )?;
    Ok(Some(format!(
        "; the first part (compiled on one thread)\n{}\n\n\
         ; the second part (compiled on another)\n{}\n\n\
         ; the entry: the first part, then the second\n{}{}",
        c1.func.display(),
        c2.func.display(),
        c0.func.display(),
        kernel_functions_text(&mut module)?
    )))
}

/// The machine code of `func` for the host, as assembly text (after Cranelift's
/// optimizations and register allocation): what to read when tuning the lowering.
pub fn asm_text(arena: &Arena, func: &Func) -> Result<String, JitError> {
    let arena = typed(arena, func)?;
    let isa = host_isa()?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut ctx = module.make_context();
    build(&arena, func, &mut module, &mut ctx, ENTRY)?;
    ctx.set_disasm(true);
    let mut plane = cranelift_codegen::control::ControlPlane::default();
    let code = ctx
        .compile(module.isa(), &mut plane)
        .map_err(|e| JitError::Codegen(format!("{:?}", e.inner)))?;
    Ok(code.vcode.clone().unwrap_or_default())
}
