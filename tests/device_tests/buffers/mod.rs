//! Buffers: creation forms, info, sub-buffers, migration, pinned memory and ndarrays, and the
//! bad-input matrix every buffer call must refuse with a typed error before the driver.

mod bad_input;
mod creation;
