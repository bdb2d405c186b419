package io.sandboxd.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.atlassian.oai.validator.report.SimpleValidationReportFormat;
import com.atlassian.oai.validator.report.ValidationReport;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.SwaggerParseResult;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Checks responses of the documented routes against the API's OpenAPI document ({@link ApiDocument#RESOURCE}):
 * status, required headers, body schema and error messages. A response the document does not allow fails the test
 * with the validator's report; responses of other paths (404s, /observe) are not the document's and pass through.
 */
final class OpenApiContract {

    static final String TEXT = read();
    private static final OpenAPI API = parse(TEXT);
    private static final OpenApiInteractionValidator VALIDATOR = OpenApiInteractionValidator
            .createForInlineApiSpecification(TEXT).build();

    private OpenApiContract() {
    }

    /** The document's paths: the three routes. */
    static Set<String> paths() {
        return API.getPaths().keySet();
    }

    /**
     * @param response a response from the test server
     * @return the response, once the document allows it
     */
    static HttpResponse<String> check(HttpResponse<String> response) {
        String path = response.request().uri().getPath();
        if (paths().contains(path)) {
            ValidationReport report = report(response.request().method(), path, response.statusCode(),
                                             response.headers().map(), response.body());
            if (report.hasErrors()) {
                fail(response.request().method() + " " + path + " answered " + response.statusCode() + " "
                             + response.body() + ", which the OpenAPI document does not allow:\n"
                             + SimpleValidationReportFormat.getInstance().apply(report));
            }
        }
        return response;
    }

    /** What the validator says of one response; one check at a time (its thread safety is not documented). */
    static synchronized ValidationReport report(String method, String path, int status, Map<String, List<String>> headers,
                                   String body) {
        SimpleResponse.Builder response = SimpleResponse.Builder.status(status).withBody(body);
        headers.forEach(response::withHeader);
        return VALIDATOR.validateResponse(path, Request.Method.valueOf(method), response.build());
    }

    private static String read() {
        try (InputStream in = OpenApiContract.class.getClassLoader().getResourceAsStream(ApiDocument.RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("no " + ApiDocument.RESOURCE + " on the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static OpenAPI parse(String text) {
        SwaggerParseResult result = new OpenAPIV3Parser().readContents(text);
        assertEquals(List.of(), result.getMessages() == null ? List.of() : result.getMessages(),
                     ApiDocument.RESOURCE + " is not a valid OpenAPI document");
        return result.getOpenAPI();
    }
}
