//! Shared by the integration tests: where the fixture modules are and the
//! numbers they must compute (bindings/testdata/fixture_kernels.h).
#![allow(dead_code)]

use std::path::PathBuf;

/// bindings/testdata/out/modules, or AGATE_TESTDATA_DIR.
pub fn testdata_dir() -> PathBuf {
    let dir = match std::env::var_os("AGATE_TESTDATA_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/out/modules"),
    };
    assert!(
        dir.join("add_relu.agm").exists(),
        "no fixture modules in {}: run bindings/testdata/prepare.sh (or set AGATE_TESTDATA_DIR)",
        dir.display()
    );
    dir
}

pub fn add_relu_path() -> PathBuf {
    testdata_dir().join("add_relu.agm")
}

pub fn classifier_path() -> PathBuf {
    testdata_dir().join("classifier.agm")
}

/// The CUDA test module (runtime_minimal/cuda/testing/cuda_test_modules.h):
/// y = (x + c) + x on float32[256], c[i] = i / 2.
pub fn cuda_add_path() -> PathBuf {
    testdata_dir().join("cuda_add.agm")
}

pub fn cuda_input(seed: f32) -> Vec<f32> {
    (0..256).map(|i| seed + (i % 7) as f32 - 3.0).collect()
}

pub fn cuda_add_reference(x: &[f32]) -> Vec<f32> {
    x.iter().enumerate().map(|(i, v)| (v + i as f32 * 0.5) + v).collect()
}

pub const BATCH: usize = 4;
pub const FEATURES: usize = 8;
pub const CLASSES: usize = 3;

pub fn add_relu_reference(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| (x + y).max(0.0)).collect()
}

/// logits = x * W + bias and the first argmax of each row.
pub fn classifier_reference(x: &[f32]) -> (Vec<f32>, Vec<i32>) {
    let w = |k: usize, j: usize| (((3 * k + 5 * j) % 7) as f32 - 3.0) / 4.0;
    let bias = |j: usize| (j as f32 - 1.0) / 2.0;
    let mut logits = vec![0.0f32; BATCH * CLASSES];
    let mut classes = vec![0i32; BATCH];
    for r in 0..BATCH {
        for j in 0..CLASSES {
            let mut sum = bias(j);
            for k in 0..FEATURES {
                sum += x[r * FEATURES + k] * w(k, j);
            }
            logits[r * CLASSES + j] = sum;
        }
        let row = &logits[r * CLASSES..(r + 1) * CLASSES];
        let mut best = 0;
        for j in 1..CLASSES {
            if row[j] > row[best] {
                best = j;
            }
        }
        classes[r] = best as i32;
    }
    (logits, classes)
}

/// A deterministic classifier input that differs per seed.
pub fn classifier_input(seed: usize) -> Vec<f32> {
    (0..BATCH * FEATURES).map(|i| (((i * 7 + seed * 13) % 11) as f32 - 5.0) / 3.0).collect()
}

pub fn assert_close(actual: &[f32], expected: &[f32]) {
    assert_eq!(actual.len(), expected.len());
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= 1e-5 * (1.0 + e.abs()), "element {}: {} != {}", i, a, e);
    }
}

/// add_relu per item of a batch N in 1..5 (module format 2.0, variants of 1 and 2 items).
pub fn batch_add_relu_path() -> PathBuf {
    testdata_dir().join("batch_add_relu.agm")
}

/// add_relu over a padded sequence: a, b and y float32[2,S], S in 1..3 on axis 1 (module format 3.0).
pub fn padded_add_relu_path() -> PathBuf {
    testdata_dir().join("padded_add_relu.agm")
}
