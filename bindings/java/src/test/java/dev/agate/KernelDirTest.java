package dev.agate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.File;
import java.io.FilenameFilter;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** Kernels written to a caller-named directory (runtime ABI 1.4: Android before API 30). */
class KernelDirTest {
  private static int kernelFiles(File dir) {
    String[] names = dir.list(new FilenameFilter() {
      @Override
      public boolean accept(File d, String name) {
        return name.startsWith("agate-kernels-");
      }
    });
    return names == null ? -1 : names.length;
  }

  @Test
  void holdsEachLoadedModulesKernelsUntilItIsClosed() throws IOException {
    File dir = File.createTempFile("agate-java-kernel-dir", "");
    assertEquals(true, dir.delete() && dir.mkdir());
    try {
      Module.setKernelDir(dir.getPath());
      try (Module m = Module.fromFile(Fixtures.addRelu())) {
        assertEquals(1, kernelFiles(dir));
      }
      assertEquals(0, kernelFiles(dir));
      AgateException e = assertThrows(AgateException.class,
          () -> Module.setKernelDir(new File(dir, "missing").getPath()));
      assertEquals(Status.NOT_FOUND, e.getStatus());
    } finally {
      Module.setKernelDir(null);
      dir.delete();
    }
  }
}
