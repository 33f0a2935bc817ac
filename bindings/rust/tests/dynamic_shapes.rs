//! A module with a symbolic batch dimension (runtime ABI 1.5): one executor run at two batch
//! sizes, outputs read at their run-time shapes, bounds exposed, an out-of-bounds batch refused.
mod common;

use agate::{DimKind, Module, Status};

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let a: Vec<f32> = (0..n * 6).map(|i| (i as f32) * 0.5 - 3.0).collect();
    let b: Vec<f32> = (0..n * 6).map(|i| 1.0 - (i % 4) as f32).collect();
    (a, b)
}

#[test]
fn batch_module_runs_at_two_sizes_with_run_time_output_shapes() {
    let module = Module::from_file(common::batch_add_relu_path()).unwrap();
    assert_eq!(module.inputs()[0].shape, vec![5, 2, 3]); // upper bounds
    let dim = module.input_dim("a", 0).unwrap();
    assert_eq!(dim.kind, DimKind::Symbolic);
    assert_eq!((dim.min, dim.max), (1, 5));
    assert_eq!(dim.symbol.as_deref(), Some("N"));
    assert_eq!(module.output_dim("y", 1).unwrap().kind, DimKind::Static);
    let mut executor = module.executor().unwrap();
    for n in [3usize, 1] {
        let (a, b) = inputs(n);
        let shape = [n as i64, 2, 3];
        executor.set_input_slice("a", &shape, &a).unwrap();
        executor.set_input_slice("b", &shape, &b).unwrap();
        executor.run().unwrap();
        let y = executor.output("y").unwrap();
        assert_eq!(y.shape(), &shape);
        common::assert_close(y.as_slice::<f32>().unwrap(), &common::add_relu_reference(&a, &b));
    }
    let (a, _) = inputs(6);
    let err = executor.set_input_slice("a", &[6, 2, 3], &a).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("has extent 6 on axis 0 (symbol N), outside its bounds 1..5"), "{}", err.message());
}

/// A module with a padded symbol on axis 1 (module format 3.0, a sequence length): the runtime pads
/// the inputs to the compiled extent and returns the output at the run's.
#[test]
fn padded_module_runs_at_two_lengths_on_a_later_axis() {
    let module = Module::from_file(common::padded_add_relu_path()).unwrap();
    let dim = module.input_dim("a", 1).unwrap();
    assert_eq!(dim.kind, DimKind::Symbolic);
    assert_eq!((dim.min, dim.max), (1, 3));
    assert_eq!(dim.symbol.as_deref(), Some("S"));
    let mut executor = module.executor().unwrap();
    for n in [2usize, 3, 1] {
        let a: Vec<f32> = (0..2 * n).map(|i| (i as f32) * 0.75 - 1.0).collect();
        let b: Vec<f32> = (0..2 * n).map(|i| 1.0 - (i % 3) as f32).collect();
        let shape = [2, n as i64];
        executor.set_input_slice("a", &shape, &a).unwrap();
        executor.set_input_slice("b", &shape, &b).unwrap();
        executor.run().unwrap();
        let y = executor.output("y").unwrap();
        assert_eq!(y.shape(), &shape);
        common::assert_close(y.as_slice::<f32>().unwrap(), &common::add_relu_reference(&a, &b));
    }
    let err = executor.set_input_slice("a", &[2, 4], &[0.0f32; 8]).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("has extent 4 on axis 1 (symbol S), outside its bounds 1..3"), "{}", err.message());
}
