package io.sandboxd.e2e.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.LocalPortForward;
import io.sandboxd.tokens.TokenMinter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;

/**
 * sandboxd installed by the project's Helm chart, as an admin would (`helm upgrade --install`), once
 * per test JVM, and reached through a port-forward to each replica (the path the API reference gives
 * operators; NetworkPolicies admit only agent namespaces otherwise).
 */
public final class Sandboxd {
    public static final String RELEASE = "sandboxd";
    public static final String RELEASE_NAMESPACE = "cai-system";
    public static final String SANDBOX_NAMESPACE = "cai-sandbox";
    public static final String AGENT_IMAGE = "sandboxd.local/agent-tools:dev";
    public static final String NO_RUNNER_IMAGE = "sandboxd.local/agent-no-runner:dev";
    public static final String KID = "e2e-key-1";
    public static final ObjectMapper JSON = new ObjectMapper();

    private static Sandboxd instance;

    private final KubernetesClient k8s;
    private final TokenMinter minter;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final List<LocalPortForward> forwards = new ArrayList<>();
    private final List<URI> replicas = new ArrayList<>();
    private int next;

    private Sandboxd(KubernetesClient k8s, TokenMinter minter) {
        this.k8s = k8s;
        this.minter = minter;
    }

    public static synchronized Sandboxd get() {
        if (instance == null) {
            instance = install(TestCluster.client(), Env.runtimeClass());
        }
        return instance;
    }

    /**
     * Moves the sandboxes to another runtime with one {@code helm upgrade} (sandboxd rolls out, the pool replaces its
     * pods), for a benchmark that compares runtimes in one run.
     *
     * @param runtimeClass "" for the cluster default (runc), or a RuntimeClass such as "gvisor"
     * @return sandboxd, reconnected to its new replicas, with the pool warm on the new runtime
     */
    public static synchronized Sandboxd onRuntime(String runtimeClass) {
        if (instance != null) {
            instance.disconnect();
        }
        instance = install(TestCluster.client(), runtimeClass);
        return instance;
    }

    /**
     * One {@code helm upgrade} of the installed release, its values kept, with values added, as an admin changes one
     * setting; returns once Helm has seen the rollout through.
     *
     * @param sets Helm flags that set values, e.g. {@code "--set", "tool.requireImageDigest=true"}
     */
    public static void upgradeReusingValues(String... sets) {
        List<String> helm = new ArrayList<>(List.of(Env.helm().toString(), "upgrade", RELEASE,
                Env.chart(), "--namespace", RELEASE_NAMESPACE,
                "--kubeconfig", TestCluster.kubeconfig().toString(), "--reuse-values", "--wait", "--timeout", "5m"));
        helm.addAll(List.of(sets));
        HostCommand.run(helm.toArray(String[]::new));
    }

    /**
     * The release's user-supplied values as they are now ({@code helm get values}), for {@link #upgradeToValues}.
     *
     * @return a file holding them (JSON)
     */
    public static Path savedValues() {
        try {
            Path file = Files.createTempFile("sandboxd-values", ".json");
            Files.writeString(file, HostCommand.run(Env.helm().toString(), "get", "values", RELEASE, "--namespace",
                    RELEASE_NAMESPACE, "--kubeconfig", TestCluster.kubeconfig().toString(), "--output", "json"));
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A {@code helm upgrade} to exactly these user-supplied values ({@code --reset-values -f}): every value set since
     * they were saved is undone, a map key added included (a key set to null or a map set to {@code {}} under
     * {@code --reuse-values} leaves a merged key in place).
     *
     * @param values a file from {@link #savedValues()}
     */
    public static void upgradeToValues(Path values) {
        HostCommand.run(Env.helm().toString(), "upgrade", RELEASE, Env.chart(), "--namespace", RELEASE_NAMESPACE,
                "--kubeconfig", TestCluster.kubeconfig().toString(), "--reset-values", "--values", values.toString(),
                "--wait", "--timeout", "5m");
    }

    /**
     * Reconnects to the replicas that run now (after a fault test replaced them), and waits for a warm pool.
     *
     * @return sandboxd, connected to its current replicas
     */
    public static synchronized Sandboxd reconnect() {
        Sandboxd sandboxd = get();
        sandboxd.disconnect();
        sandboxd.connect();
        sandboxd.awaitWarmPool();
        return sandboxd;
    }

    private void disconnect() {
        for (LocalPortForward forward : forwards) {
            try {
                forward.close();
            } catch (IOException e) {
                // the tunnel is gone either way
            }
        }
        forwards.clear();
        replicas.clear();
    }

    private static Sandboxd install(KubernetesClient k8s, String runtimeClass) {
        try {
            KeyPair keys = generate(KeyPairGenerator.getInstance("EC"));
            Path dir = Files.createTempDirectory("sandboxd-e2e");
            Path publicKey = dir.resolve(KID + ".pem");
            Files.writeString(publicKey, "-----BEGIN PUBLIC KEY-----\n"
                    + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(keys.getPublic().getEncoded())
                    + "\n-----END PUBLIC KEY-----\n");
            Path values = dir.resolve("values.yaml");
            Files.writeString(values, HostCommand.run("bash", Env.repo().resolve("tests-e2e/scripts/local-values.sh").toString()));
            // The keyed profile's credential and the proxy's upstream roots, made before the chart as an admin would.
            KeyedApi.putInto(k8s, RELEASE_NAMESPACE);
            List<String> helm = new ArrayList<>(List.of(Env.helm().toString(), "upgrade", "--install", RELEASE,
                    Env.chart(),
                    "--namespace", RELEASE_NAMESPACE, "--create-namespace", "--kubeconfig", TestCluster.kubeconfig().toString(),
                    "-f", values.toString(), "--set-file", "tokens.publicKeys." + KID + "=" + publicKey,
                    "--set-string", "runtimeClassName=" + runtimeClass,
                    // Reservations of a replica killed by a fault test lapse in 30 s, not the default 2 minutes.
                    "--set", "lifecycle.reservationHoldSeconds=30",
                    // A NotReady node's pods deleted (gracefully) 15 s after it went down, not a minute
                    // (NodeLossIT, LifecycleFaultsIT).
                    "--set", "lifecycle.deadNodePodDeleteSeconds=15",
                    // A fixed pool of poolTarget: tests count pool pods and wait for "warm >= target", and a pool grown
                    // by one test's burst would hold more pods (and cores) through the next ones. The default pool that
                    // follows demand is measured by make bench (DemandBurstBenchmark, ThroughputBenchmark's steady rate).
                    "--set", "snippet.poolMax=null",
                    // Three egress profiles over the simulated targets (EgressProfileIT), one with a credential
                    // (EgressCredentialsIT): the egress proxy is deployed.
                    "-f", Env.repo().resolve("tests-e2e/scripts/egress-profiles.yaml").toString(),
                    "--wait", "--timeout", "5m"));
            if (!Env.imageValues().isEmpty()) {
                helm.addAll(List.of("-f", Env.imageValues()));
            }
            // Extra values for one run, e.g. the benchmark's larger pool: -Dsandboxd.set=snippet.poolTarget=6
            String extra = System.getProperty("sandboxd.set", "");
            if (!extra.isBlank()) {
                helm.addAll(List.of("--set", extra));
            }
            System.out.println("[e2e] installing sandboxd with sandboxes on runtime "
                                       + (runtimeClass.isEmpty() ? "runc (the cluster default)" : runtimeClass));
            HostCommand.run(helm.toArray(String[]::new));
            Sandboxd sandboxd = new Sandboxd(k8s, new TokenMinter(keys.getPrivate(), KID));
            sandboxd.connect();
            sandboxd.awaitWarmPool();
            sandboxd.awaitKeyAccepted();
            InstallBaseline.record();
            return sandboxd;
        } catch (IOException | java.security.GeneralSecurityException e) {
            throw new IllegalStateException("could not install sandboxd: " + e, e);
        }
    }

    private static KeyPair generate(KeyPairGenerator g) throws java.security.GeneralSecurityException {
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    private void connect() {
        List<Pod> pods = k8s.pods().inNamespace(RELEASE_NAMESPACE)
                .withLabels(Map.of("app.kubernetes.io/name", "sandboxd", "app.kubernetes.io/instance", RELEASE)).list().getItems();
        for (Pod pod : pods) {
            if (pod.getMetadata().getDeletionTimestamp() != null) {
                continue;
            }
            LocalPortForward forward = k8s.pods().inNamespace(RELEASE_NAMESPACE).withName(pod.getMetadata().getName()).portForward(8080);
            forwards.add(forward);
            replicas.add(URI.create("http://127.0.0.1:" + forward.getLocalPort()));
        }
        if (replicas.isEmpty()) {
            throw new IllegalStateException("no sandboxd pods in " + RELEASE_NAMESPACE);
        }
    }

    public void awaitWarmPool() {
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(500)).until(() -> {
            JsonNode pool = pool().json();
            return pool.path("warm").asInt() >= pool.path("target").asInt() && pool.path("in_flight").asInt() == 0;
        });
    }

    /**
     * A quiet node, then a warm pool: for a class that starts many sandboxes at once and waits for them, so that it
     * measures what it tests, not the class before it. The pods the class before left being torn down share the
     * nodes' CPU with the pod starts it depends on (under gVisor a pod's end costs CPU as its start does), and a burst
     * there can leave the pool refilling.
     */
    public void awaitSettled() {
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500)).until(() -> k8s.pods()
                .inNamespace(SANDBOX_NAMESPACE).list().getItems().stream()
                .noneMatch(p -> p.getMetadata().getDeletionTimestamp() != null));
        awaitWarmPool();
    }

    /**
     * A new verification key reaches running replicas through the Secret volume (the kubelet syncs it
     * within about a minute) and sandboxd picks it up without a restart: wait until every replica
     * accepts this run's tokens.
     */
    private void awaitKeyAccepted() {
        for (URI replica : replicas) {
            await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofSeconds(1))
                    .until(() -> send(replica, "POST", "/v1/execute", "{}", token()).status() != 401);
        }
    }

    public KubernetesClient k8s() {
        return k8s;
    }

    public List<URI> replicas() {
        return List.copyOf(replicas);
    }

    /**
     * The chart's Service at its ClusterIP, as an agent in the cluster calls sandboxd (the test JVM runs
     * on the node, which reaches the Service network); no port-forward tunnel on the path.
     */
    public URI serviceUri() {
        String ip = k8s.services().inNamespace(RELEASE_NAMESPACE).withName(RELEASE).get().getSpec().getClusterIP();
        return URI.create("http://" + ip + ":8080");
    }

    public String token(String project, String agent, String image) {
        return minter.mint(project, agent, image);
    }

    public TokenMinter minter() {
        return minter;
    }

    /** A token for the default e2e project whose agent image is the test agent image. */
    public String token() {
        return token("e2e-project", "e2e-agent", AGENT_IMAGE);
    }

    public ApiResponse pool() {
        return send(replicas.get(0), "GET", "/v1/pool", null, null);
    }

    public ApiResponse execute(Object body) {
        return post("/v1/execute", body, token());
    }

    public ApiResponse call(Object body) {
        return post("/v1/call", body, token());
    }

    public ApiResponse post(String path, Object body, String token) {
        return send(nextReplica(), "POST", path, body, token);
    }

    private synchronized URI nextReplica() {
        return replicas.get(next++ % replicas.size());
    }

    /** Sends one request; a response of the three routes that the OpenAPI document does not allow fails the test. */
    public ApiResponse send(URI replica, String method, String path, Object body, String token) {
        try {
            String text = body == null ? null : body instanceof String s ? s : JSON.writeValueAsString(body);
            URI uri = replica.resolve(path);
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(180))
                    .method(method, text == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(text))
                    .header("Content-Type", "application/json");
            if (token != null) {
                request.header("Authorization", "Bearer " + token);
            }
            HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
            JsonNode json = response.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(response.body());
            ApiResponse answer = new ApiResponse(response.statusCode(), response.headers(), json, response.body());
            OpenApiContract.check(method, uri, answer);
            return answer;
        } catch (IOException e) {
            throw new IllegalStateException(method + " " + path + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Deletes the D4 session pods of these projects (gracefully, as sandboxd does): session pods stay for the idle
     * timeout, and a test's own would count against the quota of what runs after it.
     *
     * @param projects the test's projects
     */
    public void deleteSessionPodsOf(Set<String> projects) {
        for (Pod pod : k8s.pods().inNamespace(SANDBOX_NAMESPACE).withLabel("sandboxd.io/session").list().getItems()) {
            Map<String, String> annotations = pod.getMetadata().getAnnotations();
            if (annotations != null && projects.contains(annotations.get("sandboxd.io/project"))) {
                k8s.pods().inNamespace(SANDBOX_NAMESPACE).withName(pod.getMetadata().getName()).delete();
            }
        }
    }

    /** Waits until no sandbox pod of this run is left but the warm pool. */
    public void awaitPodGone(String podName) {
        k8s.pods().inNamespace(SANDBOX_NAMESPACE).withName(podName).waitUntilCondition(p -> p == null, 60, TimeUnit.SECONDS);
    }
}
