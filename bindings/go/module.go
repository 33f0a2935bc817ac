package agate

/*
#include <stdlib.h>
#include "agate_go.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Module is a compiled agate module loaded into the runtime.
//
// It is immutable and safe for concurrent use: any number of goroutines may
// read it and create executors from it at once; give each goroutine its own
// Executor.
//
// Release it with Close. The native module is freed once it is closed and its
// last executor is closed, so closing a module whose executors are still open
// is safe: they keep working and it is freed after them. A module nobody closed
// is freed by a finalizer after it becomes unreachable (a safety net: the GC
// does not see native memory). NewExecutor after Close fails with
// StatusInvalidArgument; Target, Inputs and Outputs keep returning the
// description copied at load.
type Module struct {
	mu        sync.Mutex
	handle    *C.agate_module_t
	executors int
	closed    bool

	device  Device
	target  string
	inputs  []TensorInfo
	outputs []TensorInfo
}

// Device is where a module's kernels run: the CPU, or the GPU with CUDA ordinal ID.
type Device struct {
	CUDA bool // false: the host's CPUs
	ID   int  // the CUDA ordinal (0 for the CPU)
}

// CUDADeviceCount is how many GPUs the runtime can run CUDA modules on;
// StatusUnavailable (with the reason) without a driver or GPU. Runtime ABI 1.2.
func CUDADeviceCount() (int, error) {
	var n C.int32_t
	err := call(func() C.agate_status_t { return C.agate_runtime_device_count(C.kDLCUDA, &n) })
	return int(n), err
}

// LoadFile loads a module from a file, mapped read-only (constants used in
// place). StatusNotFound when it does not exist, StatusCorrupt (or another
// status, see runtime.h) when it is not a valid module.
func LoadFile(path string) (*Module, error) {
	return LoadFileOnDevice(path, 0)
}

// LoadFileOnDevice is LoadFile onto a device: a CUDA module onto the GPU with
// CUDA ordinal deviceID (StatusOutOfRange when there is no such GPU,
// StatusUnavailable with the reason without a driver or GPU); a CPU module
// needs deviceID 0 (StatusInvalidArgument otherwise). Runtime ABI 1.2.
func LoadFileOnDevice(path string, deviceID int) (*Module, error) {
	if err := checkABI(); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var handle *C.agate_module_t
	if err := call(func() C.agate_status_t { return C.agate_go_load_file(cpath, C.int32_t(deviceID), &handle) }); err != nil {
		return nil, err
	}
	return adopt(handle)
}

// LoadBytes loads a module from memory; the runtime copies the bytes.
func LoadBytes(data []byte) (*Module, error) {
	return LoadBytesOnDevice(data, 0)
}

// LoadBytesOnDevice is LoadBytes onto a device (see LoadFileOnDevice).
func LoadBytesOnDevice(data []byte, deviceID int) (*Module, error) {
	if err := checkABI(); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	} else {
		p = unsafe.Pointer(&[1]byte{}) // the runtime refuses NULL; an empty module is corrupt
	}
	var handle *C.agate_module_t
	err := call(func() C.agate_status_t {
		return C.agate_go_load_memory(p, C.size_t(len(data)), C.int32_t(deviceID), &handle)
	})
	if err != nil {
		return nil, err
	}
	return adopt(handle)
}

func tensorInfos(handle *C.agate_module_t, outputs bool) ([]TensorInfo, error) {
	var count C.uint32_t
	err := call(func() C.agate_status_t {
		if outputs {
			return C.agate_module_num_outputs(handle, &count)
		}
		return C.agate_module_num_inputs(handle, &count)
	})
	if err != nil {
		return nil, err
	}
	infos := make([]TensorInfo, count)
	for i := range infos {
		var info C.agate_tensor_info
		err := call(func() C.agate_status_t {
			if outputs {
				return C.agate_module_output_info(handle, C.uint32_t(i), &info)
			}
			return C.agate_module_input_info(handle, C.uint32_t(i), &info)
		})
		if err != nil {
			return nil, err
		}
		shape := make([]int64, int(info.ndim))
		if info.ndim > 0 {
			copy(shape, unsafe.Slice((*int64)(unsafe.Pointer(info.shape)), int(info.ndim)))
		}
		infos[i] = TensorInfo{
			Name:  C.GoString(info.name),
			DType: DType{Code: uint8(info.dtype.code), Bits: uint8(info.dtype.bits), Lanes: uint16(info.dtype.lanes)},
			Shape: shape,
			Bytes: uint64(info.bytes),
		}
	}
	return infos, nil
}

// adopt takes ownership of a freshly loaded module and copies its description.
func adopt(handle *C.agate_module_t) (*Module, error) {
	m := &Module{handle: handle}
	var target *C.char
	var where C.DLDevice
	err := call(func() C.agate_status_t { return C.agate_module_device(handle, &where) })
	if err == nil {
		m.device = Device{CUDA: where.device_type == C.kDLCUDA, ID: int(where.device_id)}
		err = call(func() C.agate_status_t { return C.agate_module_target(handle, &target) })
	}
	if err == nil {
		m.target = C.GoString(target)
		m.inputs, err = tensorInfos(handle, false)
	}
	if err == nil {
		m.outputs, err = tensorInfos(handle, true)
	}
	if err != nil {
		C.agate_module_free(handle)
		return nil, err
	}
	runtime.SetFinalizer(m, (*Module).finalize)
	return m, nil
}

// Target is the target the module was compiled for, e.g. "llvm -mtriple=x86_64-linux-gnu".
func (m *Module) Target() string { return m.target }

// Device is where the module's kernels run.
func (m *Module) Device() Device { return m.device }

// Inputs describes the model's inputs in the module's order (a copy).
func (m *Module) Inputs() []TensorInfo { return cloneInfos(m.inputs) }

// Outputs describes the model's outputs in the module's order (a copy).
func (m *Module) Outputs() []TensorInfo { return cloneInfos(m.outputs) }

func cloneInfos(infos []TensorInfo) []TensorInfo {
	out := make([]TensorInfo, len(infos))
	for i, t := range infos {
		t.Shape = append([]int64(nil), t.Shape...)
		out[i] = t
	}
	return out
}

// ExecutorOptions configures NewExecutorWithOptions.
type ExecutorOptions struct {
	// 0: kernels' parallel loops use the runtime's shared thread pool
	// (SetNumThreads); 1: they run on the calling thread.
	NumThreads int
}

// NewExecutor creates an executor whose parallel loops use the shared thread pool.
func (m *Module) NewExecutor() (*Executor, error) {
	return m.NewExecutorWithOptions(ExecutorOptions{})
}

// NewExecutorWithOptions creates an executor with the given options.
func (m *Module) NewExecutorWithOptions(options ExecutorOptions) (*Executor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, newError(StatusInvalidArgument, "the Module is closed")
	}
	var handle *C.agate_executor_t
	err := call(func() C.agate_status_t {
		return C.agate_go_create_executor(m.handle, C.int32_t(options.NumThreads), &handle)
	})
	if err != nil {
		return nil, err
	}
	m.executors++
	e := &Executor{handle: handle, module: m, inputs: make([]unsafe.Pointer, len(m.inputs))}
	runtime.SetFinalizer(e, (*Executor).finalize)
	return e, nil
}

// Close releases the module (after its last executor, if any is open).
// Closing twice is allowed.
func (m *Module) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.freeIfUnused()
	runtime.SetFinalizer(m, nil)
	return nil
}

// executorClosed is called by an executor of this module once it is freed.
func (m *Module) executorClosed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.executors--
	m.freeIfUnused()
}

func (m *Module) freeIfUnused() {
	if m.closed && m.executors == 0 && m.handle != nil {
		C.agate_module_free(m.handle)
		m.handle = nil
	}
}

// nativeFreed reports whether the runtime module was freed (tests).
func (m *Module) nativeFreed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.handle == nil
}

func (m *Module) finalize() {
	finalizedForTesting.modules.Add(1)
	m.Close()
}

// callKernelNames lists the kernel of every plan call; handle must be live.
func callKernelNames(handle *C.agate_module_t) ([]string, error) {
	var count C.uint32_t
	if err := call(func() C.agate_status_t { return C.agate_module_num_calls(handle, &count) }); err != nil {
		return nil, err
	}
	names := make([]string, count)
	for i := range names {
		var name *C.char
		if err := call(func() C.agate_status_t {
			return C.agate_module_call_kernel_name(handle, C.uint32_t(i), &name)
		}); err != nil {
			return nil, err
		}
		names[i] = C.GoString(name)
	}
	return names, nil
}

// CallKernelNames lists the kernel every plan call runs, in execution order (a
// kernel called several times appears once per call; kernels of a fused group
// are named after it). Runtime ABI 1.1. StatusInvalidArgument after Close.
func (m *Module) CallKernelNames() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, newError(StatusInvalidArgument, "the Module is closed")
	}
	return callKernelNames(m.handle)
}

// InputDim describes axis `axis` of input `name`: static, or a symbol's bounds (Inputs shows
// each dynamic dimension's upper bound). ErrNotFound for an unknown name, out of range past its
// dimensions.
func (m *Module) InputDim(name string, axis int) (DimInfo, error) { return m.dim(name, axis, false) }

// OutputDim describes axis `axis` of output `name` (see InputDim).
func (m *Module) OutputDim(name string, axis int) (DimInfo, error) { return m.dim(name, axis, true) }

func (m *Module) dim(name string, axis int, output bool) (DimInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return DimInfo{}, newError(StatusInvalidArgument, "the Module is closed")
	}
	infos, role := m.inputs, "input"
	if output {
		infos, role = m.outputs, "output"
	}
	index := -1
	for i, info := range infos {
		if info.Name == name {
			index = i
		}
	}
	if index < 0 {
		return DimInfo{}, newError(StatusNotFound, "the module has no %s named '%s'", role, name)
	}
	var info C.agate_dim_info
	err := call(func() C.agate_status_t {
		if output {
			return C.agate_module_output_dim(m.handle, C.uint32_t(index), C.int32_t(axis), &info)
		}
		return C.agate_module_input_dim(m.handle, C.uint32_t(index), C.int32_t(axis), &info)
	})
	if err != nil {
		return DimInfo{}, err
	}
	d := DimInfo{Min: int64(info.min), Max: int64(info.max), Kind: DimKind(info.kind)}
	if info.symbol != nil {
		d.Symbol = C.GoString(info.symbol)
	}
	return d, nil
}
