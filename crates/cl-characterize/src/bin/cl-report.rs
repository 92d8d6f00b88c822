//! The device report (being written).
fn main() {}
