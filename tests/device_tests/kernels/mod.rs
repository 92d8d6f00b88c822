//! Kernels: their arguments (checked against the declared parameters before the driver sees them) and
//! their launches (every argument set, local memory, what a call keeps alive).

mod arguments;
mod launch;
