/*
 * engine: the part of droverd that runs jobs.
 *
 * (The public API grows with the runtime; see docs/engine.md.)
 */
#ifndef DROVER_ENGINE_H
#define DROVER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#endif
