package io.sandboxd.e2e.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The harness's keyed API (issue 48): a name of the public target ({@code cluster.env} TARGET_NAME_KEYED) that answers
 * only with its key, the key's file, the targets' TLS certificate and the witness of every request that carried the
 * key (tests-e2e/cluster/target_listener.py). The e2e install's {@code keyed} profile gives the key to the egress proxy
 * as a credential and the certificate as its upstream roots ({@code tests-e2e/scripts/egress-profiles.yaml}): both are
 * put in the release namespace before the chart is installed, as an admin would.
 */
public final class KeyedApi {
    /** The Secret of the release namespace that holds the key (the {@code keyed} profile's credential names it). */
    public static final String SECRET = "sbx-keyed-api";
    /** The ConfigMap of the release namespace with the targets' certificate (tool.egress.proxy.upstreamRoots). */
    public static final String ROOTS = "sbx-target-roots";
    public static final String NAME = Env.clusterEnv("TARGET_NAME_KEYED");
    private static final ObjectMapper JSON = new ObjectMapper();

    private KeyedApi() {
    }

    /** @return the key the keyed API answers to: only the egress proxy and this suite hold it, no tool pod */
    public static String key() {
        return read(Env.clusterEnv("TARGET_KEYED_KEY")).strip();
    }

    /** Puts the key's Secret and the certificate's ConfigMap in the release namespace, as an admin would. */
    public static void putInto(KubernetesClient k8s, String namespace) {
        k8s.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(namespace).endMetadata().build())
                .createOr(r -> r.update());
        k8s.secrets().inNamespace(namespace).resource(new SecretBuilder().withNewMetadata().withName(SECRET)
                .endMetadata().withStringData(Map.of("value", key())).build()).createOr(r -> r.update());
        k8s.configMaps().inNamespace(namespace).resource(new ConfigMapBuilder().withNewMetadata().withName(ROOTS)
                .endMetadata().withData(Map.of("ca.crt", read(Env.clusterEnv("TARGET_TLS_CERT")))).build())
                .createOr(r -> r.update());
    }

    /** @return where the witness's file ends now: {@link #sightingsSince} reads what comes after */
    public static long sightingsMark() {
        Path file = Path.of(Env.clusterEnv("TARGET_KEY_SIGHTINGS"));
        try {
            return Files.exists(file) ? Files.size(file) : 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * @param mark a {@link #sightingsMark()}
     * @return every request that carried the key since, as the targets saw it: address, port, sni, host, request
     */
    public static List<JsonNode> sightingsSince(long mark) {
        Path file = Path.of(Env.clusterEnv("TARGET_KEY_SIGHTINGS"));
        List<JsonNode> lines = new ArrayList<>();
        try {
            if (!Files.exists(file)) {
                return lines;
            }
            byte[] all = Files.readAllBytes(file);
            String after = new String(all, (int) mark, all.length - (int) mark, StandardCharsets.UTF_8);
            for (String line : after.split("\n")) {
                if (!line.isBlank()) {
                    lines.add(JSON.readTree(line));
                }
            }
            return lines;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(String path) {
        try {
            return Files.readString(Path.of(path));
        } catch (IOException e) {
            throw new UncheckedIOException("the harness's keyed API has no " + path + " (cluster-up.sh makes it)", e);
        }
    }
}
