// Python bindings of the CUDA backend: gateway._native.CudaEngine (the methods of the CPU
// Engine, see notes/ENGINE_API.md) and cuda_available(). Knows nothing about tokenization.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "alloc_counter.h"
#include "bindings_util.h"
#include "backend.h"

namespace py = pybind11;
using lg::cuda::CudaEngine;
using Tokens = lg::py_util::TokenArray;
using lg::py_util::token_ptr;

namespace {

struct PyCudaEngine : CudaEngine {
    using CudaEngine::CudaEngine;
    uint64_t call_allocs = 0;
};

}  // namespace

void register_cuda(py::module_& m) {
    m.def("cuda_available", &lg::cuda::cuda_available, "True when a CUDA device is present");
    m.def("cuda_device_name", &lg::cuda::device_name, py::arg("device") = 0);
    m.def("cuda_d2d_bandwidth_gbps", &lg::cuda::d2d_bandwidth_gbps, py::arg("bytes") = size_t(1) << 30,
          py::arg("iters") = 20, "device memory bandwidth measured by cudaMemcpy D2D (read + write)");

    // Drop-in for gateway._native.Engine (same constructor, methods and properties; n_threads
    // is accepted and ignored), plus the device-side token choice and decode loop.
    const lg::EngineOptions unset;   // what the caller may leave out: EngineOptions' own values (engine.h)
    py::class_<PyCudaEngine> cls(m, "CudaEngine");
    cls
        .def(py::init([](const std::string& path, int n_sink, int n_ring, int n_scratch, const std::string& kv_policy,
                         int n_threads, int max_chunk, int device, const std::string& act_precision) {
                 lg::EngineOptions o;
                 o.n_sink = n_sink;
                 o.n_ring = n_ring;
                 o.n_scratch = n_scratch;
                 o.kv_policy = lg::parse_policy(kv_policy);
                 o.n_threads = n_threads;
                 o.max_chunk = max_chunk;
                 o.act_precision = lg::parse_act_precision(act_precision);
                 py::gil_scoped_release nogil;
                 return new PyCudaEngine(path, o, device);
             }),
             // layout, kv_policy and precision: given by the caller (gateway/settings.py holds the appliance's)
             py::arg("path"), py::arg("n_sink"), py::arg("n_ring"), py::arg("n_scratch"),
             py::arg("kv_policy"), py::arg("n_threads") = unset.n_threads, py::arg("max_chunk") = unset.max_chunk,
             py::arg("device") = 0, py::arg("act_precision"));
    lg::py_util::def_engine_common(cls);
    cls
        .def("forward_scratch_next",
             [](PyCudaEngine& e, const Tokens& tokens, float temperature, uint64_t seed) {
                 int n = 0;
                 const int32_t* p = token_ptr(tokens, &n);
                 py::gil_scoped_release nogil;
                 return e.forward_scratch_next(p, n, temperature, seed);
             },
             py::arg("tokens"), py::arg("temperature") = 0.0f, py::arg("seed") = 0,
             "forward_scratch, then the next token chosen on the device (greedy at temperature 0)")
        .def("decode",
             [](PyCudaEngine& e, int first, int n_steps, float temperature, uint64_t seed) {
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
        .def_property("use_graph", &CudaEngine::use_graph, &CudaEngine::set_use_graph,
                      "capture the decode step in a CUDA graph (default True)")
        .def_property("fuse", &CudaEngine::fuse, &CudaEngine::set_fuse,
                      "RMSNorm+quantize, q+k+v and gate+up projections each in one launch (default True; same values)")
        .def_property("pdl", &CudaEngine::pdl, &CudaEngine::set_pdl,
                      "programmatic dependent launches with L2 weight prefetch (default False; same values)")
        .def_property("mma", &CudaEngine::mma, &CudaEngine::set_mma,
                      "int8 tensor-core products for chunks of T > 1 tokens (default False; same values)")
        .def_property_readonly("reads_during_jobs", [](const PyCudaEngine&) { return false; },
                               "prefill_stream refuses while a job holds scratch (the engine thread waits)")
        .def_property_readonly("job_view_lost", [](const PyCudaEngine&) { return 0; })
        .def_property_readonly("n_threads", [](const PyCudaEngine&) { return 0; })
        .def_property_readonly("max_chunk", &CudaEngine::max_chunk)
        .def_property_readonly("act_precision",
                               [](const PyCudaEngine& e) { return std::string(lg::act_precision_name(e.act_precision())); })
        .def_property_readonly("kv_bytes", [](const PyCudaEngine& e) { return e.kv_bytes(); })
        .def_property_readonly("state_bytes", &CudaEngine::device_bytes)
        .def_property_readonly("bytes_per_token", &CudaEngine::bytes_per_token)
        .def_property_readonly("simd", [](const PyCudaEngine&) { return std::string("cuda"); })
        .def_property_readonly("device", &CudaEngine::device)
        .def("stats", [](const PyCudaEngine& e) {
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
            d["kv_policy"] = lg::policy_name(c.policy());
            d["device_bytes"] = e.device_bytes();
            d["use_graph"] = e.use_graph();
            d["fuse"] = e.fuse();
            d["pdl"] = e.pdl();
            d["mma"] = e.mma();
            d["act_precision"] = lg::act_precision_name(e.act_precision());
            return d;
        });
}
