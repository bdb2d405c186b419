package io.sandboxd.policies;

import static io.sandboxd.policies.Yaml.at;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** One ValidatingAdmissionPolicy file of policies/admission, as the API server would read it. */
public record AdmissionPolicy(
    Path file,
    Map<String, Object> manifest,
    String name,
    List<ResourceRule> resourceRules,
    List<Variable> variables,
    List<Validation> validations) {

  public record ResourceRule(List<String> operations, List<String> resources) {}

  public record Variable(String name, String expression) {}

  public record Validation(String expression, String message, String messageExpression, String reason) {}

  public static AdmissionPolicy load(Path file) {
    Map<String, Object> manifest = Yaml.readFile(file);
    List<Map<String, Object>> rules = orEmpty(at(manifest, "spec", "matchConstraints", "resourceRules"));
    List<Map<String, Object>> vars = orEmpty(at(manifest, "spec", "variables"));
    List<Map<String, Object>> vals = orEmpty(at(manifest, "spec", "validations"));
    return new AdmissionPolicy(
        file,
        manifest,
        at(manifest, "metadata", "name"),
        rules.stream().map(r -> new ResourceRule(strings(r.get("operations")), strings(r.get("resources")))).toList(),
        vars.stream().map(v -> new Variable((String) v.get("name"), (String) v.get("expression"))).toList(),
        vals.stream().map(v -> new Validation((String) v.get("expression"), (String) v.get("message"),
            (String) v.get("messageExpression"), (String) v.get("reason"))).toList());
  }

  /** Whether the API server would send this request (operation on pods or a pod subresource) to the policy. */
  public boolean matches(String operation, String resource) {
    return resourceRules.stream().anyMatch(r ->
        (r.operations().contains(operation) || r.operations().contains("*"))
            && (r.resources().contains(resource) || r.resources().contains("*")));
  }

  public List<String> messages() {
    return validations.stream().map(Validation::message).toList();
  }

  @SuppressWarnings("unchecked")
  private static List<String> strings(Object value) {
    return value == null ? List.of() : (List<String>) value;
  }

  private static <T> List<T> orEmpty(List<T> list) {
    return list == null ? List.of() : list;
  }
}
