// GGUF reader: mmap, bounds-checked parse of header, metadata and tensor infos (format in gguf.h).
// Every count and length is checked against the bytes left in the file before anything is allocated.
// Knows nothing about architectures or quantization math; only block sizes.
#include "gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace lg {

namespace {

constexpr uint32_t kMagic = 0x46554747;          // "GGUF" read as a little-endian u32
constexpr uint32_t kMinVersion = 2;              // v1 used u32 counts; not supported
constexpr uint32_t kMaxVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxAlignment = 1u << 20;     // a power of two up to 1 MiB
constexpr uint64_t kMaxKeyLen = 65535;           // GGUF spec: keys are at most 65535 bytes
constexpr uint64_t kMaxTensorNameLen = 65535;
constexpr uint32_t kMaxDims = 4;                 // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;                // arrays of arrays: bounded recursion
// Smallest possible encodings, used to bound counts by the bytes left before reserving.
constexpr uint64_t kMinKVBytes = 8 + 4 + 1;      // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims=0, type, offset
// Parsed values cost ~50 bytes each in memory against 1 byte on disk, so the bytes left in the
// file alone do not bound memory. Real files: ~80 keys, ~1k tensors, ~800k array items
// (three 262k-entry vocab arrays); the limits leave wide headroom and cap memory near 250 MB.
constexpr uint64_t kMaxKV = 1 << 16;
constexpr uint64_t kMaxTensors = 1 << 18;
constexpr uint64_t kMaxArrayItems = 1 << 22;  // all arrays of a file together

const char* value_type_name(uint32_t t) {
    static const char* names[] = {"UINT8", "INT8",   "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                  "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64", "FLOAT64"};
    return t < sizeof(names) / sizeof(names[0]) ? names[t] : "UNKNOWN";
}

// On-disk size of a scalar value type; 0 for STRING/ARRAY (variable) or unknown types.
uint64_t scalar_size(uint32_t t) {
    switch (static_cast<GGUFValueType>(t)) {
        case GGUFValueType::UINT8: case GGUFValueType::INT8: case GGUFValueType::BOOL: return 1;
        case GGUFValueType::UINT16: case GGUFValueType::INT16: return 2;
        case GGUFValueType::UINT32: case GGUFValueType::INT32: case GGUFValueType::FLOAT32: return 4;
        case GGUFValueType::UINT64: case GGUFValueType::INT64: case GGUFValueType::FLOAT64: return 8;
        default: return 0;
    }
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GGUFValueType::FLOAT64); }

// Minimum on-disk bytes of one element of type t (for bounding array counts).
uint64_t min_elem_size(uint32_t t) {
    if (t == static_cast<uint32_t>(GGUFValueType::STRING)) return 8;
    if (t == static_cast<uint32_t>(GGUFValueType::ARRAY)) return 4 + 8;
    return scalar_size(t);
}

// Sequential little-endian reader over [p, end) that reports problems in terms of the file.
class Cursor {
public:
    Cursor(const std::string& path, const uint8_t* base, size_t size)
        : path_(path), base_(base), size_(size) {}

    size_t pos() const { return pos_; }
    uint64_t left() const { return size_ - pos_; }

    [[noreturn]] void fail(const std::string& what) const {
        throw GGUFError(path_ + ": " + what);
    }

    void need(uint64_t n, const char* what) const {
        if (n > left())
            fail("truncated file: need " + std::to_string(n) + " bytes for " + what + " at offset " +
                 std::to_string(pos_) + ", but the file has " + std::to_string(size_) + " bytes");
    }

    template <typename T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));  // unaligned-safe; host is little-endian
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(const char* what, uint64_t max_len) {
        uint64_t n = read<uint64_t>(what);
        if (n > max_len)
            fail(std::string(what) + " at offset " + std::to_string(pos_ - 8) + " has length " +
                 std::to_string(n) + " (limit " + std::to_string(max_len) + ")");
        need(n, what);
        std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
        pos_ += n;
        return s;
    }

private:
    const std::string& path_;
    const uint8_t* base_;
    size_t size_;
    size_t pos_ = 0;
};

// A key or name for an error message: printable ASCII kept, other bytes as \xNN, long names cut
// (a hostile file's names are arbitrary bytes; messages must stay valid UTF-8 and short).
constexpr size_t kMaxQuotedLen = 96;
std::string quoted(const std::string& s) {
    static const char hex[] = "0123456789abcdef";
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < kMaxQuotedLen; ++i) {
        auto ch = static_cast<unsigned char>(s[i]);
        if (ch >= 32 && ch < 127 && ch != '\\') {
            out += static_cast<char>(ch);
        } else {
            out += "\\x";
            out += hex[ch >> 4];
            out += hex[ch & 15];
        }
    }
    if (s.size() > kMaxQuotedLen) out += "...";
    return out + "'";
}

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE floats expected");

GGUFValue read_value(Cursor& c, uint32_t type, const std::string& key, int depth, uint64_t* items_left);

std::shared_ptr<GGUFArray> read_array(Cursor& c, const std::string& key, int depth, uint64_t* items_left) {
    if (depth >= kMaxArrayDepth)
        c.fail("key " + quoted(key) + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    uint32_t elem_type = c.read<uint32_t>("array element type");
    if (!known_value_type(elem_type))
        c.fail("key " + quoted(key) + ": unknown array element type " + std::to_string(elem_type));
    uint64_t count = c.read<uint64_t>("array length");
    uint64_t min_size = min_elem_size(elem_type);
    // Bound the count by what the rest of the file could hold before reserving anything.
    if (count > c.left() / min_size)
        c.fail("key " + quoted(key) + ": array of " + std::to_string(count) + " " +
               value_type_name(elem_type) + " elements does not fit in the " +
               std::to_string(c.left()) + " bytes left in the file");
    if (count > *items_left)
        c.fail("key " + quoted(key) + ": array of " + std::to_string(count) + " elements exceeds the " +
               std::to_string(kMaxArrayItems) + " array items a file may hold in total");
    *items_left -= count;
    auto arr = std::make_shared<GGUFArray>();
    arr->elem_type = static_cast<GGUFValueType>(elem_type);
    arr->items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) arr->items.push_back(read_value(c, elem_type, key, depth + 1, items_left));
    return arr;
}

GGUFValue read_value(Cursor& c, uint32_t type, const std::string& key, int depth, uint64_t* items_left) {
    GGUFValue out;
    out.type = static_cast<GGUFValueType>(type);
    switch (out.type) {
        case GGUFValueType::UINT8: out.v = uint64_t(c.read<uint8_t>("uint8 value")); break;
        case GGUFValueType::INT8: out.v = int64_t(c.read<int8_t>("int8 value")); break;
        case GGUFValueType::UINT16: out.v = uint64_t(c.read<uint16_t>("uint16 value")); break;
        case GGUFValueType::INT16: out.v = int64_t(c.read<int16_t>("int16 value")); break;
        case GGUFValueType::UINT32: out.v = uint64_t(c.read<uint32_t>("uint32 value")); break;
        case GGUFValueType::INT32: out.v = int64_t(c.read<int32_t>("int32 value")); break;
        case GGUFValueType::UINT64: out.v = c.read<uint64_t>("uint64 value"); break;
        case GGUFValueType::INT64: out.v = c.read<int64_t>("int64 value"); break;
        case GGUFValueType::FLOAT32: out.v = double(c.read<float>("float32 value")); break;
        case GGUFValueType::FLOAT64: out.v = c.read<double>("float64 value"); break;
        case GGUFValueType::BOOL: out.v = c.read<uint8_t>("bool value") != 0; break;
        case GGUFValueType::STRING:
            // A string value can be as long as the file; read_string bounds it by the bytes left.
            out.v = c.read_string("string value", std::numeric_limits<uint64_t>::max());
            break;
        case GGUFValueType::ARRAY: out.v = read_array(c, key, depth, items_left); break;
        default:
            c.fail("key " + quoted(key) + ": unknown value type " + std::to_string(type));
    }
    return out;
}

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

// --- types -------------------------------------------------------------------------------

const char* ggml_type_name(GGMLType t) {
    switch (t) {
        case GGMLType::F32: return "F32";
        case GGMLType::F16: return "F16";
        case GGMLType::Q4_0: return "Q4_0";
        case GGMLType::Q4_1: return "Q4_1";
        case GGMLType::Q5_0: return "Q5_0";
        case GGMLType::Q5_1: return "Q5_1";
        case GGMLType::Q8_0: return "Q8_0";
        case GGMLType::Q8_1: return "Q8_1";
        case GGMLType::Q2_K: return "Q2_K";
        case GGMLType::Q3_K: return "Q3_K";
        case GGMLType::Q4_K: return "Q4_K";
        case GGMLType::Q5_K: return "Q5_K";
        case GGMLType::Q6_K: return "Q6_K";
        case GGMLType::Q8_K: return "Q8_K";
        case GGMLType::IQ2_XXS: return "IQ2_XXS";
        case GGMLType::IQ2_XS: return "IQ2_XS";
        case GGMLType::IQ3_XXS: return "IQ3_XXS";
        case GGMLType::IQ1_S: return "IQ1_S";
        case GGMLType::IQ4_NL: return "IQ4_NL";
        case GGMLType::IQ3_S: return "IQ3_S";
        case GGMLType::IQ2_S: return "IQ2_S";
        case GGMLType::IQ4_XS: return "IQ4_XS";
        case GGMLType::I8: return "I8";
        case GGMLType::I16: return "I16";
        case GGMLType::I32: return "I32";
        case GGMLType::I64: return "I64";
        case GGMLType::F64: return "F64";
        case GGMLType::IQ1_M: return "IQ1_M";
        case GGMLType::BF16: return "BF16";
        case GGMLType::TQ1_0: return "TQ1_0";
        case GGMLType::TQ2_0: return "TQ2_0";
        case GGMLType::MXFP4: return "MXFP4";
    }
    return "UNKNOWN";
}

// Block geometry as in ggml-common.h (QK_K = 256 super-blocks for the K and most IQ types).
TypeTraits ggml_type_traits(GGMLType t) {
    switch (t) {
        case GGMLType::F32: return {1, 4};
        case GGMLType::F16: return {1, 2};
        case GGMLType::BF16: return {1, 2};
        case GGMLType::F64: return {1, 8};
        case GGMLType::I8: return {1, 1};
        case GGMLType::I16: return {1, 2};
        case GGMLType::I32: return {1, 4};
        case GGMLType::I64: return {1, 8};
        case GGMLType::Q4_0: return {32, 18};   // f16 d + 16 nibble bytes
        case GGMLType::Q4_1: return {32, 20};   // f16 d, m + 16
        case GGMLType::Q5_0: return {32, 22};   // f16 d + u32 qh + 16
        case GGMLType::Q5_1: return {32, 24};   // f16 d, m + u32 qh + 16
        case GGMLType::Q8_0: return {32, 34};   // f16 d + 32
        case GGMLType::Q8_1: return {32, 36};   // f16 d, s + 32
        case GGMLType::Q2_K: return {256, 84};
        case GGMLType::Q3_K: return {256, 110};
        case GGMLType::Q4_K: return {256, 144};  // f16 d, dmin + 12 scales + 128
        case GGMLType::Q5_K: return {256, 176};
        case GGMLType::Q6_K: return {256, 210};  // 128 ql + 64 qh + 16 scales + f16 d
        case GGMLType::Q8_K: return {256, 292};  // f32 d + 256 + 16 x i16 bsums
        case GGMLType::IQ2_XXS: return {256, 66};
        case GGMLType::IQ2_XS: return {256, 74};
        case GGMLType::IQ3_XXS: return {256, 98};
        case GGMLType::IQ1_S: return {256, 50};
        case GGMLType::IQ4_NL: return {32, 18};
        case GGMLType::IQ3_S: return {256, 110};
        case GGMLType::IQ2_S: return {256, 82};
        case GGMLType::IQ4_XS: return {256, 136};
        case GGMLType::IQ1_M: return {256, 56};
        case GGMLType::TQ1_0: return {256, 54};
        case GGMLType::TQ2_0: return {256, 66};
        case GGMLType::MXFP4: return {32, 17};
    }
    return {0, 0};
}

// --- tensor info -------------------------------------------------------------------------

int64_t GGUFTensorInfo::n_elements() const {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;  // overflow ruled out at load
    return n;
}

int64_t GGUFTensorInfo::n_rows() const {
    int64_t n = 1;
    for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
    return n;
}

int64_t GGUFTensorInfo::row_bytes() const {
    TypeTraits tt = ggml_type_traits(type);
    int64_t row = ne.empty() ? 1 : ne[0];
    return row / tt.block_elems * tt.block_bytes;
}

// --- file --------------------------------------------------------------------------------

GGUFFile::GGUFFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw GGUFError(path + ": cannot open: " + std::strerror(errno));
    try {
        struct stat st;
        if (::fstat(fd_, &st) != 0) throw GGUFError(path + ": cannot stat: " + std::strerror(errno));
        if (!S_ISREG(st.st_mode)) throw GGUFError(path + ": not a regular file");
        size_ = static_cast<size_t>(st.st_size);
        if (size_ < 4 + 4 + 8 + 8)
            throw GGUFError(path + ": truncated file: " + std::to_string(size_) +
                            " bytes is shorter than the 24-byte GGUF header");
        void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
        if (m == MAP_FAILED) throw GGUFError(path + ": mmap failed: " + std::strerror(errno));
        base_ = static_cast<const uint8_t*>(m);
        parse();
    } catch (...) {
        release();
        throw;
    }
}

GGUFFile::~GGUFFile() { release(); }

void GGUFFile::release() {
    if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
    base_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

// The fixed header: magic, version, counts (checked against the limits and the bytes left).
static void read_header(Cursor& c, const uint8_t* base, uint32_t* version, uint64_t* n_tensors, uint64_t* n_kv) {
    uint32_t magic = c.read<uint32_t>("magic");
    if (magic != kMagic) {
        char shown[5] = {0};
        std::memcpy(shown, base, 4);
        for (char& ch : shown)
            if (ch && (ch < 32 || ch > 126)) ch = '?';
        c.fail(std::string("not a GGUF file: bad magic '") + shown + "' (expected 'GGUF')");
    }
    *version = c.read<uint32_t>("version");
    if (*version < kMinVersion || *version > kMaxVersion) {
        std::string hint = (*version & 0xFFFF) == 0 ? " (big-endian file?)" : "";
        c.fail("unsupported GGUF version " + std::to_string(*version) + hint + "; supported: " +
               std::to_string(kMinVersion) + ".." + std::to_string(kMaxVersion));
    }
    *n_tensors = c.read<uint64_t>("tensor count");
    *n_kv = c.read<uint64_t>("metadata count");
    if (*n_kv > c.left() / kMinKVBytes)
        c.fail("metadata count " + std::to_string(*n_kv) + " cannot fit in the " +
               std::to_string(c.left()) + " bytes left in the file");
    if (*n_kv > kMaxKV) c.fail("metadata count " + std::to_string(*n_kv) + " exceeds the limit " + std::to_string(kMaxKV));
    if (*n_tensors > kMaxTensors)
        c.fail("tensor count " + std::to_string(*n_tensors) + " exceeds the limit " + std::to_string(kMaxTensors));
    if (*n_tensors > c.left() / kMinTensorInfoBytes)
        c.fail("tensor count " + std::to_string(*n_tensors) + " cannot fit in the " +
               std::to_string(c.left()) + " bytes left in the file");
}

// One tensor info: name, dimensions, type, offset (data pointer set later).
static GGUFTensorInfo read_tensor_info(Cursor& c, uint64_t alignment) {
    GGUFTensorInfo ti;
    ti.name = c.read_string("tensor name", kMaxTensorNameLen);
    const std::string where = "tensor " + quoted(ti.name);
    uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims > kMaxDims)
        c.fail(where + ": " + std::to_string(n_dims) + " dimensions (limit " +
               std::to_string(kMaxDims) + ")");
    ti.ne.resize(n_dims);
    int64_t n_el = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
        uint64_t ne = c.read<uint64_t>("tensor dimension");
        if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            mul_overflows(n_el, static_cast<int64_t>(ne), &n_el))
            c.fail(where + ": dimension " + std::to_string(d) + " = " + std::to_string(ne) +
                   " overflows the element count");
        ti.ne[d] = static_cast<int64_t>(ne);
    }
    uint32_t type = c.read<uint32_t>("tensor type");
    ti.type = static_cast<GGMLType>(type);
    TypeTraits tt = ggml_type_traits(ti.type);
    if (tt.block_elems == 0)
        c.fail(where + ": unknown ggml type " + std::to_string(type));
    int64_t row = n_dims ? ti.ne[0] : 1;
    if (row % tt.block_elems != 0)
        c.fail(where + ": row length " + std::to_string(row) + " is not a multiple of the " +
               ggml_type_name(ti.type) + " block size " + std::to_string(tt.block_elems));
    int64_t nbytes;
    if (mul_overflows(n_el / tt.block_elems, tt.block_bytes, &nbytes))
        c.fail(where + ": byte size overflows");
    ti.nbytes = static_cast<uint64_t>(nbytes);
    ti.offset = c.read<uint64_t>("tensor data offset");
    if (ti.offset % alignment != 0)
        c.fail(where + ": data offset " + std::to_string(ti.offset) +
               " is not a multiple of the alignment " + std::to_string(alignment));
    ti.data = nullptr;
    return ti;
}

// No two tensors may share bytes.
static void check_no_overlap(Cursor& c, const std::vector<GGUFTensorInfo>& tensors) {
    std::vector<const GGUFTensorInfo*> by_offset;
    by_offset.reserve(tensors.size());
    for (const GGUFTensorInfo& ti : tensors) by_offset.push_back(&ti);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GGUFTensorInfo* a, const GGUFTensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const GGUFTensorInfo* a = by_offset[i - 1];
        const GGUFTensorInfo* b = by_offset[i];
        if (a->nbytes > 0 && b->nbytes > 0 && a->offset + a->nbytes > b->offset)
            c.fail("tensors " + quoted(a->name) + " and " + quoted(b->name) + " overlap (offsets " +
                   std::to_string(a->offset) + "+" + std::to_string(a->nbytes) + " and " +
                   std::to_string(b->offset) + ")");
    }
}

void GGUFFile::parse() {
    Cursor c(path_, base_, size_);
    uint64_t n_tensors = 0, n_kv = 0;
    read_header(c, base_, &version_, &n_tensors, &n_kv);

    // Metadata.
    kv_.reserve(n_kv);
    uint64_t items_left = kMaxArrayItems;
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.read_string("metadata key", kMaxKeyLen);
        uint32_t type = c.read<uint32_t>("metadata value type");
        if (!known_value_type(type))
            c.fail("key " + quoted(key) + ": unknown value type " + std::to_string(type));
        GGUFValue v = read_value(c, type, key, 0, &items_left);
        if (kv_index_.count(key)) c.fail("duplicate metadata key " + quoted(key));
        kv_index_.emplace(key, kv_.size());
        kv_.emplace_back(std::move(key), std::move(v));
    }

    if (const GGUFValue* a = find("general.alignment")) {
        if (a->type != GGUFValueType::UINT32)
            c.fail(std::string("key 'general.alignment' must be UINT32, not ") +
                   value_type_name(static_cast<uint32_t>(a->type)));
        uint64_t al = std::get<uint64_t>(a->v);
        if (al == 0 || (al & (al - 1)) != 0 || al > kMaxAlignment)
            c.fail("key 'general.alignment' = " + std::to_string(al) +
                   " is not a power of two in 1.." + std::to_string(kMaxAlignment));
        alignment_ = al;
    } else {
        alignment_ = kDefaultAlignment;
    }

    tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GGUFTensorInfo ti = read_tensor_info(c, alignment_);
        if (tensor_index_.count(ti.name)) c.fail("duplicate tensor " + quoted(ti.name));
        tensor_index_.emplace(ti.name, tensors_.size());
        tensors_.push_back(std::move(ti));
    }

    // Tensor data starts at the next multiple of the alignment.
    uint64_t end_of_infos = c.pos();
    data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
    if (!tensors_.empty() && data_offset_ > size_)
        c.fail("tensor data would start at offset " + std::to_string(data_offset_) +
               ", past the end of the " + std::to_string(size_) + "-byte file (truncated?)");
    const uint64_t data_size = data_offset_ <= size_ ? size_ - data_offset_ : 0;

    for (GGUFTensorInfo& ti : tensors_) {
        if (ti.offset > data_size || ti.nbytes > data_size - ti.offset)
            c.fail("tensor " + quoted(ti.name) + ": data [" + std::to_string(ti.offset) + ", +" +
                   std::to_string(ti.nbytes) + ") runs past the end of the data section (" +
                   std::to_string(data_size) + " bytes; file truncated?)");
        ti.data = base_ + data_offset_ + ti.offset;
    }
    check_no_overlap(c, tensors_);
}

// --- lookups -----------------------------------------------------------------------------

const GGUFValue* GGUFFile::find(const std::string& key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

namespace {

[[noreturn]] void mistyped(const std::string& path, const std::string& key, const char* want,
                           const GGUFValue& v) {
    throw GGUFError(path + ": key " + quoted(key) + " is " +
                    value_type_name(static_cast<uint32_t>(v.type)) + ", expected " + want);
}

}  // namespace

int64_t GGUFFile::get_int(const std::string& key) const {
    const GGUFValue* v = find(key);
    if (!v) throw GGUFError(path_ + ": missing metadata key " + quoted(key));
    if (auto p = std::get_if<int64_t>(&v->v)) return *p;
    if (auto p = std::get_if<uint64_t>(&v->v)) {
        if (*p > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw GGUFError(path_ + ": key " + quoted(key) + " = " + std::to_string(*p) + " exceeds int64");
        return static_cast<int64_t>(*p);
    }
    mistyped(path_, key, "an integer", *v);
}

int64_t GGUFFile::get_int(const std::string& key, int64_t dflt) const {
    return find(key) ? get_int(key) : dflt;
}

double GGUFFile::get_float(const std::string& key) const {
    const GGUFValue* v = find(key);
    if (!v) throw GGUFError(path_ + ": missing metadata key " + quoted(key));
    if (auto p = std::get_if<double>(&v->v)) return *p;
    if (auto p = std::get_if<int64_t>(&v->v)) return static_cast<double>(*p);
    if (auto p = std::get_if<uint64_t>(&v->v)) return static_cast<double>(*p);
    mistyped(path_, key, "a number", *v);
}

double GGUFFile::get_float(const std::string& key, double dflt) const {
    return find(key) ? get_float(key) : dflt;
}

std::string GGUFFile::get_string(const std::string& key) const {
    const GGUFValue* v = find(key);
    if (!v) throw GGUFError(path_ + ": missing metadata key " + quoted(key));
    if (auto p = std::get_if<std::string>(&v->v)) return *p;
    mistyped(path_, key, "STRING", *v);
}

std::string GGUFFile::get_string(const std::string& key, const std::string& dflt) const {
    return find(key) ? get_string(key) : dflt;
}

const GGUFTensorInfo* GGUFFile::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GGUFTensorInfo& GGUFFile::tensor(const std::string& name) const {
    const GGUFTensorInfo* t = find_tensor(name);
    if (!t) throw GGUFError(path_ + ": no tensor named " + quoted(name));
    return *t;
}

}  // namespace lg
