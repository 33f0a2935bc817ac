package agate

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Where the fixture modules are and the numbers they compute
// (bindings/testdata/fixture_kernels.h).

const (
	batch    = 4
	features = 8
	classes  = 3
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("AGATE_TESTDATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "out", "modules")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no fixture %s: run bindings/testdata/prepare.sh (or set AGATE_TESTDATA_DIR)", path)
	}
	return path
}

func addReluReference(a, b []float32) []float32 {
	y := make([]float32, len(a))
	for i := range a {
		y[i] = float32(math.Max(float64(a[i]+b[i]), 0))
	}
	return y
}

func classifierInput(seed int) []float32 {
	x := make([]float32, batch*features)
	for i := range x {
		x[i] = (float32((i*7+seed*13)%11) - 5) / 3
	}
	return x
}

func classifierReference(x []float32) ([]float32, []int32) {
	logits := make([]float32, batch*classes)
	best := make([]int32, batch)
	for r := 0; r < batch; r++ {
		for j := 0; j < classes; j++ {
			sum := float32(j-1) / 2
			for k := 0; k < features; k++ {
				sum += x[r*features+k] * (float32((3*k+5*j)%7-3) / 4)
			}
			logits[r*classes+j] = sum
		}
		for j := 1; j < classes; j++ {
			if logits[r*classes+j] > logits[r*classes+int(best[r])] {
				best[r] = int32(j)
			}
		}
	}
	return logits, best
}

func assertClose(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("element %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// must(f())(t): the value of a (value, error) call, failing the test on error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func float32Tensor(t *testing.T, shape []int64, values []float32) *Tensor {
	t.Helper()
	return must(NewFloat32Tensor(shape, values))(t)
}
