package agate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A module with a symbolic batch dimension (runtime ABI 1.5): one executor run at two batch
// sizes, outputs read at their run-time shapes, bounds exposed, an out-of-bounds batch refused.
func TestBatchModuleRunsAtTwoSizes(t *testing.T) {
	m := must(LoadFile(fixture(t, "batch_add_relu.agm")))(t)
	defer m.Close()
	if got := m.Inputs()[0].Shape; !reflect.DeepEqual(got, []int64{5, 2, 3}) {
		t.Fatalf("input shape (upper bounds) %v", got)
	}
	dim := must(m.InputDim("a", 0))(t)
	if dim != (DimInfo{Min: 1, Max: 5, Symbol: "N", Kind: DimSymbolic}) {
		t.Fatalf("input dim %+v", dim)
	}
	if d := must(m.OutputDim("y", 2))(t); d.Kind != DimStatic || d.Max != 3 {
		t.Fatalf("output dim %+v", d)
	}
	if _, err := m.InputDim("nope", 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown input: %v", err)
	}
	e := must(m.NewExecutor())(t)
	defer e.Close()
	for _, n := range []int{3, 1} {
		a := make([]float32, n*6)
		b := make([]float32, n*6)
		for i := range a {
			a[i] = float32(i)*0.5 - 3
			b[i] = float32(1 - i%4)
		}
		shape := []int64{int64(n), 2, 3}
		if err := e.SetInput("a", float32Tensor(t, shape, a)); err != nil {
			t.Fatal(err)
		}
		if err := e.SetInput("b", float32Tensor(t, shape, b)); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		y := must(e.Output("y"))(t)
		if !reflect.DeepEqual(y.Shape, shape) {
			t.Fatalf("batch %d: output shape %v", n, y.Shape)
		}
		assertClose(t, must(y.Float32s())(t), addReluReference(a, b))
	}
	err := e.SetInput("a", float32Tensor(t, []int64{6, 2, 3}, make([]float32, 36)))
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "has extent 6 on axis 0 (symbol N), outside its bounds 1..5") {
		t.Fatalf("batch 6: %v", err)
	}
}

// A module with a padded symbol on axis 1 (module format 3.0, a sequence length): the runtime
// pads the inputs to the compiled extent and returns the outputs at the run's.
func TestPaddedModuleRunsAtTwoLengths(t *testing.T) {
	m := must(LoadFile(fixture(t, "padded_add_relu.agm")))(t)
	defer m.Close()
	if d := must(m.InputDim("a", 1))(t); d != (DimInfo{Min: 1, Max: 3, Symbol: "S", Kind: DimSymbolic}) {
		t.Fatalf("input dim %+v", d)
	}
	e := must(m.NewExecutor())(t)
	defer e.Close()
	for _, n := range []int{2, 3, 1} {
		a := make([]float32, 2*n)
		b := make([]float32, 2*n)
		for i := range a {
			a[i] = float32(i)*0.75 - 1
			b[i] = float32(1 - i%3)
		}
		shape := []int64{2, int64(n)}
		if err := e.SetInput("a", float32Tensor(t, shape, a)); err != nil {
			t.Fatal(err)
		}
		if err := e.SetInput("b", float32Tensor(t, shape, b)); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		y := must(e.Output("y"))(t)
		if !reflect.DeepEqual(y.Shape, shape) {
			t.Fatalf("S = %d: output shape %v", n, y.Shape)
		}
		assertClose(t, must(y.Float32s())(t), addReluReference(a, b))
	}
	err := e.SetInput("a", float32Tensor(t, []int64{2, 4}, make([]float32, 8)))
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "has extent 4 on axis 1 (symbol S), outside its bounds 1..3") {
		t.Fatalf("S = 4: %v", err)
	}
}
