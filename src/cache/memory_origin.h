// Transitional: MemoryOrigin is a test fake and lives in cache/testing/memory_origin.h (library
// ferry_cache_testing). Only the replica tier's tests still include this path; remove it when
// they include the new one.
#pragma once

#include "cache/testing/memory_origin.h"
