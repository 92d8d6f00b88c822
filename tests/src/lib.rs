//! The device test harness (shell).
