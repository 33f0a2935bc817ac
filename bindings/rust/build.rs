//! Finds and links agate's runtime library (libagate_runtime).
//!
//! Where from, first match wins:
//!   1. AGATE_RUNTIME_DIR: an install prefix (`./agate install --prefix DIR`): DIR/lib;
//!   2. AGATE_RUNTIME_LIB_DIR: a folder holding the library (tools/ci/suites/rust.sh sets it to
//!      bindings/testdata/out/lib, the shared library staged by bindings/testdata/prepare.sh);
//!   3. pkg-config's `agate-runtime` (an installed runtime; PKG_CONFIG_PATH as usual);
//!   4. bindings/testdata/out/lib when it exists (a checkout after prepare.sh);
//!   5. the linker's default paths.
//! How: AGATE_RUNTIME_LINK=static|dylib; by default static when the folder holds
//! libagate_runtime.a (an installed runtime does), so a program needs no library at run time,
//! else dynamic. A static link adds the runtime's own dependencies (pkg-config's
//! Libs.private: libsodium, libdl, libpthread, libstdc++, libm). A dynamic link puts the folder
//! in the rpath of this crate's own tests and examples only; cargo gives a dependency's link args
//! to no other crate, so a program linking dynamically sets its own rpath or LD_LIBRARY_PATH
//! (its build script finds the folder in DEP_AGATE_RUNTIME_LIB_DIR, the `links` metadata).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime's own dependencies when it is linked statically (agate-runtime.pc's Libs.private).
const PRIVATE_LIBS: &[&str] = &["sodium", "dl", "pthread", "stdc++", "m"];

fn pkg_config(args: &[&str]) -> Option<String> {
    let output = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(args)
        .arg("agate-runtime")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The folder to link from, and whether pkg-config found it.
fn library_dir() -> (Option<PathBuf>, bool) {
    if let Some(prefix) = env::var_os("AGATE_RUNTIME_DIR") {
        return (Some(PathBuf::from(prefix).join("lib")), false);
    }
    if let Some(dir) = env::var_os("AGATE_RUNTIME_LIB_DIR") {
        return (Some(PathBuf::from(dir)), false);
    }
    if let Some(dir) = pkg_config(&["--variable=libdir"]) {
        if !dir.is_empty() {
            return (Some(PathBuf::from(dir)), true);
        }
    }
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let staged = manifest.join("../testdata/out/lib");
    if staged.join("libagate_runtime.so").exists() {
        return (Some(staged), false);
    }
    (None, false)
}

fn private_libs(from_pkg_config: bool) -> Vec<String> {
    if from_pkg_config {
        if let Some(flags) = pkg_config(&["--static", "--libs-only-l"]) {
            return flags
                .split_whitespace()
                .filter_map(|flag| flag.strip_prefix("-l"))
                .filter(|lib| *lib != "agate_runtime")
                .map(str::to_string)
                .collect();
        }
    }
    PRIVATE_LIBS.iter().map(|lib| lib.to_string()).collect()
}

fn static_by_default(dir: Option<&Path>) -> bool {
    dir.map_or(false, |dir| dir.join("libagate_runtime.a").exists())
}

fn main() {
    for var in ["AGATE_RUNTIME_DIR", "AGATE_RUNTIME_LIB_DIR", "AGATE_RUNTIME_LINK", "PKG_CONFIG_PATH", "PKG_CONFIG"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let (dir, from_pkg_config) = library_dir();
    let dir = dir.map(|dir| dir.canonicalize().unwrap_or(dir));
    let link_static = match env::var("AGATE_RUNTIME_LINK").as_deref() {
        Ok("static") => true,
        Ok("dylib") => false,
        Ok(other) => panic!("AGATE_RUNTIME_LINK is '{other}'; use static or dylib"),
        Err(_) => static_by_default(dir.as_deref()),
    };
    if let Some(dir) = &dir {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:lib_dir={}", dir.display());
    }
    if link_static {
        println!("cargo:rustc-link-lib=static=agate_runtime");
        for lib in private_libs(from_pkg_config) {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    } else {
        if let Some(dir) = &dir {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
        println!("cargo:rustc-link-lib=dylib=agate_runtime");
    }
}
