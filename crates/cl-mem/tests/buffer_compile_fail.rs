//! Compile-fail proofs of the lifetime claims the buffer, transfer and map APIs make
//! (`tests/ui/buffer_*.rs`, one claim per file; the expected errors are the `.stderr` files).

#[test]
fn buffer_lifetime_claims_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/buffer_*.rs");
}
