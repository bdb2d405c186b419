package io.sandboxd.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.helidon.openapi.OpenApiFeature;

/**
 * The API's OpenAPI document: the three routes with every field, status and error message of the contract. sandboxd
 * serves it as it is, read-only and without a token, at {@code GET /openapi} ({@code ?format=JSON} for JSON); the unit
 * tests and the e2e suite check real responses against the same file, and the MCP tools take their schemas from it
 * ({@link #schema}), so a field is written down once.
 */
public final class ApiDocument {

    /** Classpath resource of the document. */
    public static final String RESOURCE = "META-INF/openapi.yaml";
    /** Where it is served. */
    public static final String PATH = "/openapi";

    private static final String SCHEMA_REF = "#/components/schemas/";

    private ApiDocument() {
    }

    /**
     * One of the document's component schemas as a JSON Schema of its own: every reference to another component schema
     * replaced by a copy of it (the schemas used here are the JSON Schema subset OpenAPI 3.0 shares with it).
     *
     * @param name the schema's name under {@code components.schemas}, e.g. {@code ExecuteResponse}
     * @return a copy the caller may change
     * @throws IllegalArgumentException when the document has no such schema
     */
    static ObjectNode schema(String name) {
        JsonNode schema = Parsed.SCHEMAS.get(name);
        if (!(schema instanceof ObjectNode object)) {
            throw new IllegalArgumentException(RESOURCE + " has no schema " + name);
        }
        return (ObjectNode) resolved(object);
    }

    private static JsonNode resolved(JsonNode node) {
        if (node instanceof ObjectNode object) {
            JsonNode ref = object.get("$ref");
            if (ref != null && ref.isTextual() && ref.asText().startsWith(SCHEMA_REF)) {
                return schema(ref.asText().substring(SCHEMA_REF.length()));
            }
            ObjectNode copy = object.objectNode();
            for (Map.Entry<String, JsonNode> field : object.properties()) {
                copy.set(field.getKey(), resolved(field.getValue()));
            }
            return copy;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode copy = array.arrayNode();
            array.forEach(item -> copy.add(resolved(item)));
            return copy;
        }
        return node;
    }

    /** The document's component schemas, read once. */
    private static final class Parsed {

        static final JsonNode SCHEMAS = read().path("components").path("schemas");

        private static JsonNode read() {
            try (InputStream in = ApiDocument.class.getClassLoader().getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw new IllegalStateException("no " + RESOURCE + " on the classpath");
                }
                return new ObjectMapper(new YAMLFactory()).readTree(in);
            } catch (IOException e) {
                throw new UncheckedIOException(RESOURCE + " is not readable", e);
            }
        }
    }

    /**
     * @return the server feature that serves the document
     */
    public static OpenApiFeature feature() {
        return OpenApiFeature.builder()
                .staticFile(RESOURCE)
                .webContext(PATH)
                .servicesDiscoverServices(false)
                .build();
    }
}
