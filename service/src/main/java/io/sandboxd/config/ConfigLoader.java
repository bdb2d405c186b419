package io.sandboxd.config;

import java.nio.file.Files;
import java.nio.file.Path;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;

/**
 * Loads the configuration: the file named by {@code SANDBOXD_CONFIG} (rendered by the chart) over the classpath
 * {@code application.yaml}, which holds the contract defaults.
 */
public final class ConfigLoader {

    /** Environment variable naming the operator's configuration file. */
    public static final String CONFIG_ENV = "SANDBOXD_CONFIG";

    private ConfigLoader() {
    }

    /**
     * Loads the configuration using the process environment.
     *
     * @return merged configuration
     */
    public static Config load() {
        return load(System.getenv(CONFIG_ENV));
    }

    /**
     * Loads the configuration with an explicit override file.
     *
     * @param overrideFile path of the operator's file, or {@code null}/blank for none
     * @return merged configuration
     */
    public static Config load(String overrideFile) {
        Config.Builder builder = Config.builder().disableEnvironmentVariablesSource();
        if (overrideFile != null && !overrideFile.isBlank()) {
            Path path = Path.of(overrideFile);
            if (!Files.isReadable(path)) {
                throw new IllegalArgumentException(CONFIG_ENV + " names " + path + ", which is not a readable file");
            }
            builder.addSource(ConfigSources.file(path));
        }
        builder.addSource(ConfigSources.classpath("application.yaml"));
        return builder.build();
    }
}
