package io.sandboxd.kube;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;

/**
 * The pod deletes the mock API server received, with the grace each asked for. The CRUD mock server removes an object
 * at once whatever the grace (or, when it has finalizers, only marks it deleted, whatever the grace), so a test tells
 * a graceful delete from a force delete by the request's {@code DeleteOptions}, as a real API server reads them.
 */
public final class TestDeletes {

    /**
     * One DELETE of a pod.
     *
     * @param pod                the pod's name
     * @param gracePeriodSeconds the grace its DeleteOptions asked for; {@code null} when it named none (the pod's own)
     */
    public record Delete(String pod, Long gracePeriodSeconds) {
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern GRACE_QUERY = Pattern.compile("[?&]gracePeriodSeconds=(\\d+)");

    private TestDeletes() {
    }

    /**
     * Takes every request the server has received since the last call and returns the pod deletes among them, in order.
     *
     * @param server the mock server
     * @return the pod deletes
     * @throws InterruptedException when interrupted
     */
    public static List<Delete> taken(KubernetesMockServer server) throws InterruptedException {
        List<Delete> deletes = new ArrayList<>();
        for (RecordedRequest request = server.takeRequest(10, TimeUnit.MILLISECONDS); request != null;
             request = server.takeRequest(10, TimeUnit.MILLISECONDS)) {
            String path = request.getPath();
            int query = path.indexOf('?');
            String resource = query < 0 ? path : path.substring(0, query);
            if (!"DELETE".equals(request.getMethod()) || !resource.matches("/api/v1/namespaces/[^/]+/pods/[^/]+")) {
                continue;
            }
            deletes.add(new Delete(resource.substring(resource.lastIndexOf('/') + 1), grace(request, path)));
        }
        return deletes;
    }

    /**
     * @param server the mock server
     * @param pod    a pod's name
     * @return the graces of the deletes of {@code pod} since the last call of {@link #taken} (which this is)
     * @throws InterruptedException when interrupted
     */
    public static List<Long> gracesOf(KubernetesMockServer server, String pod) throws InterruptedException {
        return taken(server).stream().filter(d -> d.pod().equals(pod)).map(Delete::gracePeriodSeconds).toList();
    }

    private static Long grace(RecordedRequest request, String path) {
        String body = request.getUtf8Body();
        if (body != null && !body.isBlank()) {
            try {
                Object grace = JSON.readValue(body, Map.class).get("gracePeriodSeconds");
                if (grace != null) {
                    return ((Number) grace).longValue();
                }
            } catch (JsonProcessingException e) {
                throw new AssertionError("a DELETE body that is not JSON: " + body, e);
            }
        }
        Matcher query = GRACE_QUERY.matcher(path);
        return query.find() ? Long.valueOf(query.group(1)) : null;
    }
}
