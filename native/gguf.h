// GGUF reader: mmaps a file, parses header, metadata and tensor infos; exposes tensors in place.
// Knows nothing about model architectures or quantization math (see quant.h, model.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace lg {

// GGUF on-disk format (little-endian), version 2 and 3:
//   u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
//   n_kv x { string key, u32 value_type, value },
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset },
//   padding to `general.alignment` (default 32), then tensor data; `offset` is relative to it.
// A string is u64 length + bytes (no NUL). An array is u32 elem_type, u64 count, elems.

struct GGUFError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ggml tensor types (values are the on-disk ids).
enum class GGMLType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
    IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29,
    BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};
const char* ggml_type_name(GGMLType t);          // "Q4_K", ... ; "UNKNOWN" if not known
// Elements per block and bytes per block; {0,0} for a type this reader does not know.
struct TypeTraits { int64_t block_elems; int64_t block_bytes; };
TypeTraits ggml_type_traits(GGMLType t);

enum class GGUFValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

struct GGUFArray;
// Scalars are widened: ints -> int64_t/uint64_t kept by `type`, floats -> double.
struct GGUFValue {
    GGUFValueType type;
    std::variant<int64_t, uint64_t, double, bool, std::string, std::shared_ptr<GGUFArray>> v;
};
struct GGUFArray {
    GGUFValueType elem_type;
    std::vector<GGUFValue> items;  // for STRING arrays (vocab) as well; numeric arrays below
};

struct GGUFTensorInfo {
    std::string name;
    std::vector<int64_t> ne;   // ggml order: ne[0] is the fastest-varying (row length)
    GGMLType type;
    uint64_t offset;           // relative to data_offset
    uint64_t nbytes;
    const uint8_t* data;       // points into the mmap
    int64_t n_elements() const;
    int64_t n_rows() const;    // product of ne[1..]
    int64_t row_bytes() const; // bytes of one row of ne[0] elements
};

class GGUFFile {
public:
    // Throws GGUFError naming the file and the problem (truncated, bad magic, absurd count,
    // offset past the end, misaligned data...). Never allocates more than the file could hold.
    explicit GGUFFile(const std::string& path);
    ~GGUFFile();
    GGUFFile(const GGUFFile&) = delete;
    GGUFFile& operator=(const GGUFFile&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    size_t file_size() const { return size_; }
    const uint8_t* base() const { return base_; }

    const std::vector<std::pair<std::string, GGUFValue>>& metadata() const { return kv_; }
    const GGUFValue* find(const std::string& key) const;   // nullptr if absent
    // Typed getters; throw GGUFError naming the key if absent (and no default) or mistyped.
    int64_t get_int(const std::string& key) const;
    int64_t get_int(const std::string& key, int64_t dflt) const;
    double get_float(const std::string& key) const;
    double get_float(const std::string& key, double dflt) const;
    std::string get_string(const std::string& key) const;
    std::string get_string(const std::string& key, const std::string& dflt) const;

    const std::vector<GGUFTensorInfo>& tensors() const { return tensors_; }
    const GGUFTensorInfo* find_tensor(const std::string& name) const;  // nullptr if absent
    const GGUFTensorInfo& tensor(const std::string& name) const;       // throws GGUFError

private:
    void parse();    // header, metadata, tensor infos; throws GGUFError
    void release();  // unmap and close; safe to call twice

    std::string path_;
    int fd_ = -1;
    const uint8_t* base_ = nullptr;
    size_t size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GGUFValue>> kv_;
    std::map<std::string, size_t> kv_index_;
    std::vector<GGUFTensorInfo> tensors_;
    std::map<std::string, size_t> tensor_index_;
};

}  // namespace lg
