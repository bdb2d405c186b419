package io.sandboxd.pods;

import java.util.Map;

/**
 * Labels and annotations on sandbox pods (docs/internal-contracts.md). NetworkPolicies and admission policies select
 * on the labels, so they are written only through this class.
 */
public final class SandboxLabels {

    /** {@code app.kubernetes.io/managed-by}. */
    public static final String MANAGED_BY = "app.kubernetes.io/managed-by";
    /** Value of {@link #MANAGED_BY}. */
    public static final String MANAGER = "sandboxd";
    /** {@code sandboxd.io/kind}: {@code snippet} or {@code tool}. */
    public static final String KIND = "sandboxd.io/kind";
    /** Kind of snippet pods. */
    public static final String KIND_SNIPPET = "snippet";
    /** Kind of tool pods. */
    public static final String KIND_TOOL = "tool";
    /** {@code sandboxd.io/state} (snippet pods only). */
    public static final String STATE = "sandboxd.io/state";
    /** State of a pool pod nobody holds. */
    public static final String STATE_WARM = "warm";
    /** State of a pool pod one replica holds ready for its next request ({@code claimed-by <replica>/reserved}). */
    public static final String STATE_RESERVED = "reserved";
    /** State of a pod handed to a request (or to a session). */
    public static final String STATE_CLAIMED = "claimed";
    /** {@code sandboxd.io/session}: hash of project and session id (D4 session pods only). */
    public static final String SESSION = "sandboxd.io/session";
    /** {@code sandboxd.io/pod-spec} on snippet pods: the revision of the spec that built the pod. */
    public static final String POD_SPEC = "sandboxd.io/pod-spec";
    /** {@code sandboxd.io/egress} on tool pods of an egress profile (D11): the profile; none for the internet. */
    public static final String EGRESS = "sandboxd.io/egress";
    /** {@code sandboxd.io/project} on tool pods: the project, sanitised to a label value. */
    public static final String PROJECT = "sandboxd.io/project";

    /** Annotation {@code <replica-id>/<request-id>}, set in the same update that flips the state to claimed. */
    public static final String CLAIMED_BY = "sandboxd.io/claimed-by";
    /** Annotation: when the pod was claimed (RFC 3339); lets any replica find claims orphaned by a crash. */
    public static final String CLAIMED_AT = "sandboxd.io/claimed-at";
    /**
     * Annotation on a pool pod a request claimed itself: when that request arrived (RFC 3339), earlier than
     * {@link #CLAIMED_AT} when it waited for the pod; the pool leader counts demand at that time.
     */
    public static final String REQUESTED_AT = "sandboxd.io/requested-at";
    /** Annotation on reserved pods: until when the reservation holds (RFC 3339); after that it is orphaned. */
    public static final String RESERVED_UNTIL = "sandboxd.io/reserved-until";
    /** Annotation on a pod another replica reserved: the replica whose request waits for a pod and asks for it. */
    public static final String WANTED_BY = "sandboxd.io/wanted-by";
    /** Annotation: when {@link #WANTED_BY} was written (RFC 3339). */
    public static final String WANTED_AT = "sandboxd.io/wanted-at";
    /** Annotation on session pods: last time a run started or ended (epoch milliseconds). */
    public static final String LAST_USED_AT = "sandboxd.io/last-used-at";
    /**
     * Annotation on session pods: when the run under way started (epoch milliseconds), written with the claim and
     * removed when the run ends, so that every replica counts session runs in {@code in_flight}.
     */
    public static final String RUN_STARTED_AT = "sandboxd.io/run-started-at";
    /** Annotation on session pods: set (with optimistic locking) just before an idle session pod is deleted. */
    public static final String EXPIRING = "sandboxd.io/expiring";
    /** Annotation: the unsanitised project name. */
    public static final String PROJECT_ANNOTATION = "sandboxd.io/project";
    /** Annotation: the agent name from the token. */
    public static final String AGENT_ANNOTATION = "sandboxd.io/agent";
    /** Annotation: the request that created or claimed the pod. */
    public static final String REQUEST_ANNOTATION = "sandboxd.io/request-id";

    /** Annotation: proof that sandboxd made the pod, bound to its uid ({@link PodSeal}). */
    public static final String SEAL = "sandboxd.io/seal";

    private static final int MAX_LABEL_VALUE = 63;

    private SandboxLabels() {
    }

    /**
     * Selector of every snippet pod (pool and session pods).
     *
     * @return label selector
     */
    public static Map<String, String> snippetSelector() {
        return Map.of(MANAGED_BY, MANAGER, KIND, KIND_SNIPPET);
    }

    /**
     * Selector of every tool pod.
     *
     * @return label selector
     */
    public static Map<String, String> toolSelector() {
        return Map.of(MANAGED_BY, MANAGER, KIND, KIND_TOOL);
    }

    /**
     * Turns any string into a valid label value: characters outside {@code [A-Za-z0-9._-]} become {@code -}, at most
     * 63 characters, starting and ending with an alphanumeric character.
     *
     * @param raw any string
     * @return a valid, possibly empty, label value
     */
    public static String labelValue(String raw) {
        if (raw == null) {
            return "";
        }
        StringBuilder out = new StringBuilder(Math.min(raw.length(), MAX_LABEL_VALUE));
        for (int i = 0; i < raw.length() && out.length() < MAX_LABEL_VALUE; i++) {
            char c = raw.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '_' || c == '-';
            out.append(ok ? c : '-');
        }
        int start = 0;
        int end = out.length();
        while (start < end && !Character.isLetterOrDigit(out.charAt(start))) {
            start++;
        }
        while (end > start && !Character.isLetterOrDigit(out.charAt(end - 1))) {
            end--;
        }
        return out.substring(start, end);
    }
}
