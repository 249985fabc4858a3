// Placeholder until the engine component lands its bindings.
#include <pybind11/pybind11.h>
void register_engine(pybind11::module_& m) { (void)m; }
