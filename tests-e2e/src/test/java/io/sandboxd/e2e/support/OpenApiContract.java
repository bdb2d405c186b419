package io.sandboxd.e2e.support;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.atlassian.oai.validator.report.SimpleValidationReportFormat;
import com.atlassian.oai.validator.report.ValidationReport;
import io.sandboxd.api.ApiDocument;
import io.swagger.v3.parser.OpenAPIV3Parser;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * The API's OpenAPI document (the service jar's {@link ApiDocument#RESOURCE}) as a check on every response of the
 * three routes that {@link Sandboxd#send} receives: status, required headers, body schema and error messages. A
 * response the document does not allow fails the test with the validator's report.
 */
final class OpenApiContract {

    private static final String DOCUMENT = read();
    private static final Set<String> PATHS = Set.copyOf(new OpenAPIV3Parser().readContents(DOCUMENT)
            .getOpenAPI().getPaths().keySet());
    private static final OpenApiInteractionValidator VALIDATOR = OpenApiInteractionValidator
            .createForInlineApiSpecification(DOCUMENT).build();

    private OpenApiContract() {
    }

    static void check(String method, URI uri, ApiResponse response) {
        String path = uri.getPath();
        if (!PATHS.contains(path)) {
            return; // /observe/..., not the document's
        }
        SimpleResponse.Builder checked = SimpleResponse.Builder.status(response.status()).withBody(response.body());
        response.headers().map().forEach(checked::withHeader);
        ValidationReport report;
        synchronized (VALIDATOR) { // one check at a time: the validator's thread safety is not documented
            report = VALIDATOR.validateResponse(path, Request.Method.valueOf(method), checked.build());
        }
        if (report.hasErrors()) {
            fail(method + " " + uri + " answered " + response + " " + response.headers().map()
                    + ", which the OpenAPI document does not allow:\n"
                    + SimpleValidationReportFormat.getInstance().apply(report));
        }
    }

    private static String read() {
        try (InputStream in = ApiDocument.class.getClassLoader().getResourceAsStream(ApiDocument.RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("no " + ApiDocument.RESOURCE + " on the classpath (sandboxd-service)");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
