// Placeholder until the quant component lands its bindings.
#include <pybind11/pybind11.h>
void register_quant(pybind11::module_& m) { (void)m; }
