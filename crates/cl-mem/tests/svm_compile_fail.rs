//! Compile-fail proofs of the SVM claims (`tests/ui/svm_*.rs`, one claim per file; the expected
//! errors are the `.stderr` files): maps, map slices and buffer views cannot outlive their SVM
//! array; a map excludes every other use (kernel arguments included); coarse-grain SVM has no
//! unmapped host access; an owned allocation is not `Clone`.

#[test]
fn svm_claims_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/svm_*.rs");
}
