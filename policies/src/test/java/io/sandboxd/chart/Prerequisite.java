package io.sandboxd.chart;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * A tool a test needs (Helm, python3). Missing on a developer's machine, the test is skipped with the reason; missing
 * where the environment variable {@code CI} is set, the test fails: a CI run that skipped the chart tests would pass
 * without having checked the chart.
 */
final class Prerequisite {

  private Prerequisite() {}

  /** Skips (or, under CI, fails) the calling test unless {@code present}; {@code missing} says what is missing. */
  static void require(boolean present, String missing) {
    require(present, missing, System.getenv("CI"));
  }

  static void require(boolean present, String missing, String ci) {
    if (present) {
      return;
    }
    if (ci != null && !ci.isBlank()) {
      fail("CI is set (CI=" + ci + "), so this test may not be skipped: " + missing);
    }
    abort("skipped (with CI set this fails): " + missing);
  }
}
