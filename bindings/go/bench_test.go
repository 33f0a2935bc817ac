package agate

import "testing"

// The binding's cost per inference on a tiny module (two 6-element inputs):
// SetInput x2 + Run + Output, i.e. mostly cgo calls, copies and locking.
//
//	go test -run '^$' -bench AddRelu
func BenchmarkAddReluRoundTrip(b *testing.B) {
	m, err := LoadFile(fixture(b, "add_relu.agm"))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	e, err := m.NewExecutorWithOptions(ExecutorOptions{NumThreads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	a, _ := NewFloat32Tensor([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.SetInput("a", a); err != nil {
			b.Fatal(err)
		}
		if err := e.SetInput("b", a); err != nil {
			b.Fatal(err)
		}
		if err := e.Run(); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Output("y"); err != nil {
			b.Fatal(err)
		}
	}
}
