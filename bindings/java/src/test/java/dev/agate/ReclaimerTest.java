package dev.agate;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Modules and executors nobody closed are freed once unreachable (the safety net). */
class ReclaimerTest {
  private static void leak() {
    Module m = Module.fromFile(Fixtures.addRelu());
    Executor e = m.newExecutor();
    e.setInput("a", Tensor.fromFloats(new long[] {2, 3}, new float[6]));
  }

  @Test
  void unreachableModulesAndExecutorsAreFreed() throws Exception {
    long before = Reclaimer.reclaimedByGc();
    for (int i = 0; i < 4; ++i) leak();
    long deadline = System.currentTimeMillis() + 10_000;
    while (Reclaimer.reclaimedByGc() < before + 8 && System.currentTimeMillis() < deadline) {
      System.gc();
      Thread.sleep(20);
    }
    assertTrue(Reclaimer.reclaimedByGc() >= before + 8,
        "reclaimed " + (Reclaimer.reclaimedByGc() - before) + " of 8 leaked handles");
  }
}
