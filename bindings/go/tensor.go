package agate

import (
	"fmt"
	"unsafe"
)

// DType is a tensor element type as DLPack describes it.
type DType struct {
	Code  uint8 // DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat
	Bits  uint8
	Lanes uint16
}

var (
	Int8     = DType{0, 8, 1}
	Int16    = DType{0, 16, 1}
	Int32    = DType{0, 32, 1}
	Int64    = DType{0, 64, 1}
	Uint8    = DType{1, 8, 1}
	Uint16   = DType{1, 16, 1}
	Uint32   = DType{1, 32, 1}
	Uint64   = DType{1, 64, 1}
	Float16  = DType{2, 16, 1}
	Float32  = DType{2, 32, 1}
	Float64  = DType{2, 64, 1}
	BFloat16 = DType{4, 16, 1}
	Bool     = DType{1, 1, 1} // uint1 as DLPack 0.6 spells it, one byte per element
)

// ElementBytes is the size of one element (sub-byte types take whole bytes).
func (d DType) ElementBytes() int {
	return (int(d.Bits)*int(d.Lanes) + 7) / 8
}

func (d DType) String() string {
	if d == Bool {
		return "bool"
	}
	kinds := map[uint8]string{0: "int", 1: "uint", 2: "float", 4: "bfloat"}
	kind, ok := kinds[d.Code]
	if !ok {
		return fmt.Sprintf("dtype(code=%d, bits=%d, lanes=%d)", d.Code, d.Bits, d.Lanes)
	}
	if d.Lanes != 1 {
		return fmt.Sprintf("%s%dx%d", kind, d.Bits, d.Lanes)
	}
	return fmt.Sprintf("%s%d", kind, d.Bits)
}

// TensorInfo is a model input or output as the module declares it (dense, row-major).
// DimKind says what a dimension of an input or output is at run time (runtime ABI 1.5).
type DimKind int32

const (
	DimStatic         DimKind = 0 // exactly Max (== Min)
	DimSymbolic       DimKind = 1 // any extent in [Min, Max], given by the inputs (a batch symbol on axis 0, or a padded one such as a sequence length on any axes)
	DimValueDependent DimKind = 2 // known after a run: Executor.Output has the run-time shape
)

// DimInfo is one dimension of an input or output: its bounds, symbol and kind.
type DimInfo struct {
	Min, Max int64
	Symbol   string // the symbol's name ("N") of a symbolic dimension, else ""
	Kind     DimKind
}

type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
	Bytes uint64 // the tensor's size in bytes
}

func (t TensorInfo) String() string {
	return fmt.Sprintf("%s: %s%v", t.Name, t.DType, t.Shape)
}

// Tensor is dense row-major data owned by Go: its elements' bytes in native
// byte order, as the runtime reads them.
type Tensor struct {
	DType DType
	Shape []int64
	Data  []byte
}

func elementCount(shape []int64) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, newError(StatusInvalidArgument, "shape %v has a negative dimension", shape)
		}
		n *= int(d)
	}
	return n, nil
}

// bytesOf copies a slice of plain numbers into bytes (native order).
func bytesOf[T int32 | int64 | float32 | float64](values []T) []byte {
	if len(values) == 0 {
		return []byte{}
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&values[0])), len(values)*int(unsafe.Sizeof(values[0])))
	return append([]byte(nil), raw...)
}

func newTensor[T int32 | int64 | float32 | float64](dtype DType, shape []int64, values []T) (*Tensor, error) {
	n, err := elementCount(shape)
	if err != nil {
		return nil, err
	}
	if n != len(values) {
		return nil, newError(StatusInvalidArgument, "shape %v holds %d elements, the data has %d", shape, n, len(values))
	}
	return &Tensor{DType: dtype, Shape: append([]int64(nil), shape...), Data: bytesOf(values)}, nil
}

// NewFloat32Tensor copies values into a float32 tensor of the given shape.
func NewFloat32Tensor(shape []int64, values []float32) (*Tensor, error) {
	return newTensor(Float32, shape, values)
}

// NewFloat64Tensor copies values into a float64 tensor of the given shape.
func NewFloat64Tensor(shape []int64, values []float64) (*Tensor, error) {
	return newTensor(Float64, shape, values)
}

// NewInt32Tensor copies values into an int32 tensor of the given shape.
func NewInt32Tensor(shape []int64, values []int32) (*Tensor, error) {
	return newTensor(Int32, shape, values)
}

// NewInt64Tensor copies values into an int64 tensor of the given shape.
func NewInt64Tensor(shape []int64, values []int64) (*Tensor, error) {
	return newTensor(Int64, shape, values)
}

// NewTensor wraps raw elements of any dtype (e.g. float16), checking their size.
func NewTensor(dtype DType, shape []int64, data []byte) (*Tensor, error) {
	n, err := elementCount(shape)
	if err != nil {
		return nil, err
	}
	if n*dtype.ElementBytes() != len(data) {
		return nil, newError(StatusInvalidArgument, "a %s tensor of shape %v needs %d bytes, %d given",
			dtype, shape, n*dtype.ElementBytes(), len(data))
	}
	return &Tensor{DType: dtype, Shape: append([]int64(nil), shape...), Data: append([]byte(nil), data...)}, nil
}

func valuesOf[T int32 | int64 | float32 | float64](t *Tensor, want DType) ([]T, error) {
	if t.DType != want {
		return nil, newError(StatusInvalidArgument, "the tensor holds %s, not %s", t.DType, want)
	}
	var zero T
	out := make([]T, len(t.Data)/int(unsafe.Sizeof(zero)))
	if len(out) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(t.Data)), t.Data)
	}
	return out, nil
}

// Float32s copies the elements out; an error unless the dtype is float32.
func (t *Tensor) Float32s() ([]float32, error) { return valuesOf[float32](t, Float32) }

// Float64s copies the elements out; an error unless the dtype is float64.
func (t *Tensor) Float64s() ([]float64, error) { return valuesOf[float64](t, Float64) }

// Int32s copies the elements out; an error unless the dtype is int32.
func (t *Tensor) Int32s() ([]int32, error) { return valuesOf[int32](t, Int32) }

// Int64s copies the elements out; an error unless the dtype is int64.
func (t *Tensor) Int64s() ([]int64, error) { return valuesOf[int64](t, Int64) }
