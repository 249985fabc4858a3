// Python view of lg::GGUFFile: metadata as Python values, tensor infos, zero-copy tensor bytes.
// Knows nothing about models; gateway/gguf.py adds the CLI and summaries on top.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "gguf.h"

namespace py = pybind11;

namespace {

const char* value_type_name(lg::GGUFValueType t) {
    static const char* names[] = {"UINT8", "INT8",   "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                  "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64", "FLOAT64"};
    auto i = static_cast<uint32_t>(t);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "UNKNOWN";
}

// Strings in a GGUF file are bytes that should be UTF-8; a hostile file's bytes survive the
// round trip as lone surrogates instead of raising in the middle of a metadata conversion.
py::str to_str(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

// The inverse, for keys and names passed in from Python.
std::string from_str(const py::str& s) {
    PyObject* b = PyUnicode_AsEncodedString(s.ptr(), "utf-8", "surrogateescape");
    if (!b) throw py::error_already_set();
    auto bytes = py::reinterpret_steal<py::bytes>(b);
    return std::string(bytes);
}

py::object to_py(const lg::GGUFValue& v, size_t max_items);

py::list array_to_list(const lg::GGUFArray& a, size_t max_items) {
    size_t n = std::min(a.items.size(), max_items);
    py::list out(n);
    for (size_t i = 0; i < n; ++i) out[i] = to_py(a.items[i], SIZE_MAX);
    return out;
}

py::object to_py(const lg::GGUFValue& v, size_t max_items) {
    if (auto p = std::get_if<int64_t>(&v.v)) return py::int_(*p);
    if (auto p = std::get_if<uint64_t>(&v.v)) return py::int_(*p);
    if (auto p = std::get_if<double>(&v.v)) return py::float_(*p);
    if (auto p = std::get_if<bool>(&v.v)) return py::bool_(*p);
    if (auto p = std::get_if<std::string>(&v.v)) return to_str(*p);
    return array_to_list(*std::get<std::shared_ptr<lg::GGUFArray>>(v.v), max_items);
}

// The Python object: the parsed file plus a lazily built metadata dict (the vocab arrays of a
// Qwen file are ~300k strings; most callers only want a few scalars through get()).
struct PyGGUFFile {
    std::unique_ptr<lg::GGUFFile> file;
    py::object metadata_cache;

    explicit PyGGUFFile(const std::string& path) : file(std::make_unique<lg::GGUFFile>(path)) {}

    const lg::GGUFValue& value(const py::str& key) const {
        const lg::GGUFValue* v = file->find(from_str(key));
        if (!v) throw py::key_error(py::str("{}: no metadata key {!r}").format(file->path(), key));
        return *v;
    }
};

}  // namespace

static void register_tensor_info(py::module_& m);
static void register_file(py::module_& m);

void register_gguf(py::module_& m) {
    py::register_exception<lg::GGUFError>(m, "GGUFError", PyExc_ValueError);

    m.def("ggml_type_name", [](uint32_t t) { return lg::ggml_type_name(static_cast<lg::GGMLType>(t)); },
          py::arg("type_id"), "Name of a ggml tensor type id ('Q4_K'); 'UNKNOWN' if not known.");
    m.def("ggml_type_traits",
          [](uint32_t t) {
              lg::TypeTraits tt = lg::ggml_type_traits(static_cast<lg::GGMLType>(t));
              return py::make_tuple(tt.block_elems, tt.block_bytes);
          },
          py::arg("type_id"), "(elements per block, bytes per block); (0, 0) for an unknown type.");

    register_tensor_info(m);
    register_file(m);
}

// GGUFTensor: one tensor's info (name, shape, type, offset, sizes).
static void register_tensor_info(py::module_& m) {
    py::class_<lg::GGUFTensorInfo>(m, "GGUFTensor", "One tensor's info; valid while its GGUFFile lives.")
        .def_property_readonly("name", [](const lg::GGUFTensorInfo& t) { return to_str(t.name); })
        .def_property_readonly("shape", [](const lg::GGUFTensorInfo& t) { return t.ne; },
                               "ggml order: shape[0] is the row length (fastest varying)")
        .def_property_readonly("type", [](const lg::GGUFTensorInfo& t) { return lg::ggml_type_name(t.type); })
        .def_property_readonly("type_id", [](const lg::GGUFTensorInfo& t) { return static_cast<uint32_t>(t.type); })
        .def_readonly("offset", &lg::GGUFTensorInfo::offset, "relative to the file's data_offset")
        .def_readonly("nbytes", &lg::GGUFTensorInfo::nbytes)
        .def_property_readonly("n_elements", &lg::GGUFTensorInfo::n_elements)
        .def_property_readonly("n_rows", &lg::GGUFTensorInfo::n_rows)
        .def_property_readonly("row_bytes", &lg::GGUFTensorInfo::row_bytes)
        .def("__repr__", [](const lg::GGUFTensorInfo& t) {
            std::string dims;
            for (size_t i = 0; i < t.ne.size(); ++i) dims += (i ? ", " : "") + std::to_string(t.ne[i]);
            return py::str("<GGUFTensor {!r} {} [{}]>").format(to_str(t.name), lg::ggml_type_name(t.type), dims);
        });
}

// GGUFFile: the mmapped file, its metadata and tensors.
static void register_file(py::module_& m) {
    py::class_<PyGGUFFile>(m, "GGUFFile", "A GGUF file, mmapped read-only; raises GGUFError on a bad file.")
        .def(py::init<const std::string&>(), py::arg("path"))
        .def_property_readonly("path", [](const PyGGUFFile& f) { return f.file->path(); })
        .def_property_readonly("version", [](const PyGGUFFile& f) { return f.file->version(); })
        .def_property_readonly("alignment", [](const PyGGUFFile& f) { return f.file->alignment(); })
        .def_property_readonly("data_offset", [](const PyGGUFFile& f) { return f.file->data_offset(); })
        .def_property_readonly("file_size", [](const PyGGUFFile& f) { return f.file->file_size(); })
        .def_property_readonly(
            "metadata",
            [](PyGGUFFile& f) {
                if (!f.metadata_cache) {
                    py::dict d;
                    for (const auto& kv : f.file->metadata()) d[to_str(kv.first)] = to_py(kv.second, SIZE_MAX);
                    f.metadata_cache = d;
                }
                return f.metadata_cache;
            },
            "dict of every key in file order; arrays are lists (built once, on first use)")
        .def("keys",
             [](const PyGGUFFile& f) {
                 py::list out;
                 for (const auto& kv : f.file->metadata()) out.append(to_str(kv.first));
                 return out;
             })
        .def("__contains__", [](const PyGGUFFile& f, const py::str& key_) { return f.file->find(from_str(key_)) != nullptr; })
        .def("get",
             [](const PyGGUFFile& f, const py::str& key_, py::object dflt) -> py::object {
                 const std::string key = from_str(key_);
                 const lg::GGUFValue* v = f.file->find(key);
                 return v ? to_py(*v, SIZE_MAX) : dflt;
             },
             py::arg("key"), py::arg("default") = py::none(), "One metadata value, converted alone.")
        // The typed getters the engine uses (C++ semantics: ints widen, a missing key raises).
        .def("get_int", [](const PyGGUFFile& f, const py::str& key_) { return f.file->get_int(from_str(key_)); }, py::arg("key"))
        .def("get_float", [](const PyGGUFFile& f, const py::str& key_) { return f.file->get_float(from_str(key_)); }, py::arg("key"))
        .def("get_string", [](const PyGGUFFile& f, const py::str& key_) { return to_str(f.file->get_string(from_str(key_))); },
             py::arg("key"))
        .def("value_type",
             [](const PyGGUFFile& f, const py::str& key_) -> py::tuple {
                 const lg::GGUFValue& v = f.value(key_);
                 if (v.type != lg::GGUFValueType::ARRAY) return py::make_tuple(value_type_name(v.type), py::none(), py::none());
                 const auto& a = *std::get<std::shared_ptr<lg::GGUFArray>>(v.v);
                 return py::make_tuple("ARRAY", value_type_name(a.elem_type), a.items.size());
             },
             py::arg("key"), "(type, elem_type, len); elem_type and len are None for a scalar.")
        .def("array_head",
             [](const PyGGUFFile& f, const py::str& key_, size_t n) -> py::list {
                 const lg::GGUFValue& v = f.value(key_);
                 if (v.type != lg::GGUFValueType::ARRAY)
                     throw py::type_error(py::str("{}: key {!r} is not an array").format(f.file->path(), key_));
                 return array_to_list(*std::get<std::shared_ptr<lg::GGUFArray>>(v.v), n);
             },
             py::arg("key"), py::arg("n"), "The first n items of an array value.")
        .def_property_readonly(
            "tensors",
            [](const PyGGUFFile& f) {
                py::list out;
                py::object self = py::cast(&f, py::return_value_policy::reference);
                for (const auto& t : f.file->tensors())
                    out.append(py::cast(&t, py::return_value_policy::reference_internal, self));
                return out;
            },
            "tensor infos in file order")
        .def("tensor",
             [](const PyGGUFFile& f, const py::str& name_) -> const lg::GGUFTensorInfo& { return f.file->tensor(from_str(name_)); },
             py::return_value_policy::reference_internal, py::arg("name"))
        .def("tensor_data",
             [](py::object self, const py::str& name_) {
                 const std::string name = from_str(name_);
                 const PyGGUFFile& f = self.cast<const PyGGUFFile&>();
                 const lg::GGUFTensorInfo& t = f.file->tensor(name);
                 // The array's base is the file object: the mapping outlives every view of it.
                 py::array_t<uint8_t> arr({static_cast<py::ssize_t>(t.nbytes)}, {1}, t.data, self);
                 // The mapping is PROT_READ: a write through the view would fault.
                 py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
                 return arr;
             },
             py::arg("name"), "The tensor's bytes as a read-only uint8 view into the mmap (no copy).")
        .def("__repr__", [](const PyGGUFFile& f) {
            return "<GGUFFile '" + f.file->path() + "' v" + std::to_string(f.file->version()) + ", " +
                   std::to_string(f.file->metadata().size()) + " keys, " +
                   std::to_string(f.file->tensors().size()) + " tensors>";
        });
}
