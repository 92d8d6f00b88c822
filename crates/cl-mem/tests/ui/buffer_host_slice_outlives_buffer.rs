// The host array of a USE_HOST_PTR buffer is bound to the buffer's borrow.
use cl_mem::{Buffer, Context, MemFlags};

fn main() {}

#[allow(dead_code)]
fn check(context: Context) {
    let slice;
    {
        let buf = Buffer::use_host_memory(&context, MemFlags::READ_WRITE, vec![0u32; 16]).unwrap();
        slice = unsafe { buf.host_slice::<u32>() }.unwrap();
    }
    let _ = slice[0];
}
