//! Criterion benches (shell).
