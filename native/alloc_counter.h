// Counts heap allocations made through operator new by code in this module (the replacement
// operators in alloc_counter.cpp). Tests use it to prove forward allocates nothing after init.
#pragma once
#include <cstdint>

namespace lg {
uint64_t alloc_count();  // operator new calls since load
}
