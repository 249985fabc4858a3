// Python view of the quant kernels for tests and benchmarks: numpy arrays in, numpy arrays out.
// Types are passed as ggml type ids (int(gguf.GGMLQuantizationType.X)). Knows nothing about models.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "quant.h"
#include "quant/kernels.h"

namespace py = pybind11;

namespace {

using U8 = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;

lg::ActPrecision precision_of(int p) {
    if (p != 0 && p != 1) throw std::invalid_argument("precision must be 0 (q8) or 1 (q8x2), got " + std::to_string(p));
    return static_cast<lg::ActPrecision>(p);
}

lg::GGMLType type_of(int t) {
    auto g = static_cast<lg::GGMLType>(t);
    if (!lg::quant_supported(g)) throw std::invalid_argument("unsupported ggml type id " + std::to_string(t));
    return g;
}

void need_bytes(const char* what, py::ssize_t have, int64_t need) {
    if (have < need)
        throw std::invalid_argument(std::string(what) + ": " + std::to_string(have) + " bytes given, " +
                                    std::to_string(need) + " needed");
}

// x as [T, K] float32.
std::pair<int, int64_t> x_shape(const F32& x) {
    if (x.ndim() != 2) throw std::invalid_argument("x must be 2-D [T, K]");
    return {static_cast<int>(x.shape(0)), static_cast<int64_t>(x.shape(1))};
}

py::array_t<float> run_matmul(bool scalar, int type, const U8& W, int64_t n_rows, const U8& acts, const F32& x,
                              int64_t r0, int64_t r1) {
    auto wt = type_of(type);
    auto [T, K] = x_shape(x);
    if (r1 < 0) r1 = n_rows;
    if (r0 < 0 || r1 > n_rows || r0 > r1) throw std::invalid_argument("bad row range");
    need_bytes("W", W.nbytes(), n_rows * lg::quant_row_bytes(wt, K));
    uint32_t prec = 0;  // the header's precision field (matmul validates the whole header)
    if (acts.nbytes() >= 8) std::memcpy(&prec, acts.data() + 4, 4);
    need_bytes("acts", acts.nbytes(),
               static_cast<int64_t>(lg::act_buffer_bytes(wt, K, T, prec == 1 ? lg::ActPrecision::Q8X2 : lg::ActPrecision::Q8)));
    py::array_t<float> y({static_cast<py::ssize_t>(T), static_cast<py::ssize_t>(n_rows)});
    float* yp = y.mutable_data();
    for (py::ssize_t i = 0; i < y.size(); ++i) yp[i] = std::numeric_limits<float>::quiet_NaN();
    const uint8_t* wp = W.data();
    const uint8_t* ap = acts.data();
    const float* xp = x.data();
    {
        py::gil_scoped_release nogil;
        if (scalar) lg::matmul_scalar(wt, wp, K, r0, r1, ap, xp, T, yp, n_rows);
        else lg::matmul(wt, wp, K, r0, r1, ap, xp, T, yp, n_rows);
    }
    return y;
}

}  // namespace

void register_quant(py::module_& m) {
    m.def("quant_supported", [](int t) { return lg::quant_supported(static_cast<lg::GGMLType>(t)); });
    m.def("quant_row_bytes", [](int t, int64_t K) { return lg::quant_row_bytes(type_of(t), K); });
    m.def("quant_simd_name", &lg::quant_simd_name);
    // The calibrated plan (quant.h, kernel variants): records = T x records_per_vector of the precision.
    m.def("kernel_variants", [](int t, int64_t K, int n_rec) { return lg::kernel_variants(type_of(t), K, n_rec); },
          py::arg("type"), py::arg("K"), py::arg("n_rec"), "Variant names for the shape; 'static' (the built-in plan) first.");
    m.def("set_kernel_variant",
          [](int t, int64_t K, int n_rec, const std::string& name) { lg::set_kernel_variant(type_of(t), K, n_rec, name); },
          py::arg("type"), py::arg("K"), py::arg("n_rec"), py::arg("name"), "Run variant `name` for the shape (ValueError if unknown).");
    m.def("clear_kernel_variants", &lg::clear_kernel_variants, "Every shape back to the static plan.");
    m.def("kernel_variant_table", [] {
        py::list out;
        for (const auto& c : lg::kernel_variant_table())
            out.append(py::make_tuple(static_cast<int>(c.type), c.K, c.n_rec, c.variant));
        return out;
    }, "The overridden shapes: [(type, K, n_rec, variant)].");
    m.def(
        "dequantize_row",
        [](int t, const U8& data, int64_t n) {
            auto g = type_of(t);
            lg::quant_check(g, n, "dequantize_row");
            need_bytes("data", data.nbytes(), lg::quant_row_bytes(g, n));
            py::array_t<float> out(static_cast<py::ssize_t>(n));
            lg::dequantize_row(g, data.data(), out.mutable_data(), n);
            return out;
        },
        py::arg("type"), py::arg("data"), py::arg("n"), "Dequantize n elements of ggml type `type` from raw bytes.");
    m.def("act_buffer_bytes", [](int t, int64_t K, int T, int precision) {
        return lg::act_buffer_bytes(type_of(t), K, T, precision_of(precision));
    }, py::arg("type"), py::arg("K"), py::arg("T"), py::arg("precision") = 1);
    m.def(
        "prepare_acts",
        [](int t, const F32& x, int precision) {
            auto wt = type_of(t);
            auto prec = precision_of(precision);
            auto [T, K] = x_shape(x);
            py::array_t<uint8_t> buf(static_cast<py::ssize_t>(lg::act_buffer_bytes(wt, K, T, prec)));
            lg::prepare_acts(wt, x.data(), K, T, buf.mutable_data(), prec);
            return buf;
        },
        py::arg("type"), py::arg("x"), py::arg("precision") = 1,
        "Prepare activations x [T, K] for weights of ggml type `type`; precision 0 = q8, 1 = q8x2 (default, as in C++).");
    m.def(
        "matmul",
        [](int t, const U8& W, int64_t n_rows, const U8& acts, const F32& x, int64_t r0, int64_t r1) {
            return run_matmul(false, t, W, n_rows, acts, x, r0, r1);
        },
        py::arg("type"), py::arg("W"), py::arg("n_rows"), py::arg("acts"), py::arg("x"), py::arg("r0") = 0,
        py::arg("r1") = -1, "y [T, n_rows] = x @ W.T for rows [r0, r1) (other rows NaN); GIL released.");
    m.def(
        "matmul_scalar",
        [](int t, const U8& W, int64_t n_rows, const U8& acts, const F32& x, int64_t r0, int64_t r1) {
            return run_matmul(true, t, W, n_rows, acts, x, r0, r1);
        },
        py::arg("type"), py::arg("W"), py::arg("n_rows"), py::arg("acts"), py::arg("x"), py::arg("r0") = 0,
        py::arg("r1") = -1, "As matmul, by the scalar reference path.");
}
