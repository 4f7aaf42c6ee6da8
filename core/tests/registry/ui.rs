//! Compile-time guarantees, checked from another crate: `submit_plugin!` takes only a
//! `Plugin + Default` type, misuse does not compile, and a plugin receives exactly the
//! dependency handles its `Deps` type declares. Each file of `tests/ui` fails with the error
//! recorded beside it (`TRYBUILD=overwrite` regenerates the `.stderr` files after a deliberate
//! change of the API or of rustc's wording). The intended use is `tests/submit.rs`, an ordinary
//! test: with compile-fail cases only, trybuild's own cargo (in `target/tests/trybuild`, with
//! flags of its own, so it cannot reuse the main build) runs `cargo check`, which compiles no
//! code of the dependencies but their build scripts and procedural macros.

#[test]
fn the_registration_macro_and_typed_dependencies_reject_misuse_at_compile_time() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
