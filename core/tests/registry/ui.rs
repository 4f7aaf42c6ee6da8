//! Compile-time guarantees, checked from another crate: `submit_plugin!` takes a `Plugin +
//! Default` type and registers it, misuse does not compile, and a plugin receives exactly the
//! dependency handles its `Deps` type declares. Each file of `tests/ui` fails with the error
//! recorded beside it (`TRYBUILD=overwrite` regenerates the `.stderr` files after a deliberate
//! change of the API or of rustc's wording).

#[test]
fn the_registration_macro_and_typed_dependencies_reject_misuse_at_compile_time() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/*.rs");
}
