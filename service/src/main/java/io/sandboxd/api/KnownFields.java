package io.sandboxd.api;

import java.io.IOException;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import io.sandboxd.json.CompactJson;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Reads a request body with a streaming parser, keeping only the fields a route knows: every other field is skipped
 * token by token (its strings are never even decoded), so a body's heap cost is what the route keeps, not what the
 * caller sent. The result is a small tree of the known fields that the route then validates as before.
 *
 * <p>Per field the route says what to keep ({@link Shape}): a scalar (an object or array found there is skipped and
 * kept as an empty one, so validation still sees the wrong type), an object kept as compact text, or an array of
 * objects read field by field. Duplicate names among the known fields are refused; duplicates among skipped fields
 * are not looked for (remembering every skipped name would cost memory for nothing).
 */
final class KnownFields {

    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    /** What to keep of one field. */
    record Shape(Kind kind, Map<String, Shape> fields) {

        /** A string, number, boolean or null. */
        static final Shape SCALAR = new Shape(Kind.SCALAR, Map.of());
        /** An object passed on as it is, kept as its compact text (see {@link CompactJson}). */
        static final Shape COMPACT_OBJECT = new Shape(Kind.COMPACT_OBJECT, Map.of());

        /**
         * @param fields the known fields of each element
         * @return an array of objects read with these fields
         */
        static Shape arrayOf(Map<String, Shape> fields) {
            return new Shape(Kind.ARRAY_OF_OBJECTS, Map.copyOf(fields));
        }
    }

    /** Kinds of {@link Shape}. */
    enum Kind { SCALAR, COMPACT_OBJECT, ARRAY_OF_OBJECTS }

    private KnownFields() {
    }

    /**
     * Reads one whole document: a JSON object and nothing after it.
     *
     * @param parser parser before the first token
     * @param fields the route's known fields
     * @return the known fields found
     * @throws IOException when the document is not one JSON object, or breaks the parser's limits
     */
    static ObjectNode readDocument(JsonParser parser, Map<String, Shape> fields) throws IOException {
        if (parser.nextToken() != JsonToken.START_OBJECT) {
            throw new JsonParseException(parser, "the body is not a JSON object");
        }
        ObjectNode body = readObject(parser, fields);
        if (parser.nextToken() != null) {
            throw new JsonParseException(parser, "data after the JSON object");
        }
        return body;
    }

    private static ObjectNode readObject(JsonParser parser, Map<String, Shape> fields) throws IOException {
        ObjectNode node = NODES.objectNode();
        Set<String> seen = new HashSet<>();
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String name = parser.currentName();
            parser.nextToken();
            Shape shape = fields.get(name);
            if (shape == null) {
                parser.skipChildren();
                continue;
            }
            if (!seen.add(name)) {
                throw new JsonParseException(parser, "duplicate field");
            }
            node.set(name, value(parser, shape));
        }
        return node;
    }

    private static JsonNode value(JsonParser parser, Shape shape) throws IOException {
        JsonToken token = parser.currentToken();
        return switch (token) {
        case START_OBJECT -> shape.kind() == Kind.COMPACT_OBJECT ? CompactJson.copy(parser)
                : skipped(parser, NODES.objectNode());
        case START_ARRAY -> shape.kind() == Kind.ARRAY_OF_OBJECTS ? readArray(parser, shape.fields())
                : skipped(parser, NODES.arrayNode());
        default -> scalar(parser);
        };
    }

    private static ArrayNode readArray(JsonParser parser, Map<String, Shape> fields) throws IOException {
        ArrayNode array = NODES.arrayNode();
        JsonToken token;
        while ((token = parser.nextToken()) != JsonToken.END_ARRAY) {
            if (token == JsonToken.START_OBJECT) {
                array.add(readObject(parser, fields));
            } else if (token == JsonToken.START_ARRAY) {
                array.add(skipped(parser, NODES.arrayNode()));
            } else {
                array.add(scalar(parser));
            }
        }
        return array;
    }

    private static JsonNode skipped(JsonParser parser, JsonNode empty) throws IOException {
        parser.skipChildren();
        return empty;
    }

    /** A scalar as {@code ObjectMapper.readTree} would have given it (floats as doubles). */
    private static JsonNode scalar(JsonParser parser) throws IOException {
        JsonToken token = parser.currentToken();
        return switch (token) {
        case VALUE_STRING -> NODES.textNode(parser.getText());
        case VALUE_NUMBER_INT -> switch (parser.getNumberType()) {
            case INT -> NODES.numberNode(parser.getIntValue());
            case LONG -> NODES.numberNode(parser.getLongValue());
            default -> NODES.numberNode(parser.getBigIntegerValue());
        };
        case VALUE_NUMBER_FLOAT -> NODES.numberNode(parser.getDoubleValue());
        case VALUE_TRUE -> NODES.booleanNode(true);
        case VALUE_FALSE -> NODES.booleanNode(false);
        case VALUE_NULL -> NODES.nullNode();
        default -> throw new JsonParseException(parser, "unexpected token " + token);
        };
    }
}
