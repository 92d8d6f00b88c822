//! The OpenCL runtime: platforms, devices, contexts, queues, events, programs, kernels and device
//! selection. Nothing here knows a memory object's type: kernels reach the memory behind their
//! arguments only through [`crate::runtime::track`]'s `ArgMemory` seam (checked by `xtask/tests/module_graph.rs`).

pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod event;
pub(crate) mod extra;
pub(crate) mod kernel;
pub(crate) mod live;
pub(crate) mod partition;
pub(crate) mod platform;
pub(crate) mod program;
pub(crate) mod queue;
pub(crate) mod quirks;
pub(crate) mod select;
pub(crate) mod staging;
pub(crate) mod track;
pub(crate) mod worker;
