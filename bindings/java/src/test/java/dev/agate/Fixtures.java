package dev.agate;

import java.io.File;

/** Where the fixture modules are and the numbers they compute (bindings/testdata/fixture_kernels.h). */
final class Fixtures {
  static final int BATCH = 4;
  static final int FEATURES = 8;
  static final int CLASSES = 3;

  private Fixtures() {}

  static File dir() {
    String dir = System.getenv("AGATE_TESTDATA_DIR");
    File f = new File(dir != null ? dir : "bindings/testdata/out/modules");
    if (!new File(f, "add_relu.agm").exists()) {
      throw new IllegalStateException("no fixture modules in " + f + ": run bindings/testdata/prepare.sh");
    }
    return f;
  }

  static String addRelu() {
    return new File(dir(), "add_relu.agm").getPath();
  }

  /** add_relu per item of a batch N in 1..5 (module format 2.0, variants of 1 and 2 items). */
  static String batchAddRelu() {
    return new File(dir(), "batch_add_relu.agm").getPath();
  }

  static String classifier() {
    return new File(dir(), "classifier.agm").getPath();
  }

  static float[] addReluReference(float[] a, float[] b) {
    float[] y = new float[a.length];
    for (int i = 0; i < a.length; ++i) y[i] = Math.max(a[i] + b[i], 0.0f);
    return y;
  }

  static float[] classifierInput(int seed) {
    float[] x = new float[BATCH * FEATURES];
    for (int i = 0; i < x.length; ++i) x[i] = ((i * 7 + seed * 13) % 11 - 5.0f) / 3.0f;
    return x;
  }

  static float[] logitsReference(float[] x) {
    float[] logits = new float[BATCH * CLASSES];
    for (int r = 0; r < BATCH; ++r) {
      for (int j = 0; j < CLASSES; ++j) {
        float sum = (j - 1) / 2.0f;
        for (int k = 0; k < FEATURES; ++k) sum += x[r * FEATURES + k] * (((3 * k + 5 * j) % 7 - 3) / 4.0f);
        logits[r * CLASSES + j] = sum;
      }
    }
    return logits;
  }

  static int[] classesReference(float[] logits) {
    int[] classes = new int[BATCH];
    for (int r = 0; r < BATCH; ++r) {
      int best = 0;
      for (int j = 1; j < CLASSES; ++j) {
        if (logits[r * CLASSES + j] > logits[r * CLASSES + best]) best = j;
      }
      classes[r] = best;
    }
    return classes;
  }
}
