//! cl-raw (shell).
