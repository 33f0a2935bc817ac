//! src/sys.rs must be exactly what bindgen generates from the headers today.
use std::process::Command;

#[test]
fn committed_ffi_matches_the_headers() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/regenerate_ffi.sh");
    let output = Command::new(script)
        .arg("--check")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {} (needs bash, bindgen and rustfmt)", script, e));
    assert!(
        output.status.success(),
        "src/sys.rs differs from the headers (run bindings/rust/regenerate_ffi.sh):\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
