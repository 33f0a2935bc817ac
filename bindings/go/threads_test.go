package agate

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// One module shared by several goroutines, one executor each (the documented contract).
const (
	goroutines = 8
	runs       = 50
)

func TestGoroutinesShareOneModule(t *testing.T) {
	m := must(LoadFile(fixture(t, "classifier.agm")))(t)
	defer m.Close()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			errs <- func() error {
				e, err := m.NewExecutor()
				if err != nil {
					return err
				}
				defer e.Close()
				for run := 0; run < runs; run++ {
					x := classifierInput(g*runs + run)
					tensor, _ := NewFloat32Tensor([]int64{4, 8}, x)
					if err := e.SetInput("x", tensor); err != nil {
						return err
					}
					if err := e.Run(); err != nil {
						return err
					}
					out, err := e.Output("classes")
					if err != nil {
						return err
					}
					got, _ := out.Int32s()
					if _, want := classifierReference(x); !reflect.DeepEqual(got, want) {
						return fmt.Errorf("goroutine %d run %d: classes %v, want %v", g, run, got, want)
					}
				}
				return nil
			}()
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// The runtime's message is thread-local and goroutines move between threads:
// each goroutine must still see the message of its own failed call.
func TestErrorMessagesStayWithTheirGoroutine(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	defer m.Close()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			e, err := m.NewExecutor()
			if err != nil {
				errs <- err
				return
			}
			defer e.Close()
			tensor, _ := NewFloat32Tensor([]int64{2, 3}, make([]float32, 6))
			for run := 0; run < runs; run++ {
				bad := fmt.Sprintf("missing_%d_%d", g, run)
				err := e.SetInput(bad, tensor)
				if err == nil || !strings.Contains(err.Error(), bad) {
					errs <- fmt.Errorf("goroutine %d: got %v for %s", g, err, bad)
					return
				}
				runtime.Gosched()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func leak(t *testing.T) {
	m := must(LoadFile(fixture(t, "add_relu.agm")))(t)
	e := must(m.NewExecutor())(t)
	if err := e.SetInput("a", float32Tensor(t, []int64{2, 3}, make([]float32, 6))); err != nil {
		t.Fatal(err)
	}
}

// Modules and executors nobody closed are freed by their finalizers.
func TestFinalizersFreeWhatNobodyClosed(t *testing.T) {
	modules := finalizedForTesting.modules.Load()
	executors := finalizedForTesting.executors.Load()
	for i := 0; i < 4; i++ {
		leak(t)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) &&
		(finalizedForTesting.modules.Load() < modules+4 || finalizedForTesting.executors.Load() < executors+4) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := finalizedForTesting.modules.Load() - modules; got < 4 {
		t.Errorf("%d of 4 leaked modules finalized", got)
	}
	if got := finalizedForTesting.executors.Load() - executors; got < 4 {
		t.Errorf("%d of 4 leaked executors finalized", got)
	}
}
