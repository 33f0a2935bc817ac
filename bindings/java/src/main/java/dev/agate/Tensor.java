package dev.agate;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Dense row-major tensor data owned by Java: an element type, a shape and the
 * elements' bytes in native byte order (what the runtime reads). Immutable: the
 * factories copy their arrays, the accessors return copies.
 */
public final class Tensor {
  private final DType dtype;
  private final long[] shape;
  private final byte[] data;

  private Tensor(DType dtype, long[] shape, byte[] data) {
    this.dtype = dtype;
    this.shape = shape;
    this.data = data;
  }

  private static long elementCount(long[] shape) {
    long n = 1;
    for (long d : shape) {
      if (d < 0) {
        throw new AgateException(Status.INVALID_ARGUMENT, "shape " + Arrays.toString(shape) + " has a negative dimension");
      }
      n *= d;
    }
    return n;
  }

  private static void checkCount(long[] shape, int length) {
    long count = elementCount(shape);
    if (count != length) {
      throw new AgateException(Status.INVALID_ARGUMENT,
          "shape " + Arrays.toString(shape) + " holds " + count + " elements, the data has " + length);
    }
  }

  private static ByteBuffer allocate(int elements, int elementBytes) {
    return ByteBuffer.allocate(elements * elementBytes).order(ByteOrder.nativeOrder());
  }

  public static Tensor fromFloats(long[] shape, float[] values) {
    checkCount(shape, values.length);
    ByteBuffer b = allocate(values.length, 4);
    b.asFloatBuffer().put(values);
    return new Tensor(DType.FLOAT32, shape.clone(), b.array());
  }

  public static Tensor fromDoubles(long[] shape, double[] values) {
    checkCount(shape, values.length);
    ByteBuffer b = allocate(values.length, 8);
    b.asDoubleBuffer().put(values);
    return new Tensor(DType.FLOAT64, shape.clone(), b.array());
  }

  public static Tensor fromInts(long[] shape, int[] values) {
    checkCount(shape, values.length);
    ByteBuffer b = allocate(values.length, 4);
    b.asIntBuffer().put(values);
    return new Tensor(DType.INT32, shape.clone(), b.array());
  }

  public static Tensor fromLongs(long[] shape, long[] values) {
    checkCount(shape, values.length);
    ByteBuffer b = allocate(values.length, 8);
    b.asLongBuffer().put(values);
    return new Tensor(DType.INT64, shape.clone(), b.array());
  }

  /** Raw elements of any dtype (e.g. float16) in native byte order. */
  public static Tensor fromBytes(DType dtype, long[] shape, byte[] bytes) {
    long expected = elementCount(shape) * dtype.elementBytes();
    if (expected != bytes.length) {
      throw new AgateException(Status.INVALID_ARGUMENT, "a " + dtype + " tensor of shape " + Arrays.toString(shape)
          + " needs " + expected + " bytes, " + bytes.length + " given");
    }
    return new Tensor(dtype, shape.clone(), bytes.clone());
  }

  /** Wraps bytes the binding just copied out of the runtime (not copied again). */
  static Tensor adopt(TensorInfo info, byte[] bytes) {
    return new Tensor(info.dtype(), info.shape(), bytes);
  }

  static Tensor adopt(DType dtype, long[] shape, byte[] bytes) {
    return new Tensor(dtype, shape, bytes);
  }

  public DType dtype() {
    return dtype;
  }

  public long[] shape() {
    return shape.clone();
  }

  public long numElements() {
    return elementCount(shape);
  }

  /** A copy of the raw bytes, native byte order. */
  public byte[] toByteArray() {
    return data.clone();
  }

  /** A read-only view of the raw bytes, native byte order. */
  public ByteBuffer asByteBuffer() {
    return ByteBuffer.wrap(data).asReadOnlyBuffer().order(ByteOrder.nativeOrder());
  }

  private ByteBuffer typed(DType expected) {
    if (!dtype.equals(expected)) {
      throw new AgateException(Status.INVALID_ARGUMENT, "the tensor holds " + dtype + ", not " + expected);
    }
    return asByteBuffer();
  }

  public float[] toFloatArray() {
    float[] out = new float[data.length / 4];
    typed(DType.FLOAT32).asFloatBuffer().get(out);
    return out;
  }

  public double[] toDoubleArray() {
    double[] out = new double[data.length / 8];
    typed(DType.FLOAT64).asDoubleBuffer().get(out);
    return out;
  }

  public int[] toIntArray() {
    int[] out = new int[data.length / 4];
    typed(DType.INT32).asIntBuffer().get(out);
    return out;
  }

  public long[] toLongArray() {
    long[] out = new long[data.length / 8];
    typed(DType.INT64).asLongBuffer().get(out);
    return out;
  }

  /** The bytes the JNI layer copies in (not a copy: package-private). */
  byte[] bytes() {
    return data;
  }

  @Override
  public String toString() {
    return "Tensor(" + dtype + Arrays.toString(shape) + ")";
  }
}
