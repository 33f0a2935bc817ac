package dev.agate;

/** A tensor element type as DLPack describes it: type code, bits, lanes. */
public final class DType {
  static final int CODE_INT = 0;
  static final int CODE_UINT = 1;
  static final int CODE_FLOAT = 2;
  static final int CODE_BFLOAT = 4;

  public static final DType INT8 = new DType(CODE_INT, 8, 1);
  public static final DType INT16 = new DType(CODE_INT, 16, 1);
  public static final DType INT32 = new DType(CODE_INT, 32, 1);
  public static final DType INT64 = new DType(CODE_INT, 64, 1);
  public static final DType UINT8 = new DType(CODE_UINT, 8, 1);
  public static final DType UINT16 = new DType(CODE_UINT, 16, 1);
  public static final DType UINT32 = new DType(CODE_UINT, 32, 1);
  public static final DType UINT64 = new DType(CODE_UINT, 64, 1);
  public static final DType FLOAT16 = new DType(CODE_FLOAT, 16, 1);
  public static final DType FLOAT32 = new DType(CODE_FLOAT, 32, 1);
  public static final DType FLOAT64 = new DType(CODE_FLOAT, 64, 1);
  public static final DType BFLOAT16 = new DType(CODE_BFLOAT, 16, 1);
  /** agate's bool: uint1 as DLPack 0.6 spells it, one byte per element. */
  public static final DType BOOL = new DType(CODE_UINT, 1, 1);

  private final int code;
  private final int bits;
  private final int lanes;

  public DType(int code, int bits, int lanes) {
    this.code = code;
    this.bits = bits;
    this.lanes = lanes;
  }

  public int code() {
    return code;
  }

  public int bits() {
    return bits;
  }

  public int lanes() {
    return lanes;
  }

  /** Bytes of one element (sub-byte types take whole bytes). */
  public int elementBytes() {
    return (bits * lanes + 7) / 8;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof DType)) return false;
    DType d = (DType) o;
    return code == d.code && bits == d.bits && lanes == d.lanes;
  }

  @Override
  public int hashCode() {
    return (code * 31 + bits) * 31 + lanes;
  }

  @Override
  public String toString() {
    if (equals(BOOL)) return "bool";
    String kind;
    switch (code) {
      case CODE_INT: kind = "int"; break;
      case CODE_UINT: kind = "uint"; break;
      case CODE_FLOAT: kind = "float"; break;
      case CODE_BFLOAT: kind = "bfloat"; break;
      default: return "dtype(code=" + code + ", bits=" + bits + ", lanes=" + lanes + ")";
    }
    return kind + bits + (lanes != 1 ? "x" + lanes : "");
  }
}
