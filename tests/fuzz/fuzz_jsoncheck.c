/*
 * fuzz_jsoncheck: jsoncheck_valid against jansson on arbitrary bytes.
 *
 * jsoncheck.h promises the verdict of json_loadb(JSON_DECODE_ANY) on a text
 * without NUL bytes, and a refusal of any NUL byte: an input that breaks either
 * aborts.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsoncheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool ref = false;
    if (!memchr(data, 0, size)) {
        json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        ref = j != NULL;
        json_decref(j);
    }
    if (jsoncheck_valid((const char *)data, size) != ref)
        abort();
    return 0;
}
