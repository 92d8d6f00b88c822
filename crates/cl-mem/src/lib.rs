//! cl-mem (shell).
