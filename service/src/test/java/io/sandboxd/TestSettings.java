package io.sandboxd;

import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.LifecycleSettings;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;

/**
 * The contract defaults (docs/internal-contracts.md), for tests: the service's own ({@link SandboxConfig#defaults()}),
 * not a copy.
 */
public final class TestSettings {

    public static final SnippetSettings SNIPPET = SandboxConfig.defaults().snippet();
    public static final ToolSettings TOOL = SandboxConfig.defaults().tool();
    public static final SecuritySettings RUNTIME_DEFAULT = SandboxConfig.defaults().security();
    /** The deadline budget of the contract defaults. */
    public static final DeadlineBudget BUDGET = DeadlineBudget.of(SNIPPET, TOOL, LifecycleSettings.DEFAULTS);

    private TestSettings() {
    }
}
