//! Reverse-mode differentiation of Source terms (the paper's direct macro and UNF pipeline).
