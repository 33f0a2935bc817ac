package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * CUDA modules (runtime ABI 1.2). Each test is skipped, saying why, when the
 * runtime sees no GPU; the suite (tools/ci/suites/java.sh) runs them against
 * the fake CUDA driver where no NVIDIA driver is installed
 * (bindings/testdata/cuda_env.sh).
 */
class CudaTest {
  private static final long[] SHAPE = {256};

  /** Skips the test (with the runtime's reason) unless a GPU is there. */
  private static void assumeGpu() {
    String why;
    try {
      int count = Module.cudaDeviceCount();
      why = count > 0 ? null : "the CUDA driver sees no GPU";
    } catch (AgateException e) {
      why = "no GPU: " + e.getMessage();
    }
    assumeTrue(why == null, why);
  }

  private static String cudaAdd() {
    return new File(Fixtures.dir(), "cuda_add.agm").getPath();
  }

  /** The CUDA test module: y = (x + c) + x on float32[256], c[i] = i / 2. */
  private static float[] input(float seed) {
    float[] x = new float[256];
    for (int i = 0; i < x.length; ++i) x[i] = seed + i % 7 - 3;
    return x;
  }

  private static float[] reference(float[] x) {
    float[] y = new float[x.length];
    for (int i = 0; i < x.length; ++i) y[i] = (x[i] + i * 0.5f) + x[i];
    return y;
  }

  @Test
  void aCudaModuleRunsOnTheGpu() {
    assumeGpu();
    try (Module m = Module.fromFile(cudaAdd(), 0); Executor e = m.newExecutor()) {
      assertEquals(Device.cuda(0), m.device());
      float[] x = input(1);
      e.setInput("x", Tensor.fromFloats(SHAPE, x));
      for (int run = 0; run < 3; ++run) {
        e.run();
        assertArrayEquals(reference(x), e.getOutput("y").toFloatArray());
      }
      List<CallTime> calls = e.runProfiled();
      assertEquals(2, calls.size());
      assertEquals("agate_cuda_add", calls.get(0).kernel());
    }
  }

  @Test
  void deviceMemoryPassesBetweenExecutorsWithoutCopies() {
    assumeGpu();
    try (Module m = Module.fromFile(cudaAdd(), 0);
        Executor first = m.newExecutor();
        Executor second = m.newExecutor();
        Executor target = m.newExecutor()) {
      float[] x = input(2);
      first.setInput("x", Tensor.fromFloats(SHAPE, x));
      first.run();
      second.setInputDevicePointer("x", first.outputDevicePointer("y"));
      second.setOutputDevicePointer("y", target.outputDevicePointer("y"));
      second.run();
      float[] z = reference(reference(x));
      assertArrayEquals(z, second.getOutput("y").toFloatArray());
      assertArrayEquals(z, target.getOutput("y").toFloatArray(), "written into target's memory");
      second.resetOutput("y");
      assertNotEquals(target.outputDevicePointer("y"), second.outputDevicePointer("y"));
      AgateException wrong = assertThrows(AgateException.class, () -> second.setInputDevicePointer("x", 16));
      assertEquals(Status.INVALID_ARGUMENT, wrong.getStatus());
      assertTrue(wrong.getMessage().contains("input 0 'x'"), wrong.getMessage());
      second.run();
      assertArrayEquals(z, second.getOutput("y").toFloatArray());
    }
  }

  @Test
  void devicesThatDoNotExistOrDoNotFitAreRefused() {
    boolean gpu;
    try {
      gpu = Module.cudaDeviceCount() > 0;
    } catch (AgateException e) {
      gpu = false;
      assertEquals(Status.UNAVAILABLE, e.getStatus());
    }
    if (gpu) {
      AgateException missing = assertThrows(AgateException.class, () -> Module.fromFile(cudaAdd(), 1000));
      assertEquals(Status.OUT_OF_RANGE, missing.getStatus());
    }
    AgateException cpu = assertThrows(AgateException.class, () -> Module.fromFile(Fixtures.addRelu(), 1));
    assertEquals(Status.INVALID_ARGUMENT, cpu.getStatus());
    try (Module m = Module.fromFile(Fixtures.addRelu(), 0); Executor e = m.newExecutor()) {
      assertEquals(Device.CPU, m.device());
      AgateException host = assertThrows(AgateException.class, () -> e.outputDevicePointer("y"));
      assertEquals(Status.UNSUPPORTED, host.getStatus());
    }
  }
}
