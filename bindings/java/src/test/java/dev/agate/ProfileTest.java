package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class ProfileTest {
  private static final long[] SHAPE_4X8 = {4, 8};

  @Test
  void profiledRunTimesEveryCallAndComputesTheSameOutputs() {
    try (Module m = Module.fromFile(Fixtures.classifier()); Executor e = m.newExecutor(1)) {
      float[] x = Fixtures.classifierInput(2);
      e.setInput("x", Tensor.fromFloats(SHAPE_4X8, x));
      List<CallTime> calls = e.runProfiled();
      assertFalse(calls.isEmpty());
      long total = 0;
      for (CallTime c : calls) {
        assertFalse(c.kernel().isEmpty());
        assertTrue(c.nanos() >= 0, c.toString());
        total += c.nanos();
      }
      assertTrue(total > 0, "no call took any time: " + calls);
      float[] logits = Fixtures.logitsReference(x);
      assertArrayEquals(logits, e.getOutput("logits").toFloatArray(), 1e-5f);
      assertEquals(calls.size(), e.runProfiled().size());
    }
  }

  @Test
  void profilingAClosedExecutorIsAnError() {
    try (Module m = Module.fromFile(Fixtures.classifier())) {
      Executor e = m.newExecutor();
      e.close();
      AgateException error = assertThrows(AgateException.class, e::runProfiled);
      assertEquals(Status.INVALID_ARGUMENT, error.getStatus());
    }
  }
}
