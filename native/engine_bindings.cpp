// Python bindings of lg::Engine (gateway._native.Engine) and the allocation counter.
// Outputs go into caller-provided numpy arrays so a forward call allocates nothing natively.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "alloc_counter.h"
#include "bindings_util.h"
#include "engine.h"
#include "quant.h"

namespace py = pybind11;
using lg::Engine;

namespace {

struct PyEngine : Engine {
    using Engine::Engine;
    uint64_t call_allocs = 0;
};

}  // namespace

void register_engine(py::module_& m) {
    m.def("alloc_count", &lg::alloc_count, "operator new calls made by this module since load");

    // what the caller may leave out takes EngineOptions' own values (engine.h), declared there only
    const lg::EngineOptions unset;
    py::class_<PyEngine> cls(m, "Engine");
    cls
        .def(py::init([](const std::string& path, int n_sink, int n_ring, int n_scratch,
                         const std::string& kv_policy, int n_threads, int max_chunk,
                         const std::string& act_precision, int kv_block, int sem_layer, float sem_threshold,
                         float sem_keep) {
                 lg::EngineOptions o;
                 o.n_sink = n_sink;
                 o.n_ring = n_ring;
                 o.n_scratch = n_scratch;
                 o.kv_policy = lg::parse_policy(kv_policy);
                 o.n_threads = n_threads;
                 o.max_chunk = max_chunk;
                 o.act_precision = lg::parse_act_precision(act_precision);
                 o.kv_block = kv_block;
                 o.sem_layer = sem_layer;
                 o.sem_threshold = sem_threshold;
                 o.sem_keep = sem_keep;
                 py::gil_scoped_release nogil;
                 return new PyEngine(path, o);
             }),
             // layout, kv_policy and precision: given by the caller (gateway/settings.py holds the appliance's)
             py::arg("path"), py::arg("n_sink"), py::arg("n_ring"), py::arg("n_scratch"),
             py::arg("kv_policy"), py::arg("n_threads") = unset.n_threads,
             py::arg("max_chunk") = unset.max_chunk, py::arg("act_precision"),
             py::arg("kv_block") = unset.kv_block, py::arg("sem_layer") = unset.sem_layer,
             py::arg("sem_threshold") = unset.sem_threshold, py::arg("sem_keep") = unset.sem_keep);
    lg::py_util::def_engine_common(cls);
    cls
        .def("set_stream_importance", [](PyEngine& e, float v) { e.set_stream_importance(v); }, py::arg("value"),
             "policy novelty: importance of the stream tokens prefilled from now on (0 = ordinary)")
        .def_property_readonly("reads_during_jobs", [](const PyEngine&) { return true; },
                               "prefill_stream may run while a job holds scratch (kv_cache.h)")
        .def_property_readonly("job_view_lost", [](const PyEngine& e) { return e.job_view_lost(); },
                               "stream tokens of the running job's view evicted since it began")
        .def_property("job_sees_stream", [](const PyEngine& e) { return e.job_sees_stream(); },
                      [](PyEngine& e, bool v) { e.set_job_sees_stream(v); },
                      "a job started from now on attends to sink + ring (True) or to the sink only (kv_cache.h)")
        .def_property_readonly("n_threads", [](const PyEngine& e) { return e.n_threads(); })
        .def_property_readonly("max_chunk", [](const PyEngine& e) { return e.max_chunk(); })
        .def_property_readonly("act_precision", [](const PyEngine& e) { return std::string(lg::act_precision_name(e.act_precision())); })
        .def_property_readonly("kv_bytes", [](const PyEngine& e) { return e.cache().bytes(); })
        .def_property_readonly("state_bytes", [](const PyEngine& e) { return e.state_bytes(); })
        .def_property_readonly("bytes_per_token", [](const PyEngine& e) { return e.model().bytes_per_token(); })
        .def_property_readonly("packed_matrices", [](const PyEngine& e) { return e.model().packed_matrices(); },
                               "weight matrices packed at load (quant.h: pack_weights; aarch64, or LINEGATE_PACK_WEIGHTS=1)")
        .def_property_readonly("simd", [](const PyEngine&) { return std::string(lg::quant_simd_name()); });
}
