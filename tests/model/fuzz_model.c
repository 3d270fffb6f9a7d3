/*
 * fuzz_model: libFuzzer target for the model's JSON codecs.
 *
 * The first byte picks the codec (byte % 7: provider, hardwaretype,
 * imagetype, service, clustertemplate, partialtemplate, layout); the rest is
 * the JSON text. Bad input must give an error, never a crash or a leak, and
 * whatever parses must survive a round trip (abort otherwise).
 *
 * Built as a fuzzer with clang -fsanitize=fuzzer (see docs/model.md) and,
 * with the normal compiler, linked into test_model_corpus, which replays
 * tests/model/corpus/ through the same entry point.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int sel = data[0] % 7;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct drv_err err = {0};
    if (sel < MODEL_KIND_COUNT) {
        if (model_codec_roundtrip((enum model_kind)sel, text, len, &err) < 0 && err.lib_code == 1)
            abort();
        return 0;
    }
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (!j)
        return 0;
    struct model_layout *l;
    if (model_layout_from_json(j, &l, &err) == 0) {
        json_t *a = model_layout_to_json(l, false);
        struct model_layout *l2;
        if (model_layout_from_json(a, &l2, &err) != 0)
            abort();
        json_t *b = model_layout_to_json(l2, false);
        if (!json_equal(a, b))
            abort();
        json_decref(a);
        json_decref(b);
        model_layout_free(l2);
        model_layout_free(l);
    }
    json_decref(j);
    return 0;
}
