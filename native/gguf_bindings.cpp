// Placeholder until the gguf component lands its bindings.
#include <pybind11/pybind11.h>
void register_gguf(pybind11::module_& m) { (void)m; }
