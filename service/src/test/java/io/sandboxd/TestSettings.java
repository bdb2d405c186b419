package io.sandboxd;

import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.IsolationGateSettings;
import io.sandboxd.config.LifecycleSettings;
import io.sandboxd.config.ResourceSettings;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;

/**
 * The contract defaults (docs/internal-contracts.md), for tests.
 */
public final class TestSettings {

    public static final SnippetSettings SNIPPET = new SnippetSettings(
            "sandboxd.local/snippet-sandbox:dev", 3, 3, 20, 60, 30,
            new ResourceSettings("1", "512Mi", "256Mi"), new ResourceSettings("50m", "64Mi", "64Mi"),
            "64Mi", "16Mi", 1_048_576, 8_388_608, 100, 16_777_216, 256, 300, 3600, true);
    public static final ToolSettings TOOL = new ToolSettings(30, 120, 110, 1_048_576, 8_388_608,
            new ResourceSettings("2", "1Gi", "512Mi"), new ResourceSettings("50m", "64Mi", "64Mi"), "64Mi", false);
    public static final SecuritySettings RUNTIME_DEFAULT = new SecuritySettings("RuntimeDefault", "", "", IsolationGateSettings.DEFAULTS);
    /** The deadline budget of the contract defaults. */
    public static final DeadlineBudget BUDGET = DeadlineBudget.of(SNIPPET, TOOL, LifecycleSettings.DEFAULTS);

    private TestSettings() {
    }
}
