//! Compile-fail proofs of the image claims (`tests/ui/image_*.rs`, one claim per
//! file; the expected errors are the `.stderr` files): mapped memory is reachable only inside
//! `Image::map`'s closure, and typed array reads take image element types only.

#[test]
fn image_map_lifetime_claims_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/image_*.rs");
}
