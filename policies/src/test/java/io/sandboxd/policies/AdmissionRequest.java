package io.sandboxd.policies;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The admission request a policy sees: the operation, the pod resource or subresource, the new
 * and old object and who is asking.
 */
public record AdmissionRequest(String operation, String resource, Map<String, Object> object,
                        Map<String, Object> oldObject, String username) {

  public static AdmissionRequest create(Map<String, Object> pod, String username) {
    return new AdmissionRequest("CREATE", "pods", pod, null, username);
  }

  public static AdmissionRequest update(Map<String, Object> oldPod, Map<String, Object> newPod, String username) {
    return new AdmissionRequest("UPDATE", "pods", newPod, oldPod, username);
  }

  public static AdmissionRequest updateEphemeralContainers(Map<String, Object> oldPod, Map<String, Object> newPod,
                                                    String username) {
    return new AdmissionRequest("UPDATE", "pods/ephemeralcontainers", newPod, oldPod, username);
  }

  /** The {@code request} variable: the fields of admission.k8s.io/v1 AdmissionRequest the policies read. */
  Map<String, Object> celRequest() {
    Map<String, Object> userInfo = new LinkedHashMap<>();
    userInfo.put("username", username);
    userInfo.put("groups", List.of("system:authenticated"));
    Map<String, Object> request = new LinkedHashMap<>();
    request.put("operation", operation);
    request.put("userInfo", userInfo);
    request.put("resource", Map.of("group", "", "version", "v1", "resource", "pods"));
    request.put("subResource", resource.contains("/") ? resource.substring(resource.indexOf('/') + 1) : "");
    return request;
  }
}
