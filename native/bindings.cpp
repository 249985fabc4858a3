// The pybind11 module gateway._native: each component registers its own bindings.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_gguf(py::module_& m);    // gguf_bindings.cpp
void register_quant(py::module_& m);   // quant_bindings.cpp
void register_engine(py::module_& m);  // engine_bindings.cpp

PYBIND11_MODULE(_native, m) {
    m.doc() = "linegate native engine (GGUF reader, quantized kernels, sink+ring KV cache)";
    register_gguf(m);
    register_quant(m);
    register_engine(m);
#ifdef LINEGATE_HAVE_CUDA
    m.attr("cuda_built") = true;
#else
    m.attr("cuda_built") = false;
#endif
}
