package io.sandboxd.chart;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

class PrerequisiteTest {

  @Test
  void aMissingToolSkipsWithoutCi() {
    TestAbortedException skipped = assertThrows(TestAbortedException.class,
        () -> Prerequisite.require(false, "no helm binary", null));
    assertTrue(skipped.getMessage().contains("no helm binary"), skipped.getMessage());
    assertThrows(TestAbortedException.class, () -> Prerequisite.require(false, "no helm binary", ""));
  }

  @Test
  void aMissingToolFailsUnderCiSayingWhy() {
    AssertionFailedError failed = assertThrows(AssertionFailedError.class,
        () -> Prerequisite.require(false, "no helm binary", "true"));
    assertTrue(failed.getMessage().contains("CI is set"), failed.getMessage());
    assertTrue(failed.getMessage().contains("no helm binary"), failed.getMessage());
  }

  @Test
  void aPresentToolNeitherSkipsNorFails() {
    assertDoesNotThrow(() -> Prerequisite.require(true, "unused", "true"));
    assertDoesNotThrow(() -> Prerequisite.require(true, "unused", null));
  }
}
