// `RawHandle` releases and counts references through the implementor's handles: a safe
// implementation could hand `release` a reference it does not own, so the trait needs `unsafe impl`.
use cl_mem::{Buffer, RawHandle};

struct Evil(Buffer);

impl RawHandle for Evil {
    type Raw = <Buffer as RawHandle>::Raw;
    fn object() -> cl_raw::object::Object {
        cl_raw::object::Object::Mem
    }
    fn as_raw(&self) -> Self::Raw {
        self.0.as_raw()
    }
    fn into_raw(self) -> Self::Raw {
        self.0.as_raw()
    }
    unsafe fn from_raw(raw: Self::Raw) -> cl_mem::Result<Self> {
        unsafe { Buffer::from_raw(raw) }.map(Evil)
    }
}

fn main() {}
