package io.sandboxd.policies;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.policies.KubernetesQuantityLibrary.KubeQuantity;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The test-side quantity() must order quantities the way apimachinery does, or the policy tests prove nothing. */
class KubernetesQuantityLibraryTest {

  @ParameterizedTest
  @CsvSource({
      "1, 1000m, 0",
      "2, 2001m, -1",
      "1Gi, 1024Mi, 0",
      "1Gi, 1G, 1",
      "512Mi, 536870912, 0",
      "1e3, 1k, 0",
      "0.5, 500m, 0",
      "100m, 0.1, 0",
  })
  void comparesLikeApimachinery(String a, String b, int expected) {
    assertEquals(expected, Integer.signum(KubernetesQuantityLibrary.parse(a).compareTo(KubernetesQuantityLibrary.parse(b))));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "1 Gi", "Gi", "1GB", "1.2.3", "abc", "--1"})
  void rejectsWhatApimachineryRejects(String text) {
    assertFalse(KubernetesQuantityLibrary.isQuantity(text));
    assertThrows(IllegalArgumentException.class, () -> KubernetesQuantityLibrary.parse(text));
  }

  @Test
  void acceptsEverySuffix() {
    for (String s : new String[] {"1n", "1u", "1m", "1", "1k", "1M", "1G", "1T", "1P", "1E",
        "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei", "1e6", "1E-3", "+1", ".5"}) {
      assertTrue(KubernetesQuantityLibrary.isQuantity(s), s);
    }
    KubeQuantity q = KubernetesQuantityLibrary.parse("1Ki");
    assertEquals(0, q.amount().compareTo(java.math.BigDecimal.valueOf(1024)));
  }
}
