//! Links libagate_runtime.so.
//!
//! Where from: AGATE_RUNTIME_LIB_DIR when set (tools/ci/suites/rust.sh sets it to
//! bindings/testdata/out/lib), else bindings/testdata/out/lib when it exists (a
//! checkout after bindings/testdata/prepare.sh), else the linker's default paths
//! (an installed runtime). The directory is also put in the rpath of this
//! crate's own tests and examples so they run without LD_LIBRARY_PATH; cargo
//! gives a dependency's link args to no other crate, so a program using agate
//! sets its own rpath or LD_LIBRARY_PATH, and its build script can read the
//! directory from DEP_AGATE_RUNTIME_LIB_DIR (the `links` metadata below).
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=AGATE_RUNTIME_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let staged = manifest.join("../testdata/out/lib");
    let dir = match env::var_os("AGATE_RUNTIME_LIB_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if staged.join("libagate_runtime.so").exists() => Some(staged),
        None => None,
    };
    if let Some(dir) = dir {
        let dir = dir.canonicalize().unwrap_or(dir);
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        println!("cargo:lib_dir={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=agate_runtime");
}
