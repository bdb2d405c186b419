package io.sandboxd.api;

import io.helidon.openapi.OpenApiFeature;

/**
 * The API's OpenAPI document: the three routes with every field, status and error message of the contract. sandboxd
 * serves it as it is, read-only and without a token, at {@code GET /openapi} ({@code ?format=JSON} for JSON); the unit
 * tests and the e2e suite check real responses against the same file.
 */
public final class ApiDocument {

    /** Classpath resource of the document. */
    public static final String RESOURCE = "META-INF/openapi.yaml";
    /** Where it is served. */
    public static final String PATH = "/openapi";

    private ApiDocument() {
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
