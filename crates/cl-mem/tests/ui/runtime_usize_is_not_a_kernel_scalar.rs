// A kernel's size_t is CL_DEVICE_ADDRESS_BITS wide: usize is not Pod, pass u32 or u64.
fn set(k: &mut cl_mem::Kernel) -> cl_mem::Result<()> {
    k.set_arg(0, &1usize)?;
    Ok(())
}

fn main() {}
