package agate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantError checks err is an *Error of the status whose message mentions text.
func wantError(t *testing.T, err error, status Status, text string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *agate.Error", err)
	}
	if e.Status != status {
		t.Fatalf("got status %v (%q), want %v", e.Status, e.Message, status)
	}
	if !strings.Contains(e.Message, text) {
		t.Fatalf("message %q does not mention %q", e.Message, text)
	}
}

func TestMissingFileIsNotFound(t *testing.T) {
	_, err := LoadFile("/nonexistent/dir/model.agm")
	wantError(t, err, StatusNotFound, "/nonexistent/dir/model.agm")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
		t.Error("errors.Is does not match by status")
	}
	if !strings.Contains(err.Error(), "not found (status 2)") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestCorruptBytesAreRefused(t *testing.T) {
	data := must(os.ReadFile(fixture(t, "add_relu.agm")))(t)
	_, err := LoadBytes(data[:len(data)/2])
	wantError(t, err, StatusCorrupt, "")
	garbage := make([]byte, 256)
	for i := range garbage {
		garbage[i] = byte(i * 37 % 251)
	}
	_, err = LoadBytes(garbage)
	wantError(t, err, StatusCorrupt, "")
	_, err = LoadBytes(nil)
	wantError(t, err, StatusCorrupt, "")
}

func TestCorruptFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corrupt.agm")
	if err := os.WriteFile(path, []byte("this is not an agate module"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	wantError(t, err, StatusCorrupt, "")
}

func newAddRelu(t *testing.T) (*Module, *Executor) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	e := must(m.NewExecutor())(t)
	t.Cleanup(func() { e.Close(); m.Close() })
	return m, e
}

func TestWrongNamesAreNotFound(t *testing.T) {
	_, e := newAddRelu(t)
	wantError(t, e.SetInput("c", float32Tensor(t, []int64{2, 3}, make([]float32, 6))), StatusNotFound, "'c'")
	_, err := e.Output("z")
	wantError(t, err, StatusNotFound, "'z'")
}

func TestWrongShapeIsAnInvalidArgument(t *testing.T) {
	_, e := newAddRelu(t)
	wantError(t, e.SetInput("a", float32Tensor(t, []int64{3, 2}, make([]float32, 6))), StatusInvalidArgument, "'a'")
	wantError(t, e.SetInput("b", float32Tensor(t, []int64{6}, make([]float32, 6))), StatusInvalidArgument, "'b'")
}

func TestWrongDtypeIsAnInvalidArgument(t *testing.T) {
	_, e := newAddRelu(t)
	wantError(t, e.SetInput("a", must(NewInt32Tensor([]int64{2, 3}, make([]int32, 6)))(t)), StatusInvalidArgument, "'a'")
	wantError(t, e.SetInput("a", must(NewFloat64Tensor([]int64{2, 3}, make([]float64, 6)))(t)), StatusInvalidArgument, "'a'")
}

func TestRunWithAnUnboundInputFails(t *testing.T) {
	_, e := newAddRelu(t)
	if err := e.SetInput("a", float32Tensor(t, []int64{2, 3}, make([]float32, 6))); err != nil {
		t.Fatal(err)
	}
	wantError(t, e.Run(), StatusInvalidArgument, "'b'")
}

func TestFailedSetInputKeepsThePreviousValue(t *testing.T) {
	_, e := newAddRelu(t)
	ones := []float32{1, 1, 1, 1, 1, 1}
	e.SetInput("a", float32Tensor(t, []int64{2, 3}, ones))
	e.SetInput("b", float32Tensor(t, []int64{2, 3}, ones))
	if e.SetInput("a", float32Tensor(t, []int64{6}, make([]float32, 6))) == nil {
		t.Fatal("a wrong shape was accepted")
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	assertClose(t, must(must(e.Output("y"))(t).Float32s())(t), []float32{2, 2, 2, 2, 2, 2})
}

func TestTensorsCheckCountsAndTypes(t *testing.T) {
	_, err := NewFloat32Tensor([]int64{4, 2}, make([]float32, 6))
	wantError(t, err, StatusInvalidArgument, "holds 8 elements, the data has 6")
	ints := must(NewInt32Tensor([]int64{2}, []int32{7, 8}))(t)
	_, err = ints.Float32s()
	wantError(t, err, StatusInvalidArgument, "int32, not float32")
	_, err = NewTensor(Float16, []int64{4}, make([]byte, 6))
	wantError(t, err, StatusInvalidArgument, "needs 8 bytes")
	_, err = NewFloat32Tensor([]int64{-1, 6}, make([]float32, 6))
	wantError(t, err, StatusInvalidArgument, "negative")
}

func TestUseAfterClose(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	e := must(m.NewExecutor())(t)
	e.Close()
	e.Close() // twice is allowed
	wantError(t, e.Run(), StatusInvalidArgument, "closed")
	wantError(t, e.SetInput("a", float32Tensor(t, []int64{2, 3}, make([]float32, 6))), StatusInvalidArgument, "closed")
	_, err := e.Output("y")
	wantError(t, err, StatusInvalidArgument, "closed")
	_, err = e.ArenaBytes()
	wantError(t, err, StatusInvalidArgument, "closed")
	m.Close()
	m.Close()
	if !m.nativeFreed() {
		t.Error("module not freed")
	}
	_, err = m.NewExecutor()
	wantError(t, err, StatusInvalidArgument, "closed")
}

func TestNegativeThreadCountIsRefused(t *testing.T) {
	wantError(t, SetNumThreads(-1), StatusInvalidArgument, "")
}
