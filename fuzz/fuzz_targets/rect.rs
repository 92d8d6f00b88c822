//! Fuzz target `rect`: the properties of `cl_props::rect` (see that module for the input format
//! and what is checked).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cl_props::rect::check(data));
