//! Runs the demo module through the agate crate and compares its output with PyTorch's.
//! Usage: agate_rust_demo MODULE INPUT EXPECTED (raw float32: 3x32x32 in, 10 out).
use std::process::ExitCode;

fn floats(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: agate_rust_demo MODULE INPUT EXPECTED");
        return ExitCode::from(2);
    }
    let (input, expected) = (floats(&args[2]), floats(&args[3]));
    let module = agate::Module::from_file(&args[1]).expect("load the module");
    let input_name = module.inputs()[0].name.clone();
    let output_name = module.outputs()[0].name.clone();
    let mut executor = module.executor().expect("create an executor");
    executor.set_input_slice(&input_name, &[1, 3, 32, 32], &input).expect("set the input");
    executor.run().expect("run");
    let got: Vec<f32> = executor.output(&output_name).expect("output").to_vec().expect("float32 output");
    for (i, (g, e)) in got.iter().zip(expected.iter()).enumerate() {
        if (g - e).abs() > 1e-4 + 1e-4 * e.abs() {
            eprintln!("output[{i}] = {g}, PyTorch {e}");
            return ExitCode::FAILURE;
        }
    }
    if got.len() != expected.len() {
        eprintln!("{} outputs, PyTorch {}", got.len(), expected.len());
        return ExitCode::FAILURE;
    }
    println!("rust demo: {} outputs match PyTorch (runtime ABI {:#x})", got.len(), agate::runtime_abi_version());
    ExitCode::SUCCESS
}
