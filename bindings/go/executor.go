package agate

/*
#include <stdlib.h>
#include "agate_go.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Executor runs a module: it holds the memory of one run (intermediate
// tensors, outputs) and keeps its module alive.
//
// Use one executor from one goroutine at a time and give each goroutine its own
// (executors of one module run in parallel freely). Its methods lock a mutex,
// so accidental concurrent use is serialized rather than undefined. Inputs are
// copied into C memory the executor owns; outputs are returned as copies.
//
// Release it with Close; one nobody closed is freed by a finalizer after it
// becomes unreachable. Any method after Close fails with StatusInvalidArgument.
type Executor struct {
	mu     sync.Mutex
	handle *C.agate_executor_t
	module *Module
	inputs []unsafe.Pointer // C memory bound to each input, or nil
}

// finalizedForTesting counts finalizers that ran (tests check the safety net).
var finalizedForTesting struct {
	modules, executors atomic.Int64
}

func (e *Executor) live() error {
	if e.handle == nil {
		return newError(StatusInvalidArgument, "the Executor is closed")
	}
	return nil
}

func (e *Executor) find(name string, output bool) (C.uint32_t, error) {
	// Fast path without cgo: the names copied from the module at load.
	infos := e.module.inputs
	if output {
		infos = e.module.outputs
	}
	for i := range infos {
		if infos[i].Name == name {
			return C.uint32_t(i), nil
		}
	}
	// Unknown: ask the runtime, which fails with its own NOT_FOUND message.
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var index C.uint32_t
	// e.module.handle stays valid while this executor is open.
	err := call(func() C.agate_status_t {
		if output {
			return C.agate_module_find_output(e.module.handle, cname, &index)
		}
		return C.agate_module_find_input(e.module.handle, cname, &index)
	})
	return index, err
}

// SetInput copies t in as input name. The runtime checks it: StatusNotFound
// for an unknown name, StatusInvalidArgument naming the input when the dtype or
// shape differ. On error the input keeps its previous value.
func (e *Executor) SetInput(name string, t *Tensor) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return err
	}
	index, err := e.find(name, false)
	if err != nil {
		return err
	}
	data, err := cBytes(t.Data)
	if err != nil {
		return err
	}
	// The shape is passed as a Go pointer argument (read during the call only),
	// never stored in C memory, as cgo's pointer rules require.
	var shape *C.int64_t
	if len(t.Shape) > 0 {
		shape = (*C.int64_t)(unsafe.Pointer(&t.Shape[0]))
	}
	err = call(func() C.agate_status_t {
		return C.agate_go_set_input(e.handle, index, data, C.uint8_t(t.DType.Code), C.uint8_t(t.DType.Bits),
			C.uint16_t(t.DType.Lanes), C.int32_t(len(t.Shape)), shape)
	})
	if err != nil {
		C.free(data)
		return err
	}
	C.free(e.inputs[index])
	e.inputs[index] = data
	return nil
}

// Run runs the module once; every input must have been set.
func (e *Executor) Run() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return err
	}
	return call(func() C.agate_status_t { return C.agate_executor_run(e.handle) })
}

// Output returns a copy of output name from the last run (for a CUDA module,
// copied from the GPU).
func (e *Executor) Output(name string) (*Tensor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return nil, err
	}
	index, err := e.find(name, true)
	if err != nil {
		return nil, err
	}
	info := e.module.outputs[index]
	// The run-time shape of the last run (for a module with dynamic shapes, what it produced).
	shape := make([]int64, len(info.Shape))
	var ndim C.int32_t
	if len(shape) > 0 {
		// A Go pointer argument, written during the call only.
		err = call(func() C.agate_status_t {
			return C.agate_executor_output_shape(e.handle, index, (*C.int64_t)(unsafe.Pointer(&shape[0])),
				C.int32_t(len(shape)), &ndim)
		})
		if err != nil {
			return nil, err
		}
	}
	bytes := uint64(info.DType.ElementBytes())
	for _, d := range shape {
		bytes *= uint64(d)
	}
	data := make([]byte, bytes)
	var dataPtr unsafe.Pointer
	if len(data) > 0 {
		dataPtr = unsafe.Pointer(&data[0])
	}
	var shapePtr *C.int64_t
	if len(shape) > 0 {
		shapePtr = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	// Go pointers passed as arguments, written and read during the call only.
	err = call(func() C.agate_status_t {
		return C.agate_go_copy_output(e.handle, index, dataPtr, C.uint8_t(info.DType.Code), C.uint8_t(info.DType.Bits),
			C.uint16_t(info.DType.Lanes), C.int32_t(len(shape)), shapePtr)
	})
	if err != nil {
		return nil, err
	}
	return &Tensor{DType: info.DType, Shape: shape, Data: data}, nil
}

// bindDevice binds device memory at address as input or output index.
func (e *Executor) bindDevice(name string, output bool, address uintptr) error {
	if err := e.live(); err != nil {
		return err
	}
	if !e.module.device.CUDA {
		return newError(StatusUnsupported, "the module runs on the CPU: it takes no device memory")
	}
	index, err := e.find(name, output)
	if err != nil {
		return err
	}
	info := e.module.inputs
	if output {
		info = e.module.outputs
	}
	t := info[index]
	shape := append([]int64(nil), t.Shape...)
	var shapePtr *C.int64_t
	if len(shape) > 0 {
		shapePtr = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	isOutput := C.int(0)
	if output {
		isOutput = 1
	}
	err = call(func() C.agate_status_t {
		return C.agate_go_bind_device(e.handle, isOutput, index, C.uint64_t(address), C.int32_t(e.module.device.ID),
			C.uint8_t(t.DType.Code), C.uint8_t(t.DType.Bits), C.uint16_t(t.DType.Lanes), C.int32_t(len(shape)), shapePtr)
	})
	if err == nil && !output {
		C.free(e.inputs[index]) // a host copy bound before is no longer read
		e.inputs[index] = nil
	}
	return err
}

// SetInputDevicePtr binds input name to device memory of the module's GPU at
// address (another executor's OutputDevicePtr, or a tensor of another CUDA
// library): no copy. The runtime checks that the driver knows the address as
// memory of that GPU, 16-byte aligned, with room for the input. The memory must
// hold the input and stay allocated and unchanged until the last Run that reads
// it has returned. StatusUnsupported for CPU modules. Runtime ABI 1.2.
func (e *Executor) SetInputDevicePtr(name string, address uintptr) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bindDevice(name, false, address)
}

// SetOutputDevicePtr makes runs write output name into device memory of the
// module's GPU at address (no copy), checked like SetInputDevicePtr; the memory
// must stay allocated until ResetOutput or Close.
func (e *Executor) SetOutputDevicePtr(name string, address uintptr) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bindDevice(name, true, address)
}

// ResetOutput makes runs write output name into the executor's own memory again.
func (e *Executor) ResetOutput(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return err
	}
	index, err := e.find(name, true)
	if err != nil {
		return err
	}
	return call(func() C.agate_status_t { return C.agate_executor_set_output(e.handle, index, nil) })
}

// OutputDevicePtr is the device address of output name on the module's GPU
// (the executor's memory, or what SetOutputDevicePtr bound), overwritten by
// each Run and valid until Close. StatusUnsupported for CPU modules.
func (e *Executor) OutputDevicePtr(name string) (uintptr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return 0, err
	}
	if !e.module.device.CUDA {
		return 0, newError(StatusUnsupported, "the module runs on the CPU: its outputs are host memory")
	}
	index, err := e.find(name, true)
	if err != nil {
		return 0, err
	}
	var view C.DLTensor
	if err := call(func() C.agate_status_t { return C.agate_executor_get_output(e.handle, index, &view) }); err != nil {
		return 0, err
	}
	return uintptr(view.data) + uintptr(view.byte_offset), nil
}

// ArenaBytes is the memory this executor holds for intermediate tensors.
func (e *Executor) ArenaBytes() (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return 0, err
	}
	var bytes C.uint64_t
	err := call(func() C.agate_status_t { return C.agate_executor_arena_bytes(e.handle, &bytes) })
	return uint64(bytes), err
}

// Close frees the executor and the input memory it holds. Closing twice is allowed.
func (e *Executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.handle == nil {
		return nil
	}
	C.agate_executor_free(e.handle) // first: it borrows the inputs
	e.handle = nil
	for i, p := range e.inputs {
		C.free(p)
		e.inputs[i] = nil
	}
	runtime.SetFinalizer(e, nil)
	e.module.executorClosed()
	return nil
}

func (e *Executor) finalize() {
	finalizedForTesting.executors.Add(1)
	e.Close()
}

// CallTime is one kernel call of a profiled run.
type CallTime struct {
	Kernel      string // the kernel the call ran
	Nanoseconds uint64 // its wall time on CPUs (parallel loops included); its device time on GPUs
}

// RunProfiled runs the module once, like Run, timing every kernel call, and
// returns the calls in plan order. Outputs are the same as after Run. Runtime
// ABI 1.1 (CUDA modules, timed with CUDA events: 1.2).
func (e *Executor) RunProfiled() ([]CallTime, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return nil, err
	}
	// e.module.handle stays valid while this executor is open.
	names, err := callKernelNames(e.module.handle)
	if err != nil {
		return nil, err
	}
	ns := make([]uint64, len(names)+1) // never empty, so the pointer is never NULL
	err = call(func() C.agate_status_t {
		return C.agate_executor_run_profiled(e.handle, (*C.uint64_t)(unsafe.Pointer(&ns[0])), C.uint32_t(len(names)))
	})
	if err != nil {
		return nil, err
	}
	calls := make([]CallTime, len(names))
	for i, name := range names {
		calls[i] = CallTime{Kernel: name, Nanoseconds: ns[i]}
	}
	return calls, nil
}
