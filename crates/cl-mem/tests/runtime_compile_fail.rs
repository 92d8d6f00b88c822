//! Compile-fail proofs of the runtime core's claims (`tests/ui/runtime_*.rs`, one claim per file;
//! the expected errors are the `.stderr` files): a kernel is not `Clone` (one kernel object, one
//! set of arguments), event callbacks must be `Send`, `RawHandle` needs an `unsafe impl`, and `usize` is not a
//! kernel scalar (a kernel's `size_t` width is the device's).

#[test]
fn runtime_claims_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/runtime_*.rs");
}
