package dev.agate;

import java.util.Arrays;

/** A model input or output as the module declares it: dense, row-major. */
public final class TensorInfo {
  private final String name;
  private final DType dtype;
  private final long[] shape;
  private final long bytes;

  /** Built by the JNI layer from agate_tensor_info. */
  TensorInfo(String name, int code, int bits, int lanes, long[] shape, long bytes) {
    this.name = name;
    this.dtype = new DType(code, bits, lanes);
    this.shape = shape.clone();
    this.bytes = bytes;
  }

  public String name() {
    return name;
  }

  public DType dtype() {
    return dtype;
  }

  /** A copy of the shape. */
  public long[] shape() {
    return shape.clone();
  }

  /** The tensor's size in bytes. */
  public long bytes() {
    return bytes;
  }

  public long numElements() {
    long n = 1;
    for (long d : shape) n *= d;
    return n;
  }

  @Override
  public String toString() {
    return name + ": " + dtype + Arrays.toString(shape);
  }
}
