// The pybind11 module gateway._native: each component registers its own bindings.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_gguf(py::module_& m);    // gguf_bindings.cpp
void register_quant(py::module_& m);   // quant_bindings.cpp
void register_engine(py::module_& m);  // engine_bindings.cpp
void register_membench(py::module_& m);  // membench.cpp
#ifdef LINEGATE_HAVE_CUDA
void register_cuda(py::module_& m);    // cuda/cuda_bindings.cu
#endif

PYBIND11_MODULE(_native, m) {
    m.doc() = "linegate native engine (GGUF reader, quantized kernels, sink+ring KV cache)";
    register_gguf(m);
    register_quant(m);
    register_engine(m);
    register_membench(m);
#ifdef LINEGATE_HAVE_CUDA
    m.attr("cuda_built") = true;
    register_cuda(m);
#else
    m.attr("cuda_built") = false;
    m.def("cuda_available", [] { return false; }, "True when a CUDA device can be used (never: not built)");
#endif
}
