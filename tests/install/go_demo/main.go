// Runs the demo module through the agate Go package (a local module, linked
// against the runtime that `./agate install` installed, found by pkg-config) and
// compares its output with PyTorch's.
// Usage: agate_go_demo MODULE INPUT EXPECTED (raw float32: 3x32x32 in, 10 out).
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"agate.dev/agate"
)

func floats(path string) []float32 {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

func run() error {
	if len(os.Args) != 4 {
		return fmt.Errorf("usage: agate_go_demo MODULE INPUT EXPECTED")
	}
	input, expected := floats(os.Args[2]), floats(os.Args[3])
	m, err := agate.LoadFile(os.Args[1])
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := m.NewExecutor()
	if err != nil {
		return err
	}
	defer e.Close()
	x, err := agate.NewFloat32Tensor([]int64{1, 3, 32, 32}, input)
	if err != nil {
		return err
	}
	if err := e.SetInput(m.Inputs()[0].Name, x); err != nil {
		return err
	}
	if err := e.Run(); err != nil {
		return err
	}
	out, err := e.Output(m.Outputs()[0].Name)
	if err != nil {
		return err
	}
	got, err := out.Float32s()
	if err != nil {
		return err
	}
	if len(got) != len(expected) {
		return fmt.Errorf("%d outputs, PyTorch %d", len(got), len(expected))
	}
	for i := range got {
		if math.Abs(float64(got[i]-expected[i])) > 1e-4+1e-4*math.Abs(float64(expected[i])) {
			return fmt.Errorf("output[%d] = %g, PyTorch %g", i, got[i], expected[i])
		}
	}
	fmt.Printf("go demo: %d outputs match PyTorch\n", len(got))
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
