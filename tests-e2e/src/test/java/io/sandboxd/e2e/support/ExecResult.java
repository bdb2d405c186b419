package io.sandboxd.e2e.support;

/** What a command run inside a pod returned. */
public record ExecResult(int exitCode, String stdout, String stderr) {
    public boolean ok() {
        return exitCode == 0;
    }

    @Override
    public String toString() {
        return "exit " + exitCode + "\nstdout: " + stdout + "\nstderr: " + stderr;
    }
}
