// Python bindings of the CUDA backend: gateway._native.CudaEngine (the methods of the CPU
// Engine, see notes/ENGINE_API.md) and cuda_available(). Knows nothing about tokenization.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "backend.h"

namespace py = pybind11;
using lg::cuda::CudaEngine;
using Tokens = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

static const int32_t* token_ptr(const Tokens& t, int* n) {
    if (t.ndim() != 1) throw std::invalid_argument("tokens must be a 1-D sequence of ints");
    *n = static_cast<int>(t.shape(0));
    return t.data();
}

static py::array_t<float> run_logits(CudaEngine& e, const Tokens& tokens, bool all_logits, bool stream) {
    int n = 0;
    const int32_t* p = token_ptr(tokens, &n);
    const int V = e.config().n_vocab;
    py::array_t<float> out = all_logits ? py::array_t<float>({n, V}) : py::array_t<float>(V);
    float* dst = out.mutable_data();
    {
        py::gil_scoped_release nogil;
        if (stream) e.prefill_stream(p, n, dst, all_logits);
        else e.forward_scratch(p, n, dst, all_logits);
    }
    return out;
}

void register_cuda(py::module_& m) {
    m.def("cuda_available", &lg::cuda::cuda_available, "True when a CUDA device is present");
    m.def("cuda_device_name", &lg::cuda::device_name, py::arg("device") = 0);

    py::class_<CudaEngine>(m, "CudaEngine")
        .def(py::init([](const std::string& path, int n_sink, int n_ring, int n_scratch, const std::string& policy,
                         int max_chunk, int device) {
                 lg::EngineOptions o;
                 o.n_sink = n_sink;
                 o.n_ring = n_ring;
                 o.n_scratch = n_scratch;
                 o.policy = lg::parse_policy(policy);
                 o.max_chunk = max_chunk;
                 py::gil_scoped_release nogil;
                 return new CudaEngine(path, o, device);
             }),
             py::arg("path"), py::arg("n_sink") = 4, py::arg("n_ring") = 2048, py::arg("n_scratch") = 512,
             py::arg("policy") = "sink_ring", py::arg("max_chunk") = lg::DEFAULT_MAX_CHUNK, py::arg("device") = 0)
        .def("prefill_stream", [](CudaEngine& e, const Tokens& t, bool all) { return run_logits(e, t, all, true); },
             py::arg("tokens"), py::arg("all_logits") = false)
        .def("forward_scratch", [](CudaEngine& e, const Tokens& t, bool all) { return run_logits(e, t, all, false); },
             py::arg("tokens"), py::arg("all_logits") = false)
        .def("forward_hidden",
             [](CudaEngine& e, const Tokens& tokens) {
                 int n = 0;
                 const int32_t* p = token_ptr(tokens, &n);
                 const lg::Config& c = e.config();
                 py::array_t<float> hidden({c.n_layer + 1, n, c.n_embd});
                 py::array_t<float> logits({n, c.n_vocab});
                 float* hd = hidden.mutable_data();
                 float* lg_ = logits.mutable_data();
                 {
                     py::gil_scoped_release nogil;
                     e.forward_hidden(p, n, hd, lg_);
                 }
                 return py::make_tuple(hidden, logits);
             },
             py::arg("tokens"))
        .def("forward_scratch_next",
             [](CudaEngine& e, const Tokens& tokens, float temperature, uint64_t seed) {
                 int n = 0;
                 const int32_t* p = token_ptr(tokens, &n);
                 py::gil_scoped_release nogil;
                 return e.forward_scratch_next(p, n, temperature, seed);
             },
             py::arg("tokens"), py::arg("temperature") = 0.0f, py::arg("seed") = 0,
             "forward_scratch, then the next token chosen on the device (greedy at temperature 0)")
        .def("decode",
             [](CudaEngine& e, int first, int n_steps, float temperature, uint64_t seed) {
                 if (n_steps < 0) throw std::invalid_argument("n_steps must be >= 0");
                 py::array_t<int32_t> out(n_steps);
                 int32_t* dst = out.mutable_data();
                 {
                     py::gil_scoped_release nogil;
                     e.decode(first, n_steps, dst, temperature, seed);
                 }
                 return out;
             },
             py::arg("first"), py::arg("n_steps"), py::arg("temperature") = 0.0f, py::arg("seed") = 0,
             "n_steps scratch decode steps run on the device; returns the n_steps tokens produced")
        .def("rollback", &CudaEngine::rollback, py::arg("n") = 0)
        .def("stream_checksum", [](const CudaEngine& e) {
            py::gil_scoped_release nogil;
            return e.stream_checksum();
        })
        .def_property("use_graph", &CudaEngine::use_graph, &CudaEngine::set_use_graph)
        .def_property_readonly("n_vocab", [](const CudaEngine& e) { return e.config().n_vocab; })
        .def_property_readonly("n_layer", [](const CudaEngine& e) { return e.config().n_layer; })
        .def_property_readonly("n_embd", [](const CudaEngine& e) { return e.config().n_embd; })
        .def_property_readonly("n_head", [](const CudaEngine& e) { return e.config().n_head; })
        .def_property_readonly("n_head_kv", [](const CudaEngine& e) { return e.config().n_head_kv; })
        .def_property_readonly("n_ff", [](const CudaEngine& e) { return e.config().n_ff; })
        .def_property_readonly("n_ctx_train", [](const CudaEngine& e) { return e.config().n_ctx_train; })
        .def_property_readonly("arch", [](const CudaEngine& e) { return e.config().arch; })
        .def_property_readonly("max_chunk", &CudaEngine::max_chunk)
        .def_property_readonly("stream_len", [](const CudaEngine& e) { return e.cache().stream_len(); })
        .def_property_readonly("stream_total", [](const CudaEngine& e) { return e.cache().stream_total(); })
        .def_property_readonly("scratch_len", [](const CudaEngine& e) { return e.cache().scratch_used(); })
        .def_property_readonly("scratch_free", [](const CudaEngine& e) { return e.cache().scratch_free(); })
        .def_property_readonly("bytes_per_token", &CudaEngine::bytes_per_token)
        .def_property_readonly("device_bytes", &CudaEngine::device_bytes)
        .def_property_readonly("device", &CudaEngine::device)
        .def("stats", [](const CudaEngine& e) {
            const lg::KVCache& c = e.cache();
            py::dict d;
            d["backend"] = "cuda";
            d["device"] = e.device();
            d["n_sink"] = c.n_sink();
            d["n_ring"] = c.n_ring();
            d["n_scratch"] = c.n_scratch();
            d["sink_used"] = c.sink_used();
            d["ring_used"] = c.ring_used();
            d["scratch_used"] = c.scratch_used();
            d["stream_total"] = c.stream_total();
            d["policy"] = lg::policy_name(c.policy());
            d["device_bytes"] = e.device_bytes();
            d["use_graph"] = e.use_graph();
            return d;
        });
}
