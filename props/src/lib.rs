//! The properties behind the fuzz targets, one module per target, each a `check(&[u8])` that
//! decodes its input from raw bytes and panics when a property fails.
//!
//! Two drivers call the same functions, so each property exists once:
//!
//! - `fuzz/` (cargo-fuzz, nightly): `fuzz_target!(|data: &[u8]| cl_props::<target>::check(data))`,
//!   run for minutes or hours (docs/TESTING.md, "Fuzzing").
//! - `tests/` here (stable, part of `cargo test --workspace` and so of `cargo xtask ci`): every
//!   file of `fuzz/corpus/<target>/` (the seeds and each crash turned regression), then a few
//!   thousand inputs from a seeded generator, in seconds.
//!
//! A property is a statement about values, not only "does not panic": every error is one of the
//! documented typed variants, and accepted inputs agree with a `u128` (or plain) reference model.
//!
//! | module | target | code under test |
//! | --- | --- | --- |
//! | [`select`] | `select` | `cl_raw::select::Selector::{parse, resolve}` (`cl_mem::Selector`) |
//! | [`trace`] | `trace` | `cl_pool::trace::{from_json_lines, to_json_lines, replay}` |
//! | [`conflict`] | `conflict` | `cl_characterize::why_not_local_access_conflict_free` |
//! | [`profile`] | `profile` | `DeviceProfile` JSON, `DeviceReport::new` |
//! | [`rect`] | `rect` | rectangle sides, `check_range`, range resolution, host ranges |
//! | [`image`] | `image` | `ImageDesc::from_shape`, `ImageFormat::itemsize`, coordinates, host bytes, layouts, repacking |

pub mod conflict;
pub mod image;
pub mod input;
pub mod profile;
pub mod rect;
pub mod select;
pub mod trace;

/// A target's check: decodes the input, panics when a property fails.
pub type Check = fn(&[u8]);

/// Every target: its name (the directory under `fuzz/corpus/` and the fuzz target) and check.
pub const TARGETS: &[(&str, Check)] = &[
    ("select", select::check),
    ("trace", trace::check),
    ("conflict", conflict::check),
    ("profile", profile::check),
    ("rect", rect::check),
    ("image", image::check),
];
