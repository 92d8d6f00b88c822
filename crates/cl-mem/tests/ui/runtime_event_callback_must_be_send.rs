// Event callbacks run on another thread (the callback worker): the closure must be Send.
use std::rc::Rc;

fn register(ev: &cl_mem::Event) -> cl_mem::Result<()> {
    let local = Rc::new(1);
    ev.on(cl_mem::CallbackOn::Complete, move |_status| {
        let _ = &local;
    })
}

fn main() {}
