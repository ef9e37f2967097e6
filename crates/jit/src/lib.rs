//! Lowering of first-order Target terms to Cranelift IR, and JIT compilation to native code.
