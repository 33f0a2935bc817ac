//! Kernels written to a caller-named directory (runtime ABI 1.4: Android before API 30).
//! Its own test binary: the setting is process-wide.
mod common;

use agate::{Module, Status};

fn kernel_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("agate-kernels-"))
        .count()
}

#[test]
fn a_kernel_directory_holds_each_loaded_modules_kernels_until_it_is_dropped() {
    let dir = std::env::temp_dir().join(format!("agate-rust-kernel-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    agate::set_kernel_dir(Some(&dir)).unwrap();
    let module = Module::from_file(common::add_relu_path()).unwrap();
    assert_eq!(kernel_files(&dir), 1);
    let mut executor = module.executor().unwrap();
    executor.set_input_slice("a", &[2, 3], &[1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0]).unwrap();
    executor.set_input_slice("b", &[2, 3], &[0.0f32; 6]).unwrap();
    executor.run().unwrap();
    drop(executor);
    drop(module);
    assert_eq!(kernel_files(&dir), 0);

    let missing = dir.join("missing");
    let error = agate::set_kernel_dir(Some(&missing)).unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
    assert!(error.message().contains("is not a directory"), "{}", error.message());
    agate::set_kernel_dir(None).unwrap();
    let module = Module::from_file(common::add_relu_path()).unwrap();
    assert_eq!(kernel_files(&dir), 0);
    drop(module);
    std::fs::remove_dir(&dir).unwrap();
}
