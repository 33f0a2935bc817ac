package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** One module shared by several threads, one executor per thread (the documented contract). */
class ThreadsTest {
  private static final int THREADS = 8;
  private static final int RUNS = 50;

  @Test
  void threadsShareOneModuleWithAnExecutorEach() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try (Module m = Module.fromFile(Fixtures.classifier())) {
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < THREADS; ++t) {
        final int thread = t;
        results.add(pool.submit(() -> {
          try (Executor e = m.newExecutor()) {
            for (int run = 0; run < RUNS; ++run) {
              float[] x = Fixtures.classifierInput(thread * RUNS + run);
              e.setInput("x", Tensor.fromFloats(new long[] {4, 8}, x));
              e.run();
              float[] logits = Fixtures.logitsReference(x);
              assertArrayEquals(logits, e.getOutput("logits").toFloatArray(), 1e-5f);
              assertArrayEquals(Fixtures.classesReference(logits), e.getOutput("classes").toIntArray());
            }
          }
          return RUNS;
        }));
      }
      for (Future<Integer> f : results) assertEquals(RUNS, f.get().intValue());
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void errorMessagesStayWithTheirThread() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try (Module m = Module.fromFile(Fixtures.addRelu())) {
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < THREADS; ++t) {
        final int thread = t;
        results.add(pool.submit(() -> {
          try (Executor e = m.newExecutor()) {
            for (int run = 0; run < RUNS; ++run) {
              String bad = "missing_" + thread + "_" + run;
              try {
                e.setInput(bad, Tensor.fromFloats(new long[] {2, 3}, new float[6]));
                throw new AssertionError("no error for " + bad);
              } catch (AgateException x) {
                assertTrue(x.getMessage().contains(bad), x.getMessage());
              }
            }
          }
          return RUNS;
        }));
      }
      for (Future<Integer> f : results) assertEquals(RUNS, f.get().intValue());
    } finally {
      pool.shutdown();
    }
  }
}
