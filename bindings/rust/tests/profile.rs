//! Profiling (runtime ABI 1.1): the plan's kernels and a timed run.
mod common;

use agate::{Module, Status};

#[test]
fn call_kernel_names_follow_the_plan() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    assert_eq!(module.num_calls().unwrap(), 2);
    assert_eq!(module.call_kernel_names().unwrap(), vec!["agate_fx_add".to_string(), "agate_fx_relu".to_string()]);
    assert_eq!(module.call_kernel_name(1).unwrap(), "agate_fx_relu");
    let e = module.call_kernel_name(2).unwrap_err();
    assert_eq!(e.status(), Status::OutOfRange, "{}", e);
    assert!(e.message().contains("call 2 of 2"), "{}", e);
}

#[test]
fn a_profiled_run_times_every_call_and_computes_what_run_does() {
    let module = Module::from_file(common::add_relu_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let a = [1.0f32, -2.0, 3.5, 0.0, -0.5, 4.0];
    let b = [0.5f32, 1.0, -4.0, 0.25, 0.25, -1.0];
    executor.set_input_slice("a", &[2, 3], &a).unwrap();
    executor.set_input_slice("b", &[2, 3], &b).unwrap();
    executor.run().unwrap();
    let plain = executor.output("y").unwrap().to_vec::<f32>().unwrap();
    for _ in 0..3 {
        let profile = executor.run_profiled().unwrap();
        let kernels: Vec<&str> = profile.iter().map(|(kernel, _)| kernel.as_str()).collect();
        assert_eq!(kernels, module.call_kernel_names().unwrap());
        assert!(profile.iter().map(|(_, ns)| ns).sum::<u64>() > 0, "{:?}", profile);
        assert_eq!(executor.output("y").unwrap().to_vec::<f32>().unwrap(), plain);
    }
    common::assert_close(&plain, &common::add_relu_reference(&a, &b));
}

#[test]
fn a_profiled_run_needs_every_input() {
    let module = Module::from_file(common::classifier_path()).unwrap();
    let mut executor = module.executor().unwrap();
    let e = executor.run_profiled().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
    assert!(e.message().contains("not bound"), "{}", e);
    let x = common::classifier_input(1);
    executor.set_input_slice("x", &[4, 8], &x).unwrap();
    let profile = executor.run_profiled().unwrap();
    assert_eq!(profile.len(), module.num_calls().unwrap() as usize);
    let (logits, _) = common::classifier_reference(&x);
    common::assert_close(&executor.output("logits").unwrap().to_vec::<f32>().unwrap(), &logits);
}
