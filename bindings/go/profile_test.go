package agate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCallKernelNamesFollowThePlan(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	names := must(m.CallKernelNames())(t)
	if !reflect.DeepEqual(names, []string{"agate_fx_add", "agate_fx_relu"}) {
		t.Fatalf("call kernels %v", names)
	}
	m.Close()
	var e *Error
	if _, err := m.CallKernelNames(); !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Fatalf("after Close: %v", err)
	}
}

func TestRunProfiledTimesEveryCallAndComputesWhatRunDoes(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	defer m.Close()
	e := must(m.NewExecutor())(t)
	defer e.Close()
	if _, err := e.RunProfiled(); err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Fatalf("unbound inputs: %v", err)
	}
	a := []float32{1, -2, 3.5, 0, -0.5, 4}
	b := []float32{0.5, 1, -4, 0.25, 0.25, -1}
	if err := e.SetInput("a", float32Tensor(t, []int64{2, 3}, a)); err != nil {
		t.Fatal(err)
	}
	if err := e.SetInput("b", float32Tensor(t, []int64{2, 3}, b)); err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 3; run++ {
		calls := must(e.RunProfiled())(t)
		var total uint64
		kernels := make([]string, len(calls))
		for i, c := range calls {
			kernels[i] = c.Kernel
			total += c.Nanoseconds
		}
		if !reflect.DeepEqual(kernels, []string{"agate_fx_add", "agate_fx_relu"}) || total == 0 {
			t.Fatalf("profile %v", calls)
		}
		assertClose(t, must(must(e.Output("y"))(t).Float32s())(t), addReluReference(a, b))
	}
}
