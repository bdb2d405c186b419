package io.sandboxd.e2e.support;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * The program a tool call runs ({@code run_code}) to make one HTTPS request by name as a standard client does, and
 * optionally try an address directly around any proxy: {@code https_by_name.py}, whose head says what it prints.
 */
public final class HttpsByName {
    private HttpsByName() {
    }

    /**
     * @param name   the name requested, {@code https://<name>/}
     * @param direct an address to connect to on 443 afterwards, or {@code null}
     * @return the program's code
     */
    public static String program(String name, String direct) {
        try (InputStream in = HttpsByName.class.getClassLoader().getResourceAsStream("https_by_name.py")) {
            return "NAME = " + Sandboxd.JSON.writeValueAsString(name) + "\nDIRECT = "
                    + (direct == null ? "None" : Sandboxd.JSON.writeValueAsString(direct)) + "\n"
                    + new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
