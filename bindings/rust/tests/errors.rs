//! Every failure surfaces as an Error with the runtime's status and message.
mod common;

use agate::{Module, Status};

#[test]
fn missing_file_is_not_found_and_names_the_path() {
    let e = Module::from_file("/nonexistent/dir/model.agm").unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert_eq!(e.code(), 2);
    assert!(e.message().contains("/nonexistent/dir/model.agm"), "{}", e);
}

#[test]
fn corrupt_bytes_are_refused() {
    let bytes = std::fs::read(common::add_relu_path()).unwrap();
    let truncated = Module::from_bytes(&bytes[..bytes.len() / 2]).unwrap_err();
    assert_eq!(truncated.status(), Status::Corrupt, "{}", truncated);
    assert!(!truncated.message().is_empty());
    let garbage: Vec<u8> = (0..256u32).map(|i| (i * 37 % 251) as u8).collect();
    assert_eq!(Module::from_bytes(&garbage).unwrap_err().status(), Status::Corrupt);
    assert_eq!(Module::from_bytes(&[]).unwrap_err().status(), Status::Corrupt);
}

#[test]
fn corrupt_file_is_refused() {
    let path = std::env::temp_dir().join(format!("agate-rust-corrupt-{}.agm", std::process::id()));
    std::fs::write(&path, b"this is not an agate module, just some bytes").unwrap();
    let e = Module::from_file(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(e.status(), Status::Corrupt, "{}", e);
}

#[test]
fn wrong_input_name_is_not_found() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let e = executor.set_input_slice("c", &[2, 3], &[0.0f32; 6]).unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().contains("'c'"), "{}", e);
    assert_eq!(executor.output("z").unwrap_err().status(), Status::NotFound);
}

#[test]
fn wrong_shape_is_an_invalid_argument_naming_the_input() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let e = executor.set_input_slice("a", &[3, 2], &[0.0f32; 6]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("'a'"), "{}", e);
    let e = executor.set_input_slice("b", &[6], &[0.0f32; 6]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
}

#[test]
fn wrong_dtype_is_an_invalid_argument() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let e = executor.set_input_slice("a", &[2, 3], &[0i32; 6]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("'a'"), "{}", e);
    let e = executor.set_input_slice("a", &[2, 3], &[0.0f64; 6]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
}

#[test]
fn running_with_an_unbound_input_fails() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    executor.set_input_slice("a", &[2, 3], &[1.0f32; 6]).unwrap();
    let e = executor.run().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("'b'"), "{}", e);
}

#[test]
fn a_failed_set_input_keeps_the_previous_value() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    executor.set_input_slice("a", &[2, 3], &[1.0f32; 6]).unwrap();
    executor.set_input_slice("b", &[2, 3], &[1.0f32; 6]).unwrap();
    assert!(executor.set_input_slice("a", &[6], &[9.0f32; 6]).is_err());
    executor.run().unwrap();
    assert_eq!(executor.output("y").unwrap().to_vec::<f32>().unwrap(), vec![2.0f32; 6]);
}

#[test]
fn reading_an_output_as_the_wrong_type_fails() {
    let module = Module::from_file(common::classifier_path()).unwrap();
    let mut executor = module.executor().unwrap();
    executor.set_input_slice("x", &[4, 8], &common::classifier_input(0)).unwrap();
    executor.run().unwrap();
    let e = executor.output("classes").unwrap().to_vec::<f32>().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
}

#[test]
fn a_negative_thread_count_is_refused() {
    assert_eq!(agate::set_num_threads(-1).unwrap_err().status(), Status::InvalidArgument);
}
