package agate

import (
	"errors"
	"strings"
	"testing"
)

// CUDA modules (runtime ABI 1.2). Each test skips, saying so, when the runtime
// sees no GPU; the suite (tools/ci/suites/go.sh) runs them against the fake
// CUDA driver where no NVIDIA driver is installed (bindings/testdata/cuda_env.sh).

func requireGPU(t *testing.T) {
	t.Helper()
	n, err := CUDADeviceCount()
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	if n == 0 {
		t.Skip("the CUDA driver sees no GPU")
	}
}

// The CUDA test module: y = (x + c) + x on float32[256], c[i] = i / 2.
func cudaInput(seed float32) []float32 {
	x := make([]float32, 256)
	for i := range x {
		x[i] = seed + float32(i%7) - 3
	}
	return x
}

func cudaAddReference(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = (v + float32(i)*0.5) + v
	}
	return y
}

func outputFloats(t *testing.T, e *Executor, name string) []float32 {
	t.Helper()
	out, err := e.Output(name)
	if err != nil {
		t.Fatal(err)
	}
	y, err := out.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCUDAModuleRunsOnTheGPU(t *testing.T) {
	requireGPU(t)
	m, err := LoadFileOnDevice(fixture(t, "cuda_add.agm"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Device() != (Device{CUDA: true, ID: 0}) {
		t.Fatalf("device %+v", m.Device())
	}
	e, err := m.NewExecutor()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	x := cudaInput(1)
	if err := e.SetInput("x", float32Tensor(t, []int64{256}, x)); err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 3; run++ {
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if y := outputFloats(t, e, "y"); !equalFloats(y, cudaAddReference(x)) {
			t.Fatalf("run %d: y = %v", run, y[:8])
		}
	}
	calls, err := e.RunProfiled()
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Kernel != "agate_cuda_add" {
		t.Fatalf("profile %+v", calls)
	}
}

func TestCUDADeviceMemoryPassesBetweenExecutors(t *testing.T) {
	requireGPU(t)
	m, err := LoadFileOnDevice(fixture(t, "cuda_add.agm"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var executors [3]*Executor
	for i := range executors {
		if executors[i], err = m.NewExecutor(); err != nil {
			t.Fatal(err)
		}
		defer executors[i].Close()
	}
	first, second, target := executors[0], executors[1], executors[2]
	x := cudaInput(2)
	if err := first.SetInput("x", float32Tensor(t, []int64{256}, x)); err != nil {
		t.Fatal(err)
	}
	if err := first.Run(); err != nil {
		t.Fatal(err)
	}
	in, err := first.OutputDevicePtr("y")
	if err != nil {
		t.Fatal(err)
	}
	out, err := target.OutputDevicePtr("y")
	if err != nil {
		t.Fatal(err)
	}
	if err := second.SetInputDevicePtr("x", in); err != nil {
		t.Fatal(err)
	}
	if err := second.SetOutputDevicePtr("y", out); err != nil {
		t.Fatal(err)
	}
	if err := second.Run(); err != nil {
		t.Fatal(err)
	}
	z := cudaAddReference(cudaAddReference(x))
	if y := outputFloats(t, second, "y"); !equalFloats(y, z) {
		t.Fatalf("second: %v", y[:8])
	}
	if y := outputFloats(t, target, "y"); !equalFloats(y, z) {
		t.Fatalf("not written into target's memory: %v", y[:8])
	}
	if err := second.ResetOutput("y"); err != nil {
		t.Fatal(err)
	}
	err = second.SetInputDevicePtr("x", 16)
	var agateErr *Error
	if !errors.As(err, &agateErr) || agateErr.Status != StatusInvalidArgument || !strings.Contains(agateErr.Message, "input 0 'x'") {
		t.Fatalf("a bogus address: %v", err)
	}
	if err := second.Run(); err != nil {
		t.Fatal(err)
	}
	if y := outputFloats(t, second, "y"); !equalFloats(y, z) {
		t.Fatalf("the binding changed: %v", y[:8])
	}
}

func TestDevicesThatDoNotExistOrDoNotFitAreRefused(t *testing.T) {
	var agateErr *Error
	if _, err := CUDADeviceCount(); err == nil {
		_, err := LoadFileOnDevice(fixture(t, "cuda_add.agm"), 1000)
		if !errors.As(err, &agateErr) || agateErr.Status != StatusOutOfRange {
			t.Fatalf("device 1000: %v", err)
		}
	}
	_, err := LoadFileOnDevice(fixture(t, "add_relu.agm"), 1)
	if !errors.As(err, &agateErr) || agateErr.Status != StatusInvalidArgument {
		t.Fatalf("a CPU module on device 1: %v", err)
	}
	m, err := LoadFileOnDevice(fixture(t, "add_relu.agm"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Device() != (Device{}) {
		t.Fatalf("device %+v", m.Device())
	}
	e, err := m.NewExecutor()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.OutputDevicePtr("y"); !errors.As(err, &agateErr) || agateErr.Status != StatusUnsupported {
		t.Fatalf("OutputDevicePtr of a CPU module: %v", err)
	}
}
