package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ExecutorTest {
  private static final long[] SHAPE_2X3 = {2, 3};
  private static final long[] SHAPE_4X8 = {4, 8};

  @Test
  void addReluComputesReluOfTheSum() {
    float[] a = {1.0f, -2.0f, 3.5f, 0.0f, -0.5f, 4.0f};
    float[] b = {0.5f, 1.0f, -4.0f, 0.25f, 0.25f, -1.0f};
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      e.setInput("a", Tensor.fromFloats(SHAPE_2X3, a));
      e.setInput("b", Tensor.fromFloats(SHAPE_2X3, b));
      e.run();
      Tensor y = e.getOutput("y");
      assertEquals(DType.FLOAT32, y.dtype());
      assertArrayEquals(SHAPE_2X3, y.shape());
      assertArrayEquals(Fixtures.addReluReference(a, b), y.toFloatArray(), 1e-6f);
    }
  }

  @Test
  void classifierComputesLogitsAndClassesOverSeveralRuns() {
    try (Module m = Module.fromFile(Fixtures.classifier()); Executor e = m.newExecutor(1)) {
      for (int seed = 0; seed < 3; ++seed) {
        float[] x = Fixtures.classifierInput(seed);
        e.setInput("x", Tensor.fromFloats(SHAPE_4X8, x));
        e.run();
        float[] logits = Fixtures.logitsReference(x);
        assertArrayEquals(logits, e.getOutput("logits").toFloatArray(), 1e-5f);
        assertArrayEquals(Fixtures.classesReference(logits), e.getOutput("classes").toIntArray());
      }
    }
  }

  @Test
  void inputsAreCopiedSoTheCallerMayReuseItsArray() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      float[] a = new float[6];
      Arrays.fill(a, 1.0f);
      e.setInput("a", Tensor.fromFloats(SHAPE_2X3, a));
      Arrays.fill(a, -100.0f);
      e.setInput("b", Tensor.fromFloats(SHAPE_2X3, new float[] {2, 2, 2, 2, 2, 2}));
      e.run();
      assertArrayEquals(new float[] {3, 3, 3, 3, 3, 3}, e.getOutput("y").toFloatArray());
      assertEquals(24, e.arenaBytes());
    }
  }

  @Test
  void aModuleClosedBeforeItsExecutorIsFreedAfterIt() {
    Module m = Module.fromFile(Fixtures.addRelu());
    Executor e = m.newExecutor();
    m.close();
    assertFalse(m.isNativeFreed(), "the open executor keeps the native module");
    e.setInput("a", Tensor.fromFloats(SHAPE_2X3, new float[] {1, 1, 1, 1, 1, 1}));
    e.setInput("b", Tensor.fromFloats(SHAPE_2X3, new float[] {-3, 0, 3, -3, 0, 3}));
    e.run();
    assertArrayEquals(new float[] {0, 1, 4, 0, 1, 4}, e.getOutput("y").toFloatArray());
    e.close();
    assertTrue(m.isNativeFreed());
  }

  @Test
  void useAfterCloseThrows() {
    try (Module m = Module.fromFile(Fixtures.addRelu())) {
      Executor e = m.newExecutor();
      e.close();
      e.close(); // closing twice is allowed
      AgateException run = assertThrows(AgateException.class, e::run);
      assertEquals(Status.INVALID_ARGUMENT, run.getStatus());
      assertTrue(run.getMessage().contains("closed"), run.getMessage());
      assertThrows(AgateException.class, () -> e.setInput("a", Tensor.fromFloats(SHAPE_2X3, new float[6])));
      assertThrows(AgateException.class, () -> e.getOutput("y"));
      assertThrows(AgateException.class, e::arenaBytes);
    }
  }
}
