//! CUDA modules (runtime ABI 1.2): loading onto a GPU, running, profiling, and
//! passing device memory between executors without copies. Each test skips,
//! saying so, when the runtime sees no GPU. The suite (tools/ci/suites/rust.sh)
//! runs them against the fake CUDA driver on machines without one
//! (bindings/testdata/cuda_env.sh).
mod common;

use agate::{cuda_device_count, Device, Module, Status};

/// Whether a GPU (or the fake driver) is there; says why not when not.
fn have_gpu(test: &str) -> bool {
    match cuda_device_count() {
        Ok(count) if count > 0 => true,
        Ok(_) => {
            eprintln!("{}: skipped: the CUDA driver sees no GPU", test);
            false
        }
        Err(e) => {
            eprintln!("{}: skipped: no GPU ({})", test, e);
            false
        }
    }
}

#[test]
fn a_cuda_module_runs_on_the_gpu() {
    if !have_gpu("a_cuda_module_runs_on_the_gpu") {
        return;
    }
    let module = Module::from_file_on_device(common::cuda_add_path(), 0).unwrap();
    assert_eq!(module.device(), Device::Cuda(0));
    let mut executor = module.executor().unwrap();
    let x = common::cuda_input(1.0);
    executor.set_input_slice("x", &[256], &x).unwrap();
    for _ in 0..3 {
        executor.run().unwrap();
        assert_eq!(executor.output("y").unwrap().to_vec::<f32>().unwrap(), common::cuda_add_reference(&x));
    }
    let profile = executor.run_profiled().unwrap();
    assert_eq!(profile.len(), 2);
    assert!(profile.iter().all(|(kernel, _)| kernel == "agate_cuda_add"), "{:?}", profile);
    assert_eq!(executor.output("y").unwrap().to_vec::<f32>().unwrap(), common::cuda_add_reference(&x));
}

#[test]
fn device_memory_passes_between_executors_without_copies() {
    if !have_gpu("device_memory_passes_between_executors_without_copies") {
        return;
    }
    let module = Module::from_file_on_device(common::cuda_add_path(), 0).unwrap();
    let mut first = module.executor().unwrap();
    let mut second = module.executor().unwrap();
    let target = module.executor().unwrap();
    let x = common::cuda_input(2.0);
    first.set_input_slice("x", &[256], &x).unwrap();
    first.run().unwrap();
    let y = common::cuda_add_reference(&x);
    // SAFETY: first's output lives as long as `first`, which outlives second's runs,
    // and target's output buffer likewise.
    unsafe {
        second.set_input_device_ptr("x", first.output_device_ptr("y").unwrap()).unwrap();
        second.set_output_device_ptr("y", target.output_device_ptr("y").unwrap()).unwrap();
    }
    second.run().unwrap();
    let z = common::cuda_add_reference(&y);
    assert_eq!(second.output("y").unwrap().to_vec::<f32>().unwrap(), z);
    assert_eq!(target.output("y").unwrap().to_vec::<f32>().unwrap(), z, "written into target's memory");
    assert_eq!(second.output_device_ptr("y").unwrap(), target.output_device_ptr("y").unwrap());
    second.reset_output("y").unwrap();
    assert_ne!(second.output_device_ptr("y").unwrap(), target.output_device_ptr("y").unwrap());
    // Wrong memory is refused, naming the input; the executor keeps its binding.
    // SAFETY: the runtime refuses the address before anything reads it.
    let e = unsafe { second.set_input_device_ptr("x", 16) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
    assert!(e.message().contains("input 0 'x'"), "{}", e);
    second.run().unwrap();
    assert_eq!(second.output("y").unwrap().to_vec::<f32>().unwrap(), z);
}

#[test]
fn devices_that_do_not_exist_or_do_not_fit_are_refused() {
    if have_gpu("devices_that_do_not_exist_or_do_not_fit_are_refused") {
        let e = Module::from_file_on_device(common::cuda_add_path(), 1000).unwrap_err();
        assert_eq!(e.status(), Status::OutOfRange, "{}", e);
        assert!(e.message().contains("CUDA device 1000 does not exist"), "{}", e);
    } else {
        let e = Module::from_file_on_device(common::cuda_add_path(), 0).unwrap_err();
        assert_eq!(e.status(), Status::Unavailable, "{}", e);
    }
    // CPU modules run on the host only, and have no device memory.
    let e = Module::from_file_on_device(common::add_relu_path(), 1).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
    let module = Module::from_file_on_device(common::add_relu_path(), 0).unwrap();
    assert_eq!(module.device(), Device::Cpu);
    let executor = module.executor().unwrap();
    assert_eq!(executor.output_device_ptr("y").unwrap_err().status(), Status::Unsupported);
}
