//! cl-pool (shell).
