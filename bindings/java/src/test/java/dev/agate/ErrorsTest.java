package dev.agate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ErrorsTest {
  private static final long[] SHAPE_2X3 = {2, 3};

  private static void assertMentions(AgateException e, String text) {
    assertTrue(e.getMessage().contains(text), "'" + e.getMessage() + "' does not mention " + text);
  }

  @Test
  void missingFileIsNotFoundAndNamesThePath() {
    AgateException e = assertThrows(AgateException.class, () -> Module.fromFile("/nonexistent/dir/model.agm"));
    assertEquals(Status.NOT_FOUND, e.getStatus());
    assertEquals(2, e.getCode());
    assertMentions(e, "/nonexistent/dir/model.agm");
  }

  @Test
  void corruptBytesAreRefused() throws Exception {
    byte[] bytes = Files.readAllBytes(Paths.get(Fixtures.addRelu()));
    AgateException truncated =
        assertThrows(AgateException.class, () -> Module.fromBytes(Arrays.copyOf(bytes, bytes.length / 2)));
    assertEquals(Status.CORRUPT, truncated.getStatus());
    assertFalse(truncated.getMessage().isEmpty());
    byte[] garbage = new byte[256];
    for (int i = 0; i < garbage.length; ++i) garbage[i] = (byte) (i * 37 % 251);
    assertEquals(Status.CORRUPT, assertThrows(AgateException.class, () -> Module.fromBytes(garbage)).getStatus());
    assertEquals(Status.CORRUPT, assertThrows(AgateException.class, () -> Module.fromBytes(new byte[0])).getStatus());
    assertEquals(Status.INVALID_ARGUMENT,
        assertThrows(AgateException.class, () -> Module.fromBytes(null)).getStatus());
  }

  @Test
  void corruptFileIsRefused() throws Exception {
    Path path = Files.createTempFile("agate-java-corrupt", ".agm");
    try {
      Files.write(path, "this is not an agate module".getBytes(StandardCharsets.UTF_8));
      AgateException e = assertThrows(AgateException.class, () -> Module.fromFile(new File(path.toString())));
      assertEquals(Status.CORRUPT, e.getStatus());
    } finally {
      Files.delete(path);
    }
  }

  @Test
  void wrongNamesAreNotFound() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      AgateException in = assertThrows(AgateException.class, () -> e.setInput("c", Tensor.fromFloats(SHAPE_2X3, new float[6])));
      assertEquals(Status.NOT_FOUND, in.getStatus());
      assertMentions(in, "'c'");
      AgateException out = assertThrows(AgateException.class, () -> e.getOutput("z"));
      assertEquals(Status.NOT_FOUND, out.getStatus());
      assertMentions(out, "'z'");
    }
  }

  @Test
  void wrongShapeIsAnInvalidArgumentNamingTheInput() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      AgateException x = assertThrows(AgateException.class,
          () -> e.setInput("a", Tensor.fromFloats(new long[] {3, 2}, new float[6])));
      assertEquals(Status.INVALID_ARGUMENT, x.getStatus());
      assertMentions(x, "'a'");
      assertThrows(AgateException.class, () -> e.setInput("b", Tensor.fromFloats(new long[] {6}, new float[6])));
    }
  }

  @Test
  void wrongDtypeIsAnInvalidArgument() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      AgateException x = assertThrows(AgateException.class,
          () -> e.setInput("a", Tensor.fromInts(SHAPE_2X3, new int[6])));
      assertEquals(Status.INVALID_ARGUMENT, x.getStatus());
      assertMentions(x, "'a'");
      assertThrows(AgateException.class, () -> e.setInput("a", Tensor.fromDoubles(SHAPE_2X3, new double[6])));
    }
  }

  @Test
  void runningWithAnUnboundInputFails() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      e.setInput("a", Tensor.fromFloats(SHAPE_2X3, new float[6]));
      AgateException x = assertThrows(AgateException.class, e::run);
      assertEquals(Status.INVALID_ARGUMENT, x.getStatus());
      assertMentions(x, "'b'");
    }
  }

  @Test
  void aFailedSetInputKeepsThePreviousValue() {
    try (Module m = Module.fromFile(Fixtures.addRelu()); Executor e = m.newExecutor()) {
      float[] ones = {1, 1, 1, 1, 1, 1};
      e.setInput("a", Tensor.fromFloats(SHAPE_2X3, ones));
      e.setInput("b", Tensor.fromFloats(SHAPE_2X3, ones));
      assertThrows(AgateException.class, () -> e.setInput("a", Tensor.fromFloats(new long[] {6}, new float[6])));
      e.run();
      assertArrayEquals(new float[] {2, 2, 2, 2, 2, 2}, e.getOutput("y").toFloatArray());
    }
  }

  @Test
  void tensorsCheckCountsAndTypes() {
    AgateException count = assertThrows(AgateException.class, () -> Tensor.fromFloats(new long[] {4, 2}, new float[6]));
    assertEquals(Status.INVALID_ARGUMENT, count.getStatus());
    assertMentions(count, "holds 8 elements, the data has 6");
    Tensor ints = Tensor.fromInts(new long[] {2}, new int[] {7, 8});
    assertMentions(assertThrows(AgateException.class, ints::toFloatArray), "int32, not float32");
    assertThrows(AgateException.class, () -> Tensor.fromBytes(DType.FLOAT16, new long[] {4}, new byte[6]));
    assertEquals(3, Tensor.fromBytes(DType.FLOAT16, new long[] {3}, new byte[6]).numElements());
  }

  @Test
  void aNegativeThreadCountIsRefused() {
    assertEquals(Status.INVALID_ARGUMENT,
        assertThrows(AgateException.class, () -> Module.setNumThreads(-1)).getStatus());
  }
}
