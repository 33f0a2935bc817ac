package dev.agate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import org.junit.jupiter.api.Test;

class NativeLoaderTest {
  @Test
  void namesThisMachinesResourceFolder() {
    String folder = NativeLoader.resourceFolder();
    assertTrue(folder.equals("dev/agate/native/linux-x86_64") || folder.equals("dev/agate/native/linux-aarch64"),
        folder);
  }

  /**
   * The suite runs the tests from the jar with no java.library.path and -Dagate.native.dir
   * (agate.test.expect.jar=true): the libraries must have come out of the jar into that folder.
   */
  @Test
  void loadsTheLibrariesFromTheJarIntoTheNamedFolder() {
    assumeTrue(Boolean.getBoolean("agate.test.expect.jar"), "run from the jar by tools/ci/suites/java.sh");
    assertEquals(1, Module.runtimeAbiVersion() >> 16);
    File dir = new File(System.getProperty("agate.native.dir"));
    assertEquals(dir.getAbsolutePath(), NativeLoader.loadedFrom);
    assertTrue(new File(dir, "libagate_jni.so").isFile());
    assertTrue(new File(dir, "libagate_runtime.so").isFile());
    String[] left = dir.list();
    for (String name : left) assertTrue(!name.endsWith(".partial"), name);
  }
}
