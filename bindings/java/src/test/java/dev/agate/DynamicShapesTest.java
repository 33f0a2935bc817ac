package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * A module with a symbolic batch dimension (runtime ABI 1.5): one executor run at two batch
 * sizes, outputs read at their run-time shapes, bounds exposed, an out-of-bounds batch refused.
 */
class DynamicShapesTest {
  @Test
  void batchModuleRunsAtTwoSizesWithRunTimeOutputShapes() {
    try (Module m = Module.fromFile(Fixtures.batchAddRelu()); Executor e = m.newExecutor()) {
      assertArrayEquals(new long[] {5, 2, 3}, m.inputs().get(0).shape());
      DimInfo dim = m.inputDim("a", 0);
      assertEquals(DimInfo.Kind.SYMBOLIC, dim.kind());
      assertEquals(1, dim.min());
      assertEquals(5, dim.max());
      assertEquals("N", dim.symbol());
      assertEquals(DimInfo.Kind.STATIC, m.outputDim("y", 1).kind());
      for (int n : new int[] {3, 1}) {
        float[] a = new float[n * 6];
        float[] b = new float[n * 6];
        for (int i = 0; i < a.length; ++i) {
          a[i] = i * 0.5f - 3.0f;
          b[i] = 1 - (i % 4);
        }
        long[] shape = {n, 2, 3};
        e.setInput("a", Tensor.fromFloats(shape, a));
        e.setInput("b", Tensor.fromFloats(shape, b));
        e.run();
        Tensor y = e.getOutput("y");
        assertArrayEquals(shape, y.shape());
        assertArrayEquals(Fixtures.addReluReference(a, b), y.toFloatArray(), 1e-6f);
      }
      AgateException error = assertThrows(AgateException.class,
          () -> e.setInput("a", Tensor.fromFloats(new long[] {6, 2, 3}, new float[36])));
      assertEquals(Status.INVALID_ARGUMENT, error.getStatus());
      assertTrue(error.getMessage().contains("has extent 6 on axis 0 (symbol N), outside its bounds 1..5"),
          error.getMessage());
    }
  }

  @Test
  void directBuffersCarryARunTimeBatch() {
    try (Module m = Module.fromFile(Fixtures.batchAddRelu()); Executor e = m.newExecutor()) {
      int n = 3;
      float[] a = new float[n * 6];
      float[] b = new float[n * 6];
      ByteBuffer da = ByteBuffer.allocateDirect(4 * a.length).order(ByteOrder.nativeOrder());
      ByteBuffer db = ByteBuffer.allocateDirect(4 * b.length).order(ByteOrder.nativeOrder());
      for (int i = 0; i < a.length; ++i) {
        a[i] = i * 0.25f - 2.0f;
        b[i] = (i % 3) - 1.0f;
        da.putFloat(4 * i, a[i]);
        db.putFloat(4 * i, b[i]);
      }
      long[] shape = {n, 2, 3};
      e.setInput("a", shape, da);
      e.setInput("b", shape, db);
      e.run();
      ByteBuffer y = ByteBuffer.allocateDirect(4 * a.length).order(ByteOrder.nativeOrder());
      e.getOutput("y", y); // the run's [3, 2, 3], not the bound [5, 2, 3]
      float[] got = new float[a.length];
      for (int i = 0; i < got.length; ++i) got[i] = y.getFloat(4 * i);
      assertArrayEquals(Fixtures.addReluReference(a, b), got, 1e-6f);
      AgateException wrong = assertThrows(AgateException.class,
          () -> e.getOutput("y", ByteBuffer.allocateDirect(4 * 30)));
      assertTrue(wrong.getMessage().contains("the output has 72"), wrong.getMessage());
    }
  }
}
