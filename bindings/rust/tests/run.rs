//! Running the fixture modules and checking their numbers.
mod common;

use agate::{ExecutorOptions, Module, TensorView};

#[test]
fn add_relu_computes_relu_of_the_sum() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let a = [1.0f32, -2.0, 3.5, 0.0, -0.5, 4.0];
    let b = [0.5f32, 1.0, -4.0, 0.25, 0.25, -1.0];
    executor.set_input("a", &TensorView::new(&[2, 3], &a).unwrap()).unwrap();
    executor.set_input_slice("b", &[2, 3], &b).unwrap();
    executor.run().unwrap();
    let y = executor.output("y").unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    common::assert_close(y.as_slice::<f32>().unwrap(), &common::add_relu_reference(&a, &b));
}

#[test]
fn classifier_computes_logits_and_classes_over_several_runs() {
    let bytes = std::fs::read(common::classifier_path()).unwrap();
    let module = Module::from_bytes(&bytes).unwrap();
    let mut executor = module.executor_with(ExecutorOptions { num_threads: 1 }).unwrap();
    for seed in 0..3 {
        let x = common::classifier_input(seed);
        executor.set_input_slice("x", &[4, 8], &x).unwrap();
        executor.run().unwrap();
        let (logits, classes) = common::classifier_reference(&x);
        common::assert_close(&executor.output("logits").unwrap().to_vec::<f32>().unwrap(), &logits);
        assert_eq!(executor.output("classes").unwrap().to_vec::<i32>().unwrap(), classes);
    }
}

#[test]
fn inputs_are_copied_so_the_caller_may_reuse_its_buffer() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let mut a = vec![1.0f32; 6];
    executor.set_input_slice("a", &[2, 3], &a).unwrap();
    a.iter_mut().for_each(|v| *v = -100.0);
    drop(a);
    executor.set_input_slice("b", &[2, 3], &[2.0f32; 6]).unwrap();
    executor.run().unwrap();
    assert_eq!(executor.output("y").unwrap().to_vec::<f32>().unwrap(), vec![3.0f32; 6]);
}

#[test]
fn an_executor_keeps_its_module_alive() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    drop(module);
    executor.set_input_slice("a", &[2, 3], &[1.0f32; 6]).unwrap();
    executor.set_input_slice("b", &[2, 3], &[-3.0f32; 6]).unwrap();
    executor.run().unwrap();
    assert_eq!(executor.output("y").unwrap().to_vec::<f32>().unwrap(), vec![0.0f32; 6]);
    assert_eq!(executor.arena_bytes().unwrap(), 24);
}
