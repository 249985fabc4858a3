// Python bindings of lg::Engine (gateway._native.Engine) and the allocation counter.
// Outputs go into caller-provided numpy arrays so a forward call allocates nothing natively.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>

#include "alloc_counter.h"
#include "bindings_util.h"
#include "engine.h"
#include "quant.h"

namespace py = pybind11;
using lg::Engine;
using lg::py_util::AllocScope;
using lg::py_util::out_ptr;
using lg::py_util::token_ptr;
using lg::py_util::TokenArray;

namespace {

struct PyEngine : Engine {
    using Engine::Engine;
    uint64_t call_allocs = 0;
};

}  // namespace

void register_engine(py::module_& m) {
    m.def("alloc_count", &lg::alloc_count, "operator new calls made by this module since load");

    py::class_<PyEngine>(m, "Engine")
        .def(py::init([](const std::string& path, int n_sink, int n_ring, int n_scratch,
                         const std::string& policy, int n_threads, int max_chunk) {
                 lg::EngineOptions o;
                 o.n_sink = n_sink;
                 o.n_ring = n_ring;
                 o.n_scratch = n_scratch;
                 o.policy = lg::parse_policy(policy);
                 o.n_threads = n_threads;
                 o.max_chunk = max_chunk;
                 py::gil_scoped_release nogil;
                 return new PyEngine(path, o);
             }),
             py::arg("path"), py::arg("n_sink") = 4, py::arg("n_ring") = 2048, py::arg("n_scratch") = 512,
             py::arg("policy") = "sink_ring", py::arg("n_threads") = 0,
             py::arg("max_chunk") = lg::DEFAULT_MAX_CHUNK)
        .def("prefill_stream",
             [](PyEngine& e, const TokenArray& tokens, py::object logits, bool all_logits) {
                 AllocScope scope(e.call_allocs);
                 int n;
                 const int32_t* tok = token_ptr(tokens, &n);
                 size_t V = e.config().n_vocab;
                 float* out = out_ptr(logits, all_logits ? n * V : V, "logits");
                 py::gil_scoped_release nogil;
                 e.prefill_stream(tok, n, out, all_logits);
             },
             py::arg("tokens"), py::arg("logits") = py::none(), py::arg("all_logits") = false,
             "Append tokens to sink+ring; logits (optional out array) of the last token or all")
        .def("forward_scratch",
             [](PyEngine& e, const TokenArray& tokens, py::object logits, bool all_logits) {
                 AllocScope scope(e.call_allocs);
                 int n;
                 const int32_t* tok = token_ptr(tokens, &n);
                 size_t V = e.config().n_vocab;
                 float* out = out_ptr(logits, all_logits ? n * V : V, "logits");
                 py::gil_scoped_release nogil;
                 e.forward_scratch(tok, n, out, all_logits);
             },
             py::arg("tokens"), py::arg("logits") = py::none(), py::arg("all_logits") = false)
        .def("forward_hidden",
             [](PyEngine& e, const TokenArray& tokens, py::object hidden, py::object logits) {
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
        .def("rollback", [](PyEngine& e, int n) {
                 AllocScope scope(e.call_allocs);
                 e.rollback(n);
             }, py::arg("n") = 0)
        .def_readonly("call_allocs", &PyEngine::call_allocs,
                      "heap allocations made inside this engine's native calls (forward, prefill, rollback)")
        .def("stream_checksum", [](const PyEngine& e) {
            py::gil_scoped_release nogil;
            return e.stream_checksum();
        })
        .def_property_readonly("arch", [](const PyEngine& e) { return e.config().arch; })
        .def_property_readonly("n_vocab", [](const PyEngine& e) { return e.config().n_vocab; })
        .def_property_readonly("n_ctx_train", [](const PyEngine& e) { return e.config().n_ctx_train; })
        .def_property_readonly("n_layer", [](const PyEngine& e) { return e.config().n_layer; })
        .def_property_readonly("n_embd", [](const PyEngine& e) { return e.config().n_embd; })
        .def_property_readonly("n_head", [](const PyEngine& e) { return e.config().n_head; })
        .def_property_readonly("n_head_kv", [](const PyEngine& e) { return e.config().n_head_kv; })
        .def_property_readonly("head_dim", [](const PyEngine& e) { return e.config().head_dim; })
        .def_property_readonly("n_ff", [](const PyEngine& e) { return e.config().n_ff; })
        .def_property_readonly("rope_theta", [](const PyEngine& e) { return e.config().rope_theta; })
        .def_property_readonly("tied_embeddings", [](const PyEngine& e) { return e.config().tied_embeddings; })
        .def_property_readonly("n_sink", [](const PyEngine& e) { return e.cache().n_sink(); })
        .def_property_readonly("n_ring", [](const PyEngine& e) { return e.cache().n_ring(); })
        .def_property_readonly("n_scratch", [](const PyEngine& e) { return e.cache().n_scratch(); })
        .def_property_readonly("capacity", [](const PyEngine& e) { return e.cache().capacity(); })
        .def_property_readonly("policy", [](const PyEngine& e) { return std::string(lg::policy_name(e.cache().policy())); })
        .def_property_readonly("sink_used", [](const PyEngine& e) { return e.cache().sink_used(); })
        .def_property_readonly("ring_used", [](const PyEngine& e) { return e.cache().ring_used(); })
        .def_property_readonly("scratch_used", [](const PyEngine& e) { return e.cache().scratch_used(); })
        .def_property_readonly("stream_len", [](const PyEngine& e) { return e.cache().stream_len(); })
        .def_property_readonly("stream_total", [](const PyEngine& e) { return e.cache().stream_total(); })
        .def_property_readonly("n_threads", [](const PyEngine& e) { return e.n_threads(); })
        .def_property_readonly("max_chunk", [](const PyEngine& e) { return e.max_chunk(); })
        .def_property_readonly("kv_bytes", [](const PyEngine& e) { return e.cache().bytes(); })
        .def_property_readonly("state_bytes", [](const PyEngine& e) { return e.state_bytes(); })
        .def_property_readonly("bytes_per_token", [](const PyEngine& e) { return e.model().bytes_per_token(); })
        .def_property_readonly("simd", [](const PyEngine&) { return std::string(lg::quant_simd_name()); });
}
