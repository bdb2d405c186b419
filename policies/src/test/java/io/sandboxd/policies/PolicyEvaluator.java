package io.sandboxd.policies;

import dev.cel.bundle.Cel;
import dev.cel.bundle.CelFactory;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.MapType;
import dev.cel.common.types.SimpleType;
import dev.cel.extensions.CelExtensions;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Evaluates ValidatingAdmissionPolicies the way the API server does, with cel-java: variables
 * first (each visible to the next as {@code variables.<name>}), then every validation; a
 * validation that is false, or that fails to evaluate (failurePolicy Fail), denies with its
 * message. The environment has the VAP variables ({@code object}, {@code oldObject},
 * {@code request}, {@code params}, {@code namespaceObject}, {@code variables}) as dynamic
 * values, the CEL strings extension (split, trim, ...) and Kubernetes' quantity functions.
 */
public final class PolicyEvaluator {

  /** One denial: which policy, which message, and whether it came from an evaluation error. */
  public record Denial(String policy, String message, boolean error) {}

  private final Cel cel = CelFactory.standardCelBuilder()
      .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
      .addVar("object", SimpleType.DYN)
      .addVar("oldObject", SimpleType.DYN)
      .addVar("request", SimpleType.DYN)
      .addVar("params", SimpleType.DYN)
      .addVar("namespaceObject", SimpleType.DYN)
      .addVar("variables", MapType.create(SimpleType.STRING, SimpleType.DYN))
      .addCompilerLibraries(CelExtensions.strings())
      .addRuntimeLibraries(CelExtensions.strings())
      .addFunctionDeclarations(KubernetesQuantityLibrary.declarations())
      .addFunctionBindings(KubernetesQuantityLibrary.bindings())
      .build();

  private final Map<String, CelAbstractSyntaxTree> compiled = new ConcurrentHashMap<>();

  /** Compiles (parses and type-checks) one expression; throws with CEL's issue text on error. */
  CelAbstractSyntaxTree compile(String expression) throws CelValidationException {
    CelAbstractSyntaxTree ast = compiled.get(expression);
    if (ast == null) {
      ast = cel.compile(expression).getAst();
      compiled.put(expression, ast);
    }
    return ast;
  }

  /** The denials the policy produces for this request; empty when it admits (or does not match). */
  public List<Denial> evaluate(AdmissionPolicy policy, AdmissionRequest request, Map<String, Object> params) {
    if (!policy.matches(request.operation(), request.resource())) {
      return List.of();
    }
    Map<String, Object> variables = new LinkedHashMap<>();
    Map<String, Object> activation = new HashMap<>();
    activation.put("object", request.object());
    if (request.oldObject() != null) {
      activation.put("oldObject", request.oldObject());
    }
    activation.put("request", request.celRequest());
    activation.put("params", params);
    activation.put("namespaceObject", Map.of("metadata", Map.of("name", "cai-sandbox")));
    activation.put("variables", variables);

    List<Denial> denials = new ArrayList<>();
    for (AdmissionPolicy.Variable variable : policy.variables()) {
      try {
        variables.put(variable.name(), eval(variable.expression(), activation));
      } catch (CelValidationException | CelEvaluationException | RuntimeException e) {
        // The API server evaluates variables lazily; an erroring variable fails every
        // validation that uses it. Recording it as a denial is the conservative equivalent.
        denials.add(new Denial(policy.name(), "variable " + variable.name() + ": " + e.getMessage(), true));
      }
    }
    for (AdmissionPolicy.Validation validation : policy.validations()) {
      try {
        Object result = eval(validation.expression(), activation);
        if (!Boolean.TRUE.equals(result)) {
          denials.add(new Denial(policy.name(), message(validation, activation), false));
        }
      } catch (CelValidationException | CelEvaluationException | RuntimeException e) {
        denials.add(new Denial(policy.name(), "expression failed: " + e.getMessage(), true));
      }
    }
    return denials;
  }

  private String message(AdmissionPolicy.Validation validation, Map<String, Object> activation) {
    if (validation.messageExpression() != null) {
      try {
        Object text = eval(validation.messageExpression(), activation);
        if (text instanceof String s && !s.isBlank()) {
          return s;
        }
      } catch (CelValidationException | CelEvaluationException | RuntimeException e) {
        // The API server falls back to the static message in this case too.
      }
    }
    return validation.message();
  }

  private Object eval(String expression, Map<String, Object> activation)
      throws CelValidationException, CelEvaluationException {
    return cel.createProgram(compile(expression)).eval(activation);
  }
}
