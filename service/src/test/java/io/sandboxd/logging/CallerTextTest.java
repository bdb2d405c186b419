package io.sandboxd.logging;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class CallerTextTest {

    @Test
    void shortTextIsQuotedWhole() {
        assertEquals("\"ruby\"", CallerText.quote("ruby"));
        assertEquals("\"" + "x".repeat(64) + "\"", CallerText.quote("x".repeat(64)));
        assertEquals("\"null\"", CallerText.quote(null));
    }

    @Test
    void longTextIsCutWithAnEllipsis() {
        assertEquals("\"" + "x".repeat(64) + "\u2026\"", CallerText.quote("x".repeat(65)));
        assertEquals("ab\u2026", CallerText.prefix("abcdef", 2));
    }

    @Test
    void aSurrogatePairIsNeverSplit() {
        String text = "x".repeat(63) + "\uD83D\uDE00" + "tail";
        assertEquals("x".repeat(63) + "\u2026", CallerText.prefix(text));
    }
}
