package agate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func kernelFiles(t *testing.T, dir string) int {
	matches, err := filepath.Glob(filepath.Join(dir, "agate-kernels-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(matches)
}

// Kernels written to a caller-named directory (runtime ABI 1.4: Android before API 30).
func TestKernelDirHoldsEachLoadedModulesKernelsUntilItIsClosed(t *testing.T) {
	dir := t.TempDir()
	if err := SetKernelDir(dir); err != nil {
		t.Fatal(err)
	}
	defer SetKernelDir("")
	m, err := LoadFile(fixture(t, "add_relu.agm"))
	if err != nil {
		t.Fatal(err)
	}
	if n := kernelFiles(t, dir); n != 1 {
		t.Fatalf("%d kernel files in %s, want 1", n, dir)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := kernelFiles(t, dir); n != 0 {
		t.Fatalf("%d kernel files left after Close", n)
	}
	err = SetKernelDir(filepath.Join(dir, "missing"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing directory gave %v", err)
	}
	if _, statErr := os.Stat(dir); statErr != nil {
		t.Fatal(statErr)
	}
}
