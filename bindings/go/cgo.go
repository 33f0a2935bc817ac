package agate

/*
#cgo pkg-config: agate-runtime
#include <stdlib.h>
#include "agate_go.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// call runs one C API call and turns its status into an error. The goroutine
// is locked to its OS thread meanwhile, because the runtime's error message is
// thread-local: without the lock the goroutine could move to another thread
// between the call and reading the message.
func call(f func() C.agate_status_t) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	status := f()
	if status == C.AGATE_OK {
		return nil
	}
	return &Error{Status: Status(status), Message: C.GoString(C.agate_last_error_message())}
}

// cBytes copies b into new 64-byte-aligned C memory (free with C.free).
func cBytes(b []byte) (unsafe.Pointer, error) {
	p := C.agate_go_alloc(C.size_t(len(b)))
	if p == nil {
		return nil, newError(StatusResourceExhausted, "cannot allocate %d bytes for an input", len(b))
	}
	if len(b) > 0 {
		copy(unsafe.Slice((*byte)(p), len(b)), b)
	}
	return p, nil
}

// RuntimeABIVersion is the ABI version of the loaded libagate_runtime.so: (major << 16) | minor.
func RuntimeABIVersion() uint32 {
	return uint32(C.agate_runtime_abi_version())
}

// SetKernelDir names where modules loaded afterwards write their kernels
// (runtime ABI 1.4, agate_runtime_set_kernel_dir): each loaded module keeps one
// file there, deleted when the module is closed; for Android before API 30 (no
// memfd_create, no /tmp) the app's code cache directory. "" restores the default
// (an in-memory file).
func SetKernelDir(dir string) error {
	var cDir *C.char
	if dir != "" {
		cDir = C.CString(dir)
		defer C.free(unsafe.Pointer(cDir))
	}
	return call(func() C.agate_status_t { return C.agate_runtime_set_kernel_dir(cDir) })
}

// SetNumThreads sets the size of the runtime's shared thread pool (0: the
// default, AGATE_NUM_THREADS or the number of physical cores).
func SetNumThreads(n int) error {
	return call(func() C.agate_status_t { return C.agate_runtime_set_num_threads(C.int32_t(n)) })
}

// NumThreads is the shared thread pool's current size.
func NumThreads() (int, error) {
	var n C.int32_t
	err := call(func() C.agate_status_t { return C.agate_runtime_num_threads(&n) })
	return int(n), err
}

func checkABI() error {
	v := RuntimeABIVersion()
	if v>>16 != uint32(C.AGATE_RUNTIME_ABI_VERSION_MAJOR) || v&0xffff < uint32(C.AGATE_RUNTIME_ABI_VERSION_MINOR) {
		return newError(StatusVersionMismatch, "libagate_runtime.so implements ABI %d.%d; this package needs %d.%d or a newer minor",
			v>>16, v&0xffff, C.AGATE_RUNTIME_ABI_VERSION_MAJOR, C.AGATE_RUNTIME_ABI_VERSION_MINOR)
	}
	return nil
}
