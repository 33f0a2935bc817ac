package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

class ModuleTest {
  @Test
  void loadsFromFileAndListsInputsAndOutputs() {
    try (Module m = Module.fromFile(Fixtures.addRelu())) {
      assertTrue(m.target().startsWith("llvm"), m.target());
      assertEquals(2, m.inputs().size());
      assertEquals("a", m.inputs().get(0).name());
      assertEquals("b", m.inputs().get(1).name());
      TensorInfo y = m.outputs().get(0);
      assertEquals("y", y.name());
      assertEquals(DType.FLOAT32, y.dtype());
      assertArrayEquals(new long[] {2, 3}, y.shape());
      assertEquals(24, y.bytes());
      assertEquals(6, y.numElements());
      assertEquals("y: float32[2, 3]", y.toString());
    }
  }

  @Test
  void loadsFromBytesWithMixedOutputDtypes() throws Exception {
    byte[] bytes = Files.readAllBytes(Paths.get(Fixtures.classifier()));
    try (Module m = Module.fromBytes(bytes)) {
      assertArrayEquals(new long[] {4, 8}, m.inputs().get(0).shape());
      assertEquals("logits", m.outputs().get(0).name());
      assertEquals(DType.FLOAT32, m.outputs().get(0).dtype());
      assertEquals("classes", m.outputs().get(1).name());
      assertEquals(DType.INT32, m.outputs().get(1).dtype());
      assertArrayEquals(new long[] {4}, m.outputs().get(1).shape());
    }
  }

  @Test
  void useAfterCloseThrows() {
    Module m = Module.fromFile(Fixtures.addRelu());
    m.close();
    m.close(); // closing twice is allowed
    assertTrue(m.isNativeFreed());
    AgateException e = assertThrows(AgateException.class, m::newExecutor);
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertThrows(AgateException.class, m::inputs);
    assertThrows(AgateException.class, m::target);
  }

  @Test
  void reportsRuntimeAbiAndThreads() {
    assertEquals(1, Module.runtimeAbiVersion() >>> 16);
    assertTrue(Module.numThreads() >= 1);
  }

  @Test
  void dtypesPrintAndSize() {
    assertEquals("bool", DType.BOOL.toString());
    assertEquals(1, DType.BOOL.elementBytes());
    assertEquals("bfloat16", DType.BFLOAT16.toString());
    assertEquals("float32x4", new DType(2, 32, 4).toString());
    assertEquals(Status.CORRUPT, Status.fromCode(5));
    assertEquals(Status.UNKNOWN, Status.fromCode(99));
  }
}
