// Package agate runs compiled agate modules: a thin cgo layer over the runtime
// C API (c_api/include/agate/runtime.h, libagate_runtime.so).
//
//	m, err := agate.LoadFile("classifier.agm") // or agate.LoadBytes(data)
//	if err != nil { ... }                      // *agate.Error: Status + the runtime's Message
//	defer m.Close()
//	e, err := m.NewExecutor()
//	defer e.Close()
//	x, _ := agate.NewFloat32Tensor([]int64{4, 8}, values)
//	err = e.SetInput("x", x)                   // copied into C memory the executor owns
//	err = e.Run()
//	out, err := e.Output("logits")             // a copy
//	logits, err := out.Float32s()
//
// Errors are *Error values carrying the runtime's status and message;
// errors.Is(err, agate.ErrNotFound) matches by status.
//
// Threads: a Module is safe for concurrent use; an Executor is for one
// goroutine at a time, so give each goroutine its own. Every C call runs with
// the goroutine locked to its OS thread, because the runtime's error message
// is thread-local.
//
// Resources: Close releases a module or executor; a module closed while
// executors are open is freed after the last of them. Finalizers free what
// nobody closed, as a safety net only.
//
// Linking: cgo asks pkg-config for agate-runtime, the file `./agate install
// --prefix DIR` writes (PKG_CONFIG_PATH=DIR/lib/pkgconfig). The module path
// agate.dev/agate is not served by a proxy: use it as a local module, with
// `go mod edit -replace agate.dev/agate=/path/to/agate/bindings/go` (or a
// go.work `use` line) in the program's module (tests/install/go_demo does).
// pkg-config's flags link the shared library: add -Wl,-rpath,DIR/lib to
// CGO_LDFLAGS (or put DIR/lib on the loader's path).
package agate
