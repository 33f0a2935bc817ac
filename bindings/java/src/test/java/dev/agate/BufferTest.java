package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** Inputs and outputs through java.nio.ByteBuffer: direct buffers bound without a copy, heap buffers copied. */
class BufferTest {
  private static final float[] A = {1.0f, -2.0f, 3.5f, 0.0f, -0.5f, 4.0f};
  private static final float[] B = {0.5f, 1.0f, -4.0f, 0.25f, 0.25f, -1.0f};

  private static ByteBuffer floats(boolean direct, int padding, float[] values) {
    int bytes = 4 * values.length + padding;
    ByteBuffer b = (direct ? ByteBuffer.allocateDirect(bytes) : ByteBuffer.allocate(bytes)).order(ByteOrder.nativeOrder());
    b.position(padding);
    for (float v : values) b.putFloat(v);
    b.position(padding);
    return b;
  }

  private static float[] read(ByteBuffer b, int count) {
    ByteBuffer view = b.duplicate().order(ByteOrder.nativeOrder());
    float[] values = new float[count];
    for (int i = 0; i < count; ++i) values[i] = view.getFloat();
    return values;
  }

  @Test
  void directInputsAreReadInPlaceAtEachRun() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      ByteBuffer a = floats(true, 0, A);
      e.setInput("a", a);
      e.setInput("b", floats(true, 0, B));
      System.gc(); // the executor keeps the bound buffers reachable
      e.run();
      ByteBuffer y = ByteBuffer.allocateDirect(24).order(ByteOrder.nativeOrder());
      e.getOutput("y", y);
      assertArrayEquals(Fixtures.addReluReference(A, B), read(y, 6), 1e-6f);
      assertEquals(0, y.position(), "the output buffer's position is unchanged");
      // No copy: a change to the bound buffer is what the next run reads.
      a.putFloat(0, 10.0f);
      e.run();
      float[] a2 = A.clone();
      a2[0] = 10.0f;
      assertArrayEquals(Fixtures.addReluReference(a2, B), e.getOutput("y").toFloatArray(), 1e-6f);
    }
  }

  @Test
  void aBufferIsReadFromItsPositionToItsLimit() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      ByteBuffer a = floats(true, 8, A); // position 8: two floats of padding before the input
      e.setInput("a", a);
      assertEquals(8, a.position(), "setInput leaves the position alone");
      e.setInput("b", floats(false, 4, B)); // a heap buffer, copied
      e.run();
      ByteBuffer y = ByteBuffer.allocate(4 + 24).order(ByteOrder.nativeOrder());
      y.position(4);
      e.getOutput("y", y);
      assertArrayEquals(Fixtures.addReluReference(A, B), read(y, 6), 1e-6f);
    }
  }

  @Test
  void heapInputsAreCopied() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      ByteBuffer a = floats(false, 0, A);
      e.setInput("a", a);
      e.setInput("b", floats(false, 0, B));
      a.putFloat(0, 10.0f); // after the copy: not seen by the run
      e.run();
      assertArrayEquals(Fixtures.addReluReference(A, B), e.getOutput("y").toFloatArray(), 1e-6f);
    }
  }

  @Test
  void aTensorBindingReplacesABufferBinding() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      ByteBuffer a = floats(true, 0, A);
      e.setInput("a", a);
      e.setInput("a", Tensor.fromFloats(new long[] {2, 3}, A));
      e.setInput("b", floats(true, 0, B));
      a.putFloat(0, 10.0f); // no longer bound
      e.run();
      assertArrayEquals(Fixtures.addReluReference(A, B), e.getOutput("y").toFloatArray(), 1e-6f);
    }
  }

  @Test
  void wrongSizesAndReadOnlyOutputsAreErrorsNamingTheTensor() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      for (boolean direct : new boolean[] {true, false}) {
        ByteBuffer small = floats(direct, 0, new float[5]);
        AgateException in = assertThrows(AgateException.class, () -> e.setInput("a", small));
        assertEquals(Status.INVALID_ARGUMENT, in.getStatus());
        assertTrue(in.getMessage().contains("'a'") && in.getMessage().contains("20 bytes")
            && in.getMessage().contains("24"), in.getMessage());
      }
      e.setInput("a", floats(true, 0, A));
      e.setInput("b", floats(true, 0, B));
      e.run();
      for (boolean direct : new boolean[] {true, false}) {
        ByteBuffer big = direct ? ByteBuffer.allocateDirect(28) : ByteBuffer.allocate(28);
        AgateException out = assertThrows(AgateException.class, () -> e.getOutput("y", big));
        assertEquals(Status.INVALID_ARGUMENT, out.getStatus());
        assertTrue(out.getMessage().contains("'y'") && out.getMessage().contains("28 bytes"), out.getMessage());
      }
      AgateException readOnly =
          assertThrows(AgateException.class, () -> e.getOutput("y", ByteBuffer.allocateDirect(24).asReadOnlyBuffer()));
      assertTrue(readOnly.getMessage().contains("read-only"), readOnly.getMessage());
      AgateException missing = assertThrows(AgateException.class, () -> e.setInput("nope", floats(true, 0, A)));
      assertEquals(Status.NOT_FOUND, missing.getStatus());
      AgateException none = assertThrows(AgateException.class, () -> e.setInput("a", (ByteBuffer) null));
      assertEquals(Status.INVALID_ARGUMENT, none.getStatus());
    }
  }
}
