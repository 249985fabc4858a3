// What the engine bindings (CPU and CUDA) share: token arrays in, caller-owned float32 output arrays,
// the per-call allocation count, and the methods and properties both engine classes expose alike.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "alloc_counter.h"
#include "kv_cache.h"

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

// The API both engine classes share (notes/ENGINE_API.md). PyE derives from the engine and adds a
// `uint64_t call_allocs`; it has config(), cache() (lg::KVCache bookkeeping), prefill_stream,
// forward_scratch, forward_hidden, rollback and stream_checksum. Backend-specific members are bound
// by the caller.
template <class PyE>
void def_engine_common(py::class_<PyE>& cls) {
    // prefill_stream and forward_scratch take the same arguments: tokens in, logits of the last or all out.
    auto logits_call = [](auto method) {
        return [method](PyE& e, const TokenArray& tokens, py::object logits, bool all_logits) {
            AllocScope scope(e.call_allocs);
            int n;
            const int32_t* tok = token_ptr(tokens, &n);
            size_t V = e.config().n_vocab;
            float* out = out_ptr(logits, all_logits ? n * V : V, "logits");
            py::gil_scoped_release nogil;
            (e.*method)(tok, n, out, all_logits);
        };
    };
    cls.def("prefill_stream", logits_call(&PyE::prefill_stream), py::arg("tokens"), py::arg("logits") = py::none(),
            py::arg("all_logits") = false,
            "Append tokens to sink+ring; logits (optional out array) of the last token or all")
        .def("forward_scratch", logits_call(&PyE::forward_scratch), py::arg("tokens"), py::arg("logits") = py::none(),
             py::arg("all_logits") = false)
        .def("forward_hidden",
             [](PyE& e, const TokenArray& tokens, py::object hidden, py::object logits) {
                 AllocScope scope(e.call_allocs);
                 int n;
                 const int32_t* tok = token_ptr(tokens, &n);
                 const auto& c = e.config();
                 float* h = out_ptr(hidden, static_cast<size_t>(c.n_layer + 1) * n * c.n_embd, "hidden");
                 float* lg_ = out_ptr(logits, static_cast<size_t>(n) * c.n_vocab, "logits");
                 if (!h) throw std::invalid_argument("hidden is required");
                 py::gil_scoped_release nogil;
                 e.forward_hidden(tok, n, h, lg_);
             },
             py::arg("tokens"), py::arg("hidden"), py::arg("logits") = py::none())
        .def("rollback", [](PyE& e, int n) {
                 AllocScope scope(e.call_allocs);
                 e.rollback(n);
             }, py::arg("n") = 0)
        .def_readonly("call_allocs", &PyE::call_allocs,
                      "heap allocations made inside this engine's native calls (forward, prefill, rollback)")
        .def("stream_checksum", [](const PyE& e) {
            py::gil_scoped_release nogil;
            return e.stream_checksum();
        })
        .def_property_readonly("arch", [](const PyE& e) { return e.config().arch; })
        .def_property_readonly("n_vocab", [](const PyE& e) { return e.config().n_vocab; })
        .def_property_readonly("n_ctx_train", [](const PyE& e) { return e.config().n_ctx_train; })
        .def_property_readonly("n_layer", [](const PyE& e) { return e.config().n_layer; })
        .def_property_readonly("n_embd", [](const PyE& e) { return e.config().n_embd; })
        .def_property_readonly("n_head", [](const PyE& e) { return e.config().n_head; })
        .def_property_readonly("n_head_kv", [](const PyE& e) { return e.config().n_head_kv; })
        .def_property_readonly("head_dim", [](const PyE& e) { return e.config().head_dim; })
        .def_property_readonly("n_ff", [](const PyE& e) { return e.config().n_ff; })
        .def_property_readonly("rope_theta", [](const PyE& e) { return e.config().rope_theta; })
        .def_property_readonly("tied_embeddings", [](const PyE& e) { return e.config().tied_embeddings; })
        .def_property_readonly("n_sink", [](const PyE& e) { return e.cache().n_sink(); })
        .def_property_readonly("n_ring", [](const PyE& e) { return e.cache().n_ring(); })
        .def_property_readonly("n_scratch", [](const PyE& e) { return e.cache().n_scratch(); })
        .def_property_readonly("capacity", [](const PyE& e) { return e.cache().capacity(); })
        .def_property_readonly("kv_policy", [](const PyE& e) { return std::string(lg::policy_name(e.cache().policy())); })
        .def_property_readonly("evict_stats", [](const PyE& e) {
            const lg::EvictStats& s = e.cache().evict_stats();
            py::dict d;
            d["evicted_similar"] = s.similar;
            d["evicted_oldest"] = s.oldest;
            d["evicted_important"] = s.important;
            d["shifted_keys"] = s.shifted_keys;
            d["evict_seconds"] = s.seconds;
            return d;
        })
        .def("kept_stream_index", [](const PyE& e) {
            py::array_t<int64_t> out(e.cache().stream_len());
            e.cache().kept_stream_index(out.mutable_data());
            return out;
        }, "stream index of each token the stream part of the cache holds (sink, then ring oldest first)")
        .def_property_readonly("sink_used", [](const PyE& e) { return e.cache().sink_used(); })
        .def_property_readonly("ring_used", [](const PyE& e) { return e.cache().ring_used(); })
        .def_property_readonly("scratch_used", [](const PyE& e) { return e.cache().scratch_used(); })
        .def_property_readonly("stream_len", [](const PyE& e) { return e.cache().stream_len(); })
        .def_property_readonly("stream_total", [](const PyE& e) { return e.cache().stream_total(); });
}

}  // namespace lg::py_util
