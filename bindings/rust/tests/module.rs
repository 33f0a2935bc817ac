//! Loading modules and reading what they declare.
mod common;

use agate::{DType, Module};

#[test]
fn loads_from_file_and_lists_inputs_and_outputs() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    assert!(module.target().starts_with("llvm"), "{}", module.target());
    let names: Vec<&str> = module.inputs().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let y = &module.outputs()[0];
    assert_eq!(y.name, "y");
    assert_eq!(y.dtype, DType::F32);
    assert_eq!(y.shape, vec![2, 3]);
    assert_eq!(y.bytes, 24);
    assert_eq!(y.to_string(), "y: float32[2, 3]");
    assert_eq!(module.input("b").unwrap().shape, vec![2, 3]);
    assert!(module.input("y").is_none());
}

#[test]
fn loads_from_memory_with_mixed_output_dtypes() {
    let bytes = std::fs::read(common::classifier_path()).unwrap();
    let module = Module::from_bytes(&bytes).unwrap();
    drop(bytes); // the runtime copied them
    assert_eq!(module.inputs()[0].shape, vec![4, 8]);
    let outputs: Vec<(String, DType, Vec<i64>)> =
        module.outputs().iter().map(|t| (t.name.clone(), t.dtype, t.shape.clone())).collect();
    assert_eq!(
        outputs,
        vec![("logits".to_string(), DType::F32, vec![4, 3]), ("classes".to_string(), DType::I32, vec![4])]
    );
}

#[test]
fn reports_the_runtime_abi_and_thread_pool() {
    assert_eq!(agate::runtime_abi_version() >> 16, 1);
    assert!(agate::num_threads().unwrap() >= 1);
}
