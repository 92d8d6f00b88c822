// clSetKernelArg is not thread-safe on one kernel object: a Kernel cannot be shared.
fn needs_sync<T: Sync>() {}

fn main() {
    needs_sync::<cl_mem::Kernel>();
}
