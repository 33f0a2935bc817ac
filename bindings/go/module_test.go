package agate

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestLoadFileListsInputsAndOutputs(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	defer m.Close()
	if !strings.HasPrefix(m.Target(), "llvm") {
		t.Errorf("target %q", m.Target())
	}
	in := m.Inputs()
	if len(in) != 2 || in[0].Name != "a" || in[1].Name != "b" {
		t.Fatalf("inputs %v", in)
	}
	y := m.Outputs()[0]
	want := TensorInfo{Name: "y", DType: Float32, Shape: []int64{2, 3}, Bytes: 24}
	if !reflect.DeepEqual(y, want) {
		t.Errorf("output %+v, want %+v", y, want)
	}
	if y.String() != "y: float32[2 3]" {
		t.Errorf("String() = %q", y.String())
	}
}

func TestLoadBytesWithMixedOutputDtypes(t *testing.T) {
	data := must(os.ReadFile(fixture(t, "classifier.agm")))(t)
	m := must(LoadBytes(data))(t)
	defer m.Close()
	for i := range data {
		data[i] = 0 // the runtime copied the bytes
	}
	out := m.Outputs()
	if out[0].Name != "logits" || out[0].DType != Float32 || !reflect.DeepEqual(out[0].Shape, []int64{4, 3}) {
		t.Errorf("logits %v", out[0])
	}
	if out[1].Name != "classes" || out[1].DType != Int32 || !reflect.DeepEqual(out[1].Shape, []int64{4}) {
		t.Errorf("classes %v", out[1])
	}
	out[1].Shape[0] = 99 // a copy: the module's description is unchanged
	if m.Outputs()[1].Shape[0] != 4 {
		t.Error("Outputs() exposed the module's own slice")
	}
}

func TestRuntimeVersionAndThreads(t *testing.T) {
	if RuntimeABIVersion()>>16 != 1 {
		t.Errorf("ABI %x", RuntimeABIVersion())
	}
	if n := must(NumThreads())(t); n < 1 {
		t.Errorf("NumThreads() = %d", n)
	}
}

func TestDTypeNames(t *testing.T) {
	cases := map[DType]string{Float32: "float32", Int64: "int64", Bool: "bool", BFloat16: "bfloat16",
		{2, 32, 4}: "float32x4"}
	for d, want := range cases {
		if d.String() != want {
			t.Errorf("%v: got %q, want %q", d, d.String(), want)
		}
	}
	if Bool.ElementBytes() != 1 || Float16.ElementBytes() != 2 {
		t.Error("element sizes")
	}
	if StatusCorrupt.String() != "corrupt" || Status(99).String() != "unknown status 99" {
		t.Error("status names")
	}
}
