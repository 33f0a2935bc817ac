package agate

import (
	"reflect"
	"testing"
)

func TestAddReluComputesReluOfTheSum(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	defer m.Close()
	e := must(m.NewExecutor())(t)
	defer e.Close()
	a := []float32{1, -2, 3.5, 0, -0.5, 4}
	b := []float32{0.5, 1, -4, 0.25, 0.25, -1}
	if err := e.SetInput("a", float32Tensor(t, []int64{2, 3}, a)); err != nil {
		t.Fatal(err)
	}
	if err := e.SetInput("b", float32Tensor(t, []int64{2, 3}, b)); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	y := must(e.Output("y"))(t)
	if y.DType != Float32 || !reflect.DeepEqual(y.Shape, []int64{2, 3}) {
		t.Fatalf("output %v %v", y.DType, y.Shape)
	}
	assertClose(t, must(y.Float32s())(t), addReluReference(a, b))
}

func TestClassifierOverSeveralRuns(t *testing.T) {
	m := must(LoadFile(fixture(t, "classifier.agm")))(t)
	defer m.Close()
	e := must(m.NewExecutorWithOptions(ExecutorOptions{NumThreads: 1}))(t)
	defer e.Close()
	for seed := 0; seed < 3; seed++ {
		x := classifierInput(seed)
		if err := e.SetInput("x", float32Tensor(t, []int64{4, 8}, x)); err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		logits, best := classifierReference(x)
		assertClose(t, must(must(e.Output("logits"))(t).Float32s())(t), logits)
		if got := must(must(e.Output("classes"))(t).Int32s())(t); !reflect.DeepEqual(got, best) {
			t.Fatalf("classes %v, want %v", got, best)
		}
	}
}

func TestInputsAreCopied(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	defer m.Close()
	e := must(m.NewExecutor())(t)
	defer e.Close()
	a := float32Tensor(t, []int64{2, 3}, []float32{1, 1, 1, 1, 1, 1})
	if err := e.SetInput("a", a); err != nil {
		t.Fatal(err)
	}
	for i := range a.Data {
		a.Data[i] = 0xff // NaNs, if the runtime still read them
	}
	if err := e.SetInput("b", float32Tensor(t, []int64{2, 3}, []float32{2, 2, 2, 2, 2, 2})); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	assertClose(t, must(must(e.Output("y"))(t).Float32s())(t), []float32{3, 3, 3, 3, 3, 3})
	if n := must(e.ArenaBytes())(t); n != 24 {
		t.Errorf("arena %d bytes", n)
	}
}

func TestModuleClosedBeforeItsExecutorIsFreedAfterIt(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	e := must(m.NewExecutor())(t)
	m.Close()
	if m.nativeFreed() {
		t.Fatal("the module was freed under an open executor")
	}
	e.SetInput("a", float32Tensor(t, []int64{2, 3}, []float32{1, 1, 1, 1, 1, 1}))
	e.SetInput("b", float32Tensor(t, []int64{2, 3}, []float32{-3, 0, 3, -3, 0, 3}))
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	assertClose(t, must(must(e.Output("y"))(t).Float32s())(t), []float32{0, 1, 4, 0, 1, 4})
	e.Close()
	if !m.nativeFreed() {
		t.Fatal("the module was not freed after its last executor")
	}
}
