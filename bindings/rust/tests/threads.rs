//! One module shared by several threads, one executor per thread (the C API's
//! threading contract, which Module: Send + Sync and Executor: Send encode).
mod common;

use std::sync::Arc;
use std::thread;

use agate::Module;

const THREADS: usize = 8;
const RUNS: usize = 50;

fn run_many(module: &Module, thread_index: usize) {
    let mut executor = module.executor().unwrap();
    for run in 0..RUNS {
        let x = common::classifier_input(thread_index * RUNS + run);
        executor.set_input_slice("x", &[4, 8], &x).unwrap();
        executor.run().unwrap();
        let (logits, classes) = common::classifier_reference(&x);
        common::assert_close(executor.output("logits").unwrap().as_slice::<f32>().unwrap(), &logits);
        assert_eq!(executor.output("classes").unwrap().as_slice::<i32>().unwrap(), &classes[..]);
    }
}

#[test]
fn scoped_threads_share_one_module() {
    let module = Module::from_file(common::classifier_path()).unwrap();
    thread::scope(|s| {
        for t in 0..THREADS {
            let module = &module;
            s.spawn(move || run_many(module, t));
        }
    });
}

#[test]
fn spawned_threads_share_clones_and_errors_stay_per_thread() {
    let module = Arc::new(Module::from_file(common::add_relu_path()).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let module = module.as_ref().clone();
            thread::spawn(move || {
                let mut executor = module.executor().unwrap();
                for run in 0..RUNS {
                    // Every thread fails differently; each must see its own message.
                    let bad = format!("missing_{}_{}", t, run);
                    let e = executor.set_input_slice(&bad, &[2, 3], &[0.0f32; 6]).unwrap_err();
                    assert!(e.message().contains(&bad), "{}", e);
                    let a: Vec<f32> = (0..6).map(|i| (i as f32) - (t as f32)).collect();
                    executor.set_input_slice("a", &[2, 3], &a).unwrap();
                    executor.set_input_slice("b", &[2, 3], &[run as f32 / 10.0; 6]).unwrap();
                    executor.run().unwrap();
                    let y = executor.output("y").unwrap().to_vec::<f32>().unwrap();
                    common::assert_close(&y, &common::add_relu_reference(&a, &[run as f32 / 10.0; 6]));
                }
            })
        })
        .collect();
    drop(module); // the threads' clones keep it alive
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn an_executor_moves_to_another_thread() {
    let module = Module::from_file(common::classifier_path()).unwrap();
    let executor = module.executor().unwrap();
    let handle = thread::spawn(move || {
        let mut executor = executor;
        executor.set_input_slice("x", &[4, 8], &common::classifier_input(5)).unwrap();
        executor.run().unwrap();
        executor.output("classes").unwrap().to_vec::<i32>().unwrap()
    });
    assert_eq!(handle.join().unwrap(), common::classifier_reference(&common::classifier_input(5)).1);
}
