//! The registration macro from another crate: a static descriptor submitted by path is
//! registered, and misuse does not compile. Each file of `tests/ui` fails with the error
//! recorded beside it (`TRYBUILD=overwrite` regenerates the `.stderr` files after a deliberate
//! change of the macro or of rustc's wording).

#[test]
fn registration_macro_misuse_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/*.rs");
}
