package dev.agate;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Locale;

/**
 * Loads the JNI library ({@code agate_jni}) and the runtime it links ({@code agate_runtime}).
 *
 * <p>First from the library path ({@code System.loadLibrary}: on Android the APK's or AAR's
 * {@code jni/<abi>/} libraries, elsewhere {@code java.library.path}). Where that fails, from the
 * jar itself: the build puts both libraries under {@code dev/agate/native/<os>-<arch>/}
 * ({@code linux-x86_64}, {@code linux-aarch64}); they are copied to the folder named by the
 * system property {@code agate.native.dir} (made if missing; reused across runs), or else to a
 * fresh temporary folder deleted when the JVM exits, and loaded from there. A copy is written to
 * a temporary name and renamed, so concurrent processes sharing the folder never load a
 * half-written file. Java 8 and Android APIs only (no java.nio.file).
 */
final class NativeLoader {
  /** The jar's resource folder for this machine, e.g. "dev/agate/native/linux-x86_64". */
  static String resourceFolder() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x86_64")) arch = "x86_64";
    if (arch.equals("arm64")) arch = "aarch64";
    return "dev/agate/native/" + (os.startsWith("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch;
  }

  /** Where the libraries came from: "library path" or the folder they were extracted to. */
  static volatile String loadedFrom = "";

  private NativeLoader() {}

  static void load() {
    UnsatisfiedLinkError fromPath;
    try {
      loadFromLibraryPath();
      loadedFrom = "library path";
      return;
    } catch (UnsatisfiedLinkError e) {
      fromPath = e;
    }
    String folder = resourceFolder();
    if (NativeLoader.class.getClassLoader().getResource(folder + "/libagate_jni.so") == null) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError("agate_jni is neither on the library path ("
          + fromPath.getMessage() + ") nor in this jar (no resource " + folder
          + "/libagate_jni.so): put libagate_jni.so and libagate_runtime.so on java.library.path, or use the jar "
          + "built for this machine");
      error.initCause(fromPath);
      throw error;
    }
    try {
      File dir = extractionFolder();
      File runtime = extract(folder + "/libagate_runtime.so", dir);
      File jni = extract(folder + "/libagate_jni.so", dir);
      System.load(runtime.getAbsolutePath());
      System.load(jni.getAbsolutePath());
      loadedFrom = dir.getAbsolutePath();
    } catch (IOException e) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot extract agate's native libraries from the jar: "
          + e.getMessage());
      error.initCause(e);
      throw error;
    }
  }

  private static void loadFromLibraryPath() {
    // agate_jni needs libagate_runtime.so. Android before 6.0 (API 23) does not resolve a
    // library's dependencies from the app's own directory, so load it first when it is bundled;
    // elsewhere the dynamic linker finds it (rpath $ORIGIN, LD_LIBRARY_PATH, system paths).
    try {
      System.loadLibrary("agate_runtime");
    } catch (UnsatisfiedLinkError notBundled) {
      // Resolved as agate_jni's dependency below, or that load reports it.
    }
    System.loadLibrary("agate_jni");
  }

  private static File extractionFolder() throws IOException {
    String named = System.getProperty("agate.native.dir");
    if (named != null && !named.isEmpty()) {
      File dir = new File(named);
      if (!dir.isDirectory() && !dir.mkdirs() && !dir.isDirectory()) {
        throw new IOException("cannot create agate.native.dir '" + named + "'");
      }
      return dir;
    }
    File marker = File.createTempFile("agate-native", "");
    if (!marker.delete() || !marker.mkdir()) throw new IOException("cannot create a temporary folder " + marker);
    marker.deleteOnExit();  // runs after the files' own deleteOnExit (reverse order): folder empty by then
    return marker;
  }

  private static File extract(String resource, File dir) throws IOException {
    File target = new File(dir, resource.substring(resource.lastIndexOf('/') + 1));
    InputStream in = NativeLoader.class.getClassLoader().getResourceAsStream(resource);
    if (in == null) throw new IOException("no resource " + resource + " in the jar");
    File partial = File.createTempFile(target.getName() + ".", ".partial", dir);
    try {
      OutputStream out = new FileOutputStream(partial);
      try {
        byte[] buffer = new byte[1 << 16];
        for (int n; (n = in.read(buffer)) > 0; ) out.write(buffer, 0, n);
      } finally {
        out.close();
      }
      if (!partial.renameTo(target)) throw new IOException("cannot rename " + partial + " to " + target);
    } finally {
      in.close();
      if (partial.exists() && !partial.delete()) partial.deleteOnExit();
    }
    if (System.getProperty("agate.native.dir") == null || System.getProperty("agate.native.dir").isEmpty()) {
      target.deleteOnExit();
    }
    return target;
  }
}
