package io.sandboxd.policies;

import dev.cel.common.CelFunctionDecl;
import dev.cel.common.CelOverloadDecl;
import dev.cel.common.types.CelType;
import dev.cel.common.types.OpaqueType;
import dev.cel.common.types.SimpleType;
import dev.cel.runtime.CelFunctionBinding;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The part of Kubernetes' CEL quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go)
 * that the admission policies use, for cel-java, which does not ship it: {@code quantity(string)},
 * {@code isQuantity(string)} and the Quantity members {@code compareTo}, {@code isGreaterThan},
 * {@code isLessThan}. Amounts come from fabric8's {@link Quantity#getAmountInBytes}, which
 * follows the apimachinery suffix rules (binary Ki..Ei, decimal n..E, exponents).
 */
final class KubernetesQuantityLibrary {

  static final CelType QUANTITY = OpaqueType.create("kubernetes.Quantity");

  /** apimachinery's quantity grammar: signed number, then one binary, decimal or exponent suffix. */
  private static final Pattern QUANTITY_SYNTAX =
      Pattern.compile("^[+-]?(\\d+(\\.\\d*)?|\\.\\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\\d+)?$");

  /** A parsed quantity: its text for messages, its exact amount for comparisons. */
  record KubeQuantity(String text, BigDecimal amount) implements Comparable<KubeQuantity> {
    @Override
    public int compareTo(KubeQuantity other) {
      return amount.compareTo(other.amount);
    }
  }

  private KubernetesQuantityLibrary() {}

  static boolean isQuantity(String text) {
    if (!QUANTITY_SYNTAX.matcher(text).matches()) {
      return false;
    }
    try {
      Quantity.getAmountInBytes(new Quantity(text));
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  static KubeQuantity parse(String text) {
    if (!isQuantity(text)) {
      throw new IllegalArgumentException("quantities must match the regular expression "
          + QUANTITY_SYNTAX.pattern() + ": " + text);
    }
    return new KubeQuantity(text, Quantity.getAmountInBytes(new Quantity(text)));
  }

  static List<CelFunctionDecl> declarations() {
    return List.of(
        CelFunctionDecl.newFunctionDeclaration("quantity",
            CelOverloadDecl.newGlobalOverload("string_to_quantity", QUANTITY, SimpleType.STRING)),
        CelFunctionDecl.newFunctionDeclaration("isQuantity",
            CelOverloadDecl.newGlobalOverload("is_quantity_string", SimpleType.BOOL, SimpleType.STRING)),
        CelFunctionDecl.newFunctionDeclaration("compareTo",
            CelOverloadDecl.newMemberOverload("quantity_compareTo_quantity", SimpleType.INT, QUANTITY, QUANTITY)),
        CelFunctionDecl.newFunctionDeclaration("isGreaterThan",
            CelOverloadDecl.newMemberOverload("quantity_isGreaterThan_quantity", SimpleType.BOOL, QUANTITY, QUANTITY)),
        CelFunctionDecl.newFunctionDeclaration("isLessThan",
            CelOverloadDecl.newMemberOverload("quantity_isLessThan_quantity", SimpleType.BOOL, QUANTITY, QUANTITY)));
  }

  static List<CelFunctionBinding> bindings() {
    return List.of(
        CelFunctionBinding.from("string_to_quantity", String.class, KubernetesQuantityLibrary::parse),
        CelFunctionBinding.from("is_quantity_string", String.class, KubernetesQuantityLibrary::isQuantity),
        CelFunctionBinding.from("quantity_compareTo_quantity", KubeQuantity.class, KubeQuantity.class,
            (a, b) -> (long) Integer.signum(a.compareTo(b))),
        CelFunctionBinding.from("quantity_isGreaterThan_quantity", KubeQuantity.class, KubeQuantity.class,
            (a, b) -> a.compareTo(b) > 0),
        CelFunctionBinding.from("quantity_isLessThan_quantity", KubeQuantity.class, KubeQuantity.class,
            (a, b) -> a.compareTo(b) < 0));
  }
}
