// Argument helpers shared by the engine bindings (CPU and CUDA): token arrays in, caller-owned
// float32 output arrays, and the per-call allocation count. Knows nothing about any engine.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "alloc_counter.h"

namespace lg::py_util {

namespace py = pybind11;
using TokenArray = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

inline const int32_t* token_ptr(const TokenArray& tokens, int* n) {
    if (tokens.ndim() != 1) throw std::invalid_argument("tokens must be a 1-D array");
    *n = static_cast<int>(tokens.shape(0));
    return tokens.data();
}

// A writable C-contiguous float32 array of exactly `count` elements, or None -> nullptr.
inline float* out_ptr(const py::object& obj, size_t count, const char* name) {
    if (obj.is_none()) return nullptr;
    auto arr = py::reinterpret_borrow<py::array>(obj);
    if (!py::isinstance<py::array_t<float>>(obj) || !(arr.flags() & py::array::c_style) || !arr.writeable())
        throw std::invalid_argument(std::string(name) + " must be a writable C-contiguous float32 array");
    if (static_cast<size_t>(arr.size()) != count)
        throw std::invalid_argument(std::string(name) + " has " + std::to_string(arr.size()) +
                                    " elements, expected " + std::to_string(count));
    return static_cast<float*>(arr.mutable_data());
}

// Adds the allocations made (on any thread) while a native call runs to `total`, even if it
// throws; pybind11's own per-call argument handling lies outside and is not counted.
struct AllocScope {
    explicit AllocScope(uint64_t& total) : total_(total), start_(lg::alloc_count()) {}
    ~AllocScope() { total_ += lg::alloc_count() - start_; }
    uint64_t& total_;
    uint64_t start_;
};

}  // namespace lg::py_util
