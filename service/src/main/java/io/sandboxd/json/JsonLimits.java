package io.sandboxd.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Bounds on one JSON document read from outside sandboxd (a request body, a pod's reply), as Jackson stream read
 * constraints: document length, string length (never more than the document), nesting depth, number and name
 * length, and number of tokens (every name, value and bracket counts, skipped ones too). A parser over them fails
 * with {@link com.fasterxml.jackson.core.exc.StreamConstraintsException} at the first token over a bound, so the
 * heap a document costs stays proportional to what the reader keeps of it.
 *
 * <p>Field names are not canonicalised: the shared symbol table would otherwise grow with every distinct name of
 * every document, including the names of skipped parts.
 *
 * @param maxBytes  longest document in bytes
 * @param maxTokens most tokens in one document; 0 for no bound (the byte bound then bounds them)
 * @param maxDepth  deepest nesting of arrays and objects
 */
public record JsonLimits(long maxBytes, long maxTokens, int maxDepth) {

    /** Longest number, in characters: far beyond any timeout, and beyond what a double or a long can hold. */
    public static final int MAX_NUMBER_CHARS = 1000;
    /** Longest field name, in characters. */
    public static final int MAX_NAME_CHARS = 4096;

    /**
     * @param maxBytes  longest document in bytes
     * @param maxTokens most tokens in one document; 0 for no bound
     * @param maxDepth  deepest nesting
     */
    public JsonLimits {
        if (maxBytes < 1 || maxTokens < 0 || maxDepth < 1) {
            throw new IllegalArgumentException("JSON limits must be positive");
        }
    }

    /**
     * @return the constraints
     */
    public StreamReadConstraints constraints() {
        return StreamReadConstraints.builder()
                .maxDocumentLength(maxBytes)
                .maxStringLength((int) Math.min(Integer.MAX_VALUE - 8, maxBytes))
                .maxTokenCount(maxTokens)
                .maxNestingDepth(maxDepth)
                .maxNumberLength(MAX_NUMBER_CHARS)
                .maxNameLength(MAX_NAME_CHARS)
                .build();
    }

    /**
     * A factory for streaming parsers under these limits.
     *
     * @return factory
     */
    public JsonFactory factory() {
        return JsonFactory.builder()
                .streamReadConstraints(constraints())
                .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
                .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                // the server drains or drops what is left of a refused request body, not the parser
                .disable(StreamReadFeature.AUTO_CLOSE_SOURCE)
                .build();
    }

    /**
     * A mapper that reads whole trees under these limits, as strictly as the API's (no duplicate keys, no trailing
     * data). Only for documents whose shape is fixed and small (the snippet executor's reply); anything else is read
     * with a streaming parser that keeps only what it needs.
     *
     * @return mapper
     */
    public ObjectMapper treeMapper() {
        return new ObjectMapper(factory())
                .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    }

    /**
     * Whether a parser stopped because of the token bound (rather than another one).
     *
     * @param parser the parser that failed
     * @return whether it had read more tokens than allowed
     */
    public boolean overTokenBound(JsonParser parser) {
        return maxTokens > 0 && parser.currentTokenCount() > maxTokens;
    }
}
