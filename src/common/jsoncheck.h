/*
 * jsoncheck: whether a text is one JSON value, without building it.
 *
 * Purpose: coord checks every queue item it is given (a consumer must be able
 * to read it), and parsing a 2 KB item with jansson to throw the tree away cost
 * the engine's owner a quarter of its CPU. This scanner reads the text once,
 * allocates nothing and, for a text without NUL bytes, accepts exactly what
 * json_loadb(text, len, JSON_DECODE_ANY) accepts: RFC 8259 with jansson's limits
 * (no \u0000, integers in 64 bits, reals that do not overflow, at most 2048
 * levels of nesting) and UTF-8 checked the same way. A NUL byte is always
 * refused (jansson skips one that follows a number). test_jsoncheck and
 * fuzz_replay_jsoncheck compare the two verdicts.
 *
 * Threads: none kept; reentrant.
 */
#ifndef DROVER_JSONCHECK_H
#define DROVER_JSONCHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True when text[0..len) is one JSON value with optional whitespace around it. */
bool jsoncheck_valid(const char *text, size_t len);

#endif
