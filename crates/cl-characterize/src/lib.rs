//! cl-characterize (shell).
