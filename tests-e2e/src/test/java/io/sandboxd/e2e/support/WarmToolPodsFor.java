package io.sandboxd.e2e.support;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

import io.fabric8.kubernetes.api.model.Pod;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Warm tool pods for one test class, as a JUnit extension ({@code @RegisterExtension static}): switched on before the
 * class ({@link WarmToolPodsOn}), off after it, and after each test every pod its calls used awaited gone. A used pod
 * still shows as {@code reserved} until sandboxd deletes it off the answer's path, so the next test would otherwise
 * take it for a warm one.
 */
public final class WarmToolPodsFor implements BeforeAllCallback, AfterEachCallback, AfterAllCallback {
    private final String image;
    private final int pods;
    private final String egress;
    private final Set<String> used = ConcurrentHashMap.newKeySet();
    private WarmToolPodsOn on;

    /**
     * @param image  the image whose tool pods are kept warm
     * @param pods   how many
     * @param egress the egress profile they are started with (D11); {@code null}: the internet
     */
    public WarmToolPodsFor(String image, int pods, String egress) {
        this.image = image;
        this.pods = pods;
        this.egress = egress;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        on = WarmToolPodsOn.of(image, pods, egress, Map.of());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        used.forEach(on.sandboxd()::awaitPodGone);
        used.clear();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (on != null) {
            on.close();
        }
    }

    /** @return sandboxd, reconnected after the upgrade */
    public Sandboxd sandboxd() {
        return on.sandboxd();
    }

    /** @return the names of all the warm pods, once all are Ready */
    public Set<String> awaitReady() {
        return names(on.awaitReady(pods));
    }

    /** @param pod a pod a call of the running test was served in: awaited gone after the test */
    public void used(String pod) {
        used.add(pod);
    }

    /** @return the names of the pods */
    public static Set<String> names(List<Pod> pods) {
        return pods.stream().map(p -> p.getMetadata().getName()).collect(Collectors.toSet());
    }
}
