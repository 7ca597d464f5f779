// hookhost/dlpack.h: views to DLTensors and back without a copy, every dtype and layout hookhost
// can express, and a refusal (with the output untouched) for everything it cannot.
#include <gtest/gtest.h>

#include <hookhost/dlpack.h>
#include <cstdint>
#include <cstring>
#include <hookhost/host/tensor.hpp>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

// A fixed byte pattern in every byte (padding included), so a refused call can be shown to have
// written nothing, and an accepted one to have written every field that is checked.
constexpr unsigned char kPoison = 0xA5;

template <typename T>
void poison(T& value) {
  std::memset(&value, kPoison, sizeof value);
}

template <typename T>
bool still_poisoned(const T& value) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
  for (size_t i = 0; i < sizeof value; ++i)
    if (bytes[i] != kPoison) return false;
  return true;
}

hh_tensor cpu_view(hh_dtype dtype, const void* data, size_t byte_size, const int64_t* shape,
                   uint32_t rank, const int64_t* strides = nullptr) {
  hh_tensor v;
  hh_tensor_init(&v);
  v.name = "x";
  v.dtype = dtype;
  v.data = data;
  v.byte_size = byte_size;
  v.shape = shape;
  v.rank = rank;
  v.strides = strides;
  return v;
}

DLTensor cpu_dltensor(DLDataType type, void* data, int64_t* shape, int ndim,
                      int64_t* strides = nullptr) {
  DLTensor t{};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype = type;
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

DLDataType dl_type(uint8_t code, uint8_t bits, uint16_t lanes = 1) {
  DLDataType type;
  type.code = code;
  type.bits = bits;
  type.lanes = lanes;
  return type;
}

std::vector<double> elements(const hh_tensor& v) {
  std::vector<double> out;
  for (size_t i = 0; i < hh_tensor_element_count(&v); ++i)
    out.push_back(hh_tensor_get_double(&v, i));
  return out;
}

// ---- Dtypes ------------------------------------------------------------------------------------

struct DtypeCase {
  hh_dtype dtype;
  uint8_t code;
  uint8_t bits;
};

void PrintTo(const DtypeCase& c, std::ostream* os) {
  *os << hh_dtype_name(c.dtype);
}

class DlpackDtype : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(DlpackDtype, MapsBothWaysWithExactCodeAndBits) {
  const DtypeCase c = GetParam();
  alignas(8) unsigned char bytes[4 * 8] = {};
  int64_t shape[1] = {4};
  const hh_tensor view = cpu_view(c.dtype, bytes, 4 * hh_dtype_size(c.dtype), shape, 1);
  ASSERT_EQ(check_view(view), "");

  DLTensor dl{};
  ASSERT_EQ(hh_tensor_to_dlpack(&view, &dl), 1);
  EXPECT_EQ(dl.dtype.code, c.code);
  EXPECT_EQ(dl.dtype.bits, c.bits);
  EXPECT_EQ(dl.dtype.lanes, 1);
  EXPECT_EQ(hh_dtype_size(c.dtype) * 8, c.bits);  // DLPack's bits agree with hookhost's size

  hh_tensor back;
  poison(back);
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "x", &back), 1);
  EXPECT_EQ(back.dtype, c.dtype);
  EXPECT_EQ(back.data, view.data);
  EXPECT_EQ(back.byte_size, view.byte_size);
  EXPECT_EQ(check_view(back), "");
}

INSTANTIATE_TEST_SUITE_P(
    EveryNumericDtype, DlpackDtype,
    ::testing::Values(DtypeCase{HH_DTYPE_F16, kDLFloat, 16}, DtypeCase{HH_DTYPE_F32, kDLFloat, 32},
                      DtypeCase{HH_DTYPE_F64, kDLFloat, 64},
                      DtypeCase{HH_DTYPE_BF16, kDLBfloat, 16}, DtypeCase{HH_DTYPE_I8, kDLInt, 8},
                      DtypeCase{HH_DTYPE_I16, kDLInt, 16}, DtypeCase{HH_DTYPE_I32, kDLInt, 32},
                      DtypeCase{HH_DTYPE_I64, kDLInt, 64}, DtypeCase{HH_DTYPE_U8, kDLUInt, 8}),
    [](const auto& info) { return std::string(hh_dtype_name(info.param.dtype)); });

// DLPack's kDLBool is code 6 (from 0.8 on); spelled as a number so the test compiles with 0.6.
constexpr uint8_t kBoolCode = 6;

TEST(DlpackBool, FollowsTheDlpackVersion) {
#if defined(DLPACK_VERSION) && DLPACK_VERSION < 80
  static_assert(HH_DLPACK_HAS_BOOL == 0, "DLPack before 0.8 has no kDLBool");
#else
  static_assert(HH_DLPACK_HAS_BOOL == 1, "DLPack 0.8 and later have kDLBool");
#endif
  uint8_t bools[3] = {1, 0, 1};
  int64_t shape[1] = {3};
  const hh_tensor view = cpu_view(HH_DTYPE_BOOL, bools, sizeof bools, shape, 1);
  DLTensor dl{};
  ASSERT_EQ(hh_tensor_to_dlpack(&view, &dl), 1);
  EXPECT_EQ(dl.dtype.bits, 8);
  EXPECT_EQ(dl.dtype.lanes, 1);
  hh_tensor back;
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "b", &back), 1);
  EXPECT_EQ(elements(back), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(check_view(back), "");

  DLTensor framework_bool = cpu_dltensor(dl_type(kBoolCode, 8), bools, shape, 1);
  hh_tensor from_bool;
  poison(from_bool);
#if HH_DLPACK_HAS_BOOL
  EXPECT_EQ(dl.dtype.code, kBoolCode);
  EXPECT_EQ(back.dtype, HH_DTYPE_BOOL);
  ASSERT_EQ(hh_tensor_from_dlpack(&framework_bool, "b", &from_bool), 1);
  EXPECT_EQ(from_bool.dtype, HH_DTYPE_BOOL);
  EXPECT_EQ(check_view(from_bool), "");
#else
  EXPECT_EQ(dl.dtype.code, kDLUInt);  // same bytes, but the round trip gives U8
  EXPECT_EQ(back.dtype, HH_DTYPE_U8);
  EXPECT_EQ(hh_tensor_from_dlpack(&framework_bool, "b", &from_bool), 0);  // unknown code here
  EXPECT_TRUE(still_poisoned(from_bool));
#endif
}

// ---- Layouts -----------------------------------------------------------------------------------

TEST(DlpackLayout, Contiguous2x3F32RoundTripIsZeroCopy) {
  const float values[6] = {1.5f, -2, 3, 4, 5.25f, 6};
  const int64_t shape[2] = {2, 3};
  const hh_tensor view = cpu_view(HH_DTYPE_F32, values, sizeof values, shape, 2);
  ASSERT_EQ(check_view(view), "");

  DLTensor dl;
  poison(dl);
  ASSERT_EQ(hh_tensor_to_dlpack(&view, &dl), 1);
  EXPECT_EQ(dl.data, static_cast<const void*>(values));
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.ndim, 2);
  ASSERT_EQ(dl.shape, shape);  // the view's own array, not a copy
  EXPECT_EQ(dl.shape[0], 2);
  EXPECT_EQ(dl.shape[1], 3);
  ASSERT_EQ(dl.strides, nullptr);
  ASSERT_EQ(dl.byte_offset, 0u);

  hh_tensor back;
  poison(back);
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "y", &back), 1);
  EXPECT_EQ(back.struct_size, HH_TENSOR_SIZE);
  EXPECT_STREQ(back.name, "y");
  EXPECT_EQ(back.dtype, HH_DTYPE_F32);
  EXPECT_EQ(back.data, static_cast<const void*>(values));
  EXPECT_EQ(back.rank, 2u);
  EXPECT_EQ(back.shape, shape);
  EXPECT_EQ(back.strides, nullptr);
  EXPECT_EQ(back.byte_size, sizeof values);
  EXPECT_EQ(back.device.type, HH_DEVICE_CPU);
  EXPECT_EQ(back.device.id, 0);
  EXPECT_EQ(elements(back), elements(view));
  EXPECT_EQ(elements(back), (std::vector<double>{1.5, -2, 3, 4, 5.25, 6}));
  EXPECT_EQ(check_view(back), "");
}

TEST(DlpackLayout, TransposedViewKeepsItsStridesBothWays) {
  const int32_t values[6] = {1, 2, 3, 4, 5, 6};  // 2x3, row-major
  const int64_t shape[2] = {3, 2};               // seen transposed
  const int64_t strides[2] = {1, 3};
  const hh_tensor view = cpu_view(HH_DTYPE_I32, values, sizeof values, shape, 2, strides);
  ASSERT_EQ(check_view(view), "");

  DLTensor dl{};
  ASSERT_EQ(hh_tensor_to_dlpack(&view, &dl), 1);
  ASSERT_EQ(dl.strides, strides);
  EXPECT_EQ(dl.strides[0], 1);
  EXPECT_EQ(dl.strides[1], 3);

  hh_tensor back;
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "t", &back), 1);
  ASSERT_NE(back.strides, nullptr);
  EXPECT_EQ(back.strides[0], 1);
  EXPECT_EQ(back.strides[1], 3);
  EXPECT_EQ(back.byte_size, sizeof values);  // (1 + 2*1 + 1*3) elements
  EXPECT_EQ(elements(back), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(check_view(back), "");
}

TEST(DlpackLayout, StridedByteSizeIsExactlyWhatTheStridesReach) {
  // Column 1 of a 3x4 f64 matrix: 3 elements, 4 apart, starting at element 1.
  double matrix[12];
  for (int i = 0; i < 12; ++i) matrix[i] = i;
  int64_t shape[1] = {3};
  int64_t strides[1] = {4};
  DLTensor dl = cpu_dltensor(dl_type(kDLFloat, 64), matrix, shape, 1, strides);
  dl.byte_offset = sizeof(double);
  hh_tensor v;
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "column", &v), 1);
  EXPECT_EQ(v.byte_size, (1 + 2 * 4) * sizeof(double));
  EXPECT_EQ(elements(v), (std::vector<double>{1, 5, 9}));
  EXPECT_EQ(check_view(v), "");
  hh_tensor too_small = v;
  --too_small.byte_size;  // so the host would notice one byte less
  EXPECT_NE(check_view(too_small), "");
}

TEST(DlpackLayout, ByteOffsetIsFoldedIntoData) {
  const int16_t values[5] = {10, 20, 30, 40, 50};
  int64_t shape[1] = {3};
  DLTensor dl = cpu_dltensor(dl_type(kDLInt, 16), const_cast<int16_t*>(values), shape, 1);
  dl.byte_offset = 2 * sizeof(int16_t);
  hh_tensor v;
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "tail", &v), 1);
  EXPECT_EQ(v.data, static_cast<const void*>(values + 2));
  EXPECT_EQ(v.byte_size, 3 * sizeof(int16_t));
  EXPECT_EQ(elements(v), (std::vector<double>{30, 40, 50}));
  EXPECT_EQ(check_view(v), "");

  DLTensor again;
  poison(again);
  ASSERT_EQ(hh_tensor_to_dlpack(&v, &again), 1);
  EXPECT_EQ(again.data, static_cast<const void*>(values + 2));
  EXPECT_EQ(again.byte_offset, 0u);
}

TEST(DlpackLayout, DeviceTypeAndIdSurviveBothWays) {
  // Never dereferenced: an accelerator address is opaque on the host.
  void* fake_device_pointer = reinterpret_cast<void*>(uintptr_t{0x7f0000001000});
  int64_t shape[2] = {2, 3};
  for (int32_t type : {HH_DEVICE_CUDA, HH_DEVICE_CUDA_HOST, HH_DEVICE_ROCM}) {
    SCOPED_TRACE(type);
    hh_tensor view = cpu_view(HH_DTYPE_F32, fake_device_pointer, 24, shape, 2);
    view.device = {type, 1};
    ASSERT_EQ(check_view(view), "");
    DLTensor dl{};
    ASSERT_EQ(hh_tensor_to_dlpack(&view, &dl), 1);
    EXPECT_EQ(static_cast<int32_t>(dl.device.device_type), type);
    EXPECT_EQ(dl.device.device_id, 1);
    EXPECT_EQ(dl.data, fake_device_pointer);
    hh_tensor back;
    ASSERT_EQ(hh_tensor_from_dlpack(&dl, "gpu", &back), 1);
    EXPECT_EQ(back.device.type, type);
    EXPECT_EQ(back.device.id, 1);
    EXPECT_EQ(back.data, fake_device_pointer);
    EXPECT_EQ(check_view(back), "");
  }
  static_assert(HH_DEVICE_CUDA == kDLCUDA && HH_DEVICE_CUDA_HOST == kDLCUDAHost &&
                HH_DEVICE_ROCM == kDLROCM && HH_DEVICE_CPU == kDLCPU);
}

TEST(DlpackLayout, ScalarsHaveRankZero) {
  const double value = -7.5;
  const hh_tensor view = cpu_view(HH_DTYPE_F64, &value, sizeof value, nullptr, 0);
  ASSERT_EQ(check_view(view), "");
  DLTensor dl{};
  ASSERT_EQ(hh_tensor_to_dlpack(&view, &dl), 1);
  EXPECT_EQ(dl.ndim, 0);
  EXPECT_EQ(dl.shape, nullptr);
  hh_tensor back;
  ASSERT_EQ(hh_tensor_from_dlpack(&dl, "s", &back), 1);
  EXPECT_EQ(back.rank, 0u);
  EXPECT_EQ(back.byte_size, sizeof value);
  EXPECT_EQ(hh_tensor_get_double(&back, 0), -7.5);
  EXPECT_EQ(check_view(back), "");

  // Frameworks may pass (unused) arrays for a scalar, strides included.
  int64_t unused[1] = {99};
  DLTensor framework_scalar =
      cpu_dltensor(dl_type(kDLFloat, 64), const_cast<double*>(&value), unused, 0, unused);
  hh_tensor s;
  ASSERT_EQ(hh_tensor_from_dlpack(&framework_scalar, "s", &s), 1);
  EXPECT_EQ(s.rank, 0u);
  EXPECT_EQ(s.byte_size, sizeof value);
  EXPECT_EQ(hh_tensor_get_double(&s, 0), -7.5);
  EXPECT_EQ(check_view(s), "");
}

TEST(DlpackLayout, ZeroExtentTensorsHaveNoBytes) {
  int64_t shape[2] = {0, 3};
  DLTensor contiguous = cpu_dltensor(dl_type(kDLFloat, 32), nullptr, shape, 2);
  hh_tensor v;
  poison(v);
  ASSERT_EQ(hh_tensor_from_dlpack(&contiguous, "empty", &v), 1);
  EXPECT_EQ(v.byte_size, 0u);
  EXPECT_EQ(v.data, nullptr);
  EXPECT_EQ(hh_tensor_element_count(&v), 0u);
  EXPECT_EQ(check_view(v), "");
  DLTensor dl{};
  ASSERT_EQ(hh_tensor_to_dlpack(&v, &dl), 1);
  EXPECT_EQ(dl.shape[0], 0);

  // Strided, with the empty dimension last and a large stride before it: still nothing to read.
  float one = 1;
  int64_t strided_shape[2] = {4, 0};
  int64_t strides[2] = {1000, 1};
  DLTensor strided = cpu_dltensor(dl_type(kDLFloat, 32), &one, strided_shape, 2, strides);
  hh_tensor s;
  ASSERT_EQ(hh_tensor_from_dlpack(&strided, "empty", &s), 1);
  EXPECT_EQ(s.byte_size, 0u);
  EXPECT_EQ(check_view(s), "");
}

// ---- Refusals ----------------------------------------------------------------------------------

TEST(DlpackRefusal, ToDlpackLeavesOutUntouched) {
  const float values[2] = {1, 2};
  const int64_t shape[HH_MAX_RANK + 1] = {2, 1, 1, 1, 1, 1, 1, 1, 1};
  const hh_tensor good = cpu_view(HH_DTYPE_F32, values, sizeof values, shape, 1);
  ASSERT_EQ(check_view(good), "");
  const hh_str strings[2] = {{"a", 1}, {"b", 1}};

  struct Case {
    const char* what;
    hh_tensor view;
  };
  std::vector<Case> cases;
  hh_tensor v = good;
  v.dtype = HH_DTYPE_STRING;
  v.data = strings;
  v.byte_size = sizeof strings;
  cases.push_back({"string dtype", v});
  v = good;
  v.dtype = 0;
  cases.push_back({"dtype 0", v});
  v = good;
  v.dtype = 99;
  cases.push_back({"dtype 99", v});
  v = good;
  v.rank = HH_MAX_RANK + 1;
  cases.push_back({"rank above HH_MAX_RANK", v});
  v = good;
  v.struct_size = HH_TENSOR_SIZE_1_0 - 1;
  cases.push_back({"struct_size too small", v});
  v = good;
  v.struct_size = 0;
  cases.push_back({"struct_size 0", v});
  v = good;
  v.shape = nullptr;
  cases.push_back({"NULL shape", v});

  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    DLTensor out;
    poison(out);
    EXPECT_EQ(hh_tensor_to_dlpack(&c.view, &out), 0);
    EXPECT_TRUE(still_poisoned(out));
  }
  DLTensor out;
  poison(out);
  EXPECT_EQ(hh_tensor_to_dlpack(nullptr, &out), 0);
  EXPECT_TRUE(still_poisoned(out));
  EXPECT_EQ(hh_tensor_to_dlpack(&good, nullptr), 0);
  // The same view is accepted once nothing is wrong with it, so each case above failed for its
  // own reason.
  EXPECT_EQ(hh_tensor_to_dlpack(&good, &out), 1);
}

float g_floats[6] = {1, 2, 3, 4, 5, 6};
int64_t g_shape[2] = {2, 3};
int64_t g_negative_extent[2] = {2, -3};
int64_t g_negative_strides[2] = {3, -1};
int64_t g_single_column[2] = {2, 1};  // a negative stride here reaches no further element
int64_t g_count_overflow[2] = {int64_t{1} << 40, int64_t{1} << 40};
int64_t g_bytes_overflow[1] = {int64_t{1} << 62};  // fits as a count, not as f32 bytes
int64_t g_reach_shape[2] = {2, 3};
int64_t g_reach_strides[2] = {int64_t{1} << 62, 1};  // the strided extent overflows
int64_t g_empty[2] = {0, 3};
int64_t g_rank_nine[HH_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
const std::string g_long_name(HH_MAX_NAME_LENGTH + 1, 'n');
const std::string g_longest_name(HH_MAX_NAME_LENGTH, 'n');

DLTensor good_dltensor() {
  return cpu_dltensor(dl_type(kDLFloat, 32), g_floats, g_shape, 2);
}

struct FromCase {
  const char* what;
  void (*spoil)(DLTensor&, const char*& name);
};

void PrintTo(const FromCase& c, std::ostream* os) {
  *os << c.what;
}

class DlpackFromRefusal : public ::testing::TestWithParam<FromCase> {};

TEST_P(DlpackFromRefusal, ReturnsZeroAndLeavesOutUntouched) {
  DLTensor t = good_dltensor();
  const char* name = "x";
  {
    hh_tensor accepted;
    ASSERT_EQ(hh_tensor_from_dlpack(&t, name, &accepted), 1);  // the unspoilt tensor converts
  }
  GetParam().spoil(t, name);
  hh_tensor out;
  poison(out);
  EXPECT_EQ(hh_tensor_from_dlpack(&t, name, &out), 0);
  EXPECT_TRUE(still_poisoned(out));
}

using Name = const char*&;
INSTANTIATE_TEST_SUITE_P(
    Everything, DlpackFromRefusal,
    ::testing::Values(
        FromCase{"lanes 4", [](DLTensor& t, Name) { t.dtype.lanes = 4; }},
        FromCase{"lanes 0", [](DLTensor& t, Name) { t.dtype.lanes = 0; }},
        FromCase{"complex64", [](DLTensor& t, Name) { t.dtype = dl_type(kDLComplex, 64); }},
        FromCase{"complex128", [](DLTensor& t, Name) { t.dtype = dl_type(kDLComplex, 128); }},
        FromCase{"opaque handle", [](DLTensor& t, Name) { t.dtype = dl_type(kDLOpaqueHandle, 64); }},
        FromCase{"float8", [](DLTensor& t, Name) { t.dtype = dl_type(kDLFloat, 8); }},
        FromCase{"float128", [](DLTensor& t, Name) { t.dtype = dl_type(kDLFloat, 128); }},
        FromCase{"bfloat32", [](DLTensor& t, Name) { t.dtype = dl_type(kDLBfloat, 32); }},
        FromCase{"uint16", [](DLTensor& t, Name) { t.dtype = dl_type(kDLUInt, 16); }},
        FromCase{"uint32", [](DLTensor& t, Name) { t.dtype = dl_type(kDLUInt, 32); }},
        FromCase{"uint64", [](DLTensor& t, Name) { t.dtype = dl_type(kDLUInt, 64); }},
        FromCase{"uint1", [](DLTensor& t, Name) { t.dtype = dl_type(kDLUInt, 1); }},
        FromCase{"int4", [](DLTensor& t, Name) { t.dtype = dl_type(kDLInt, 4); }},
        FromCase{"int128", [](DLTensor& t, Name) { t.dtype = dl_type(kDLInt, 128); }},
        FromCase{"bool16", [](DLTensor& t, Name) { t.dtype = dl_type(kBoolCode, 16); }},
        FromCase{"code 200", [](DLTensor& t, Name) { t.dtype = dl_type(200, 32); }},
        FromCase{"ndim -1", [](DLTensor& t, Name) { t.ndim = -1; }},
        FromCase{"ndim 9",
                 [](DLTensor& t, Name) {
                   t.ndim = HH_MAX_RANK + 1;
                   t.shape = g_rank_nine;
                 }},
        FromCase{"NULL shape", [](DLTensor& t, Name) { t.shape = nullptr; }},
        FromCase{"negative extent", [](DLTensor& t, Name) { t.shape = g_negative_extent; }},
        FromCase{"negative stride", [](DLTensor& t, Name) { t.strides = g_negative_strides; }},
        FromCase{"negative stride on extent 1",
                 [](DLTensor& t, Name) {
                   t.shape = g_single_column;
                   t.strides = g_negative_strides;
                 }},
        FromCase{"count overflow", [](DLTensor& t, Name) { t.shape = g_count_overflow; }},
        FromCase{"byte overflow",
                 [](DLTensor& t, Name) {
                   t.ndim = 1;
                   t.shape = g_bytes_overflow;
                 }},
        FromCase{"strided reach overflow",
                 [](DLTensor& t, Name) {
                   t.shape = g_reach_shape;
                   t.strides = g_reach_strides;
                 }},
        FromCase{"NULL data with elements", [](DLTensor& t, Name) { t.data = nullptr; }},
        FromCase{"NULL data with offset",
                 [](DLTensor& t, Name) {
                   t.data = nullptr;
                   t.shape = g_empty;  // no elements: only the offset is wrong
                   t.byte_offset = 4;
                 }},
        FromCase{"OpenCL device", [](DLTensor& t, Name) { t.device.device_type = kDLOpenCL; }},
        FromCase{"device type 0",
                 [](DLTensor& t, Name) { t.device.device_type = static_cast<DLDeviceType>(0); }},
        FromCase{"negative device id", [](DLTensor& t, Name) { t.device.device_id = -1; }},
        FromCase{"NULL name", [](DLTensor&, Name name) { name = nullptr; }},
        FromCase{"long name", [](DLTensor&, Name name) { name = g_long_name.c_str(); }}),
    [](const auto& info) {
      std::string name = info.param.what;
      for (char& c : name)
        if (c == ' ' || c == '-') c = '_';
      return name;
    });

TEST(DlpackRefusal, FromDlpackNullArguments) {
  const DLTensor t = good_dltensor();
  hh_tensor out;
  poison(out);
  EXPECT_EQ(hh_tensor_from_dlpack(nullptr, "x", &out), 0);
  EXPECT_TRUE(still_poisoned(out));
  EXPECT_EQ(hh_tensor_from_dlpack(&t, "x", nullptr), 0);
}

TEST(DlpackRefusal, TheLongestAllowedNameIsAccepted) {
  const DLTensor t = good_dltensor();
  hh_tensor out;
  ASSERT_EQ(hh_tensor_from_dlpack(&t, g_longest_name.c_str(), &out), 1);
  EXPECT_EQ(check_view(out), "");
}

// ---- The host accepts what the conversion produces ---------------------------------------------

TEST(DlpackHostValidation, AcceptsEveryViewFromDlpack) {
  alignas(8) unsigned char buffer[8 * 64] = {};
  int64_t shapes[][3] = {{2, 3, 4}, {1, 1, 1}, {0, 5, 2}, {3, 0, 7}, {4, 1, 2}};
  int64_t strides[][3] = {{12, 4, 1}, {1, 2, 6}, {0, 0, 0}, {3, 1, 0}, {20, 5, 2}};
  const DLDataType types[] = {dl_type(kDLFloat, 16),  dl_type(kDLFloat, 32), dl_type(kDLFloat, 64),
                              dl_type(kDLBfloat, 16), dl_type(kDLInt, 8),    dl_type(kDLInt, 16),
                              dl_type(kDLInt, 32),    dl_type(kDLInt, 64),   dl_type(kDLUInt, 8)};
  const DLDeviceType devices[] = {kDLCPU, kDLCUDA, kDLCUDAHost, kDLROCM};
  int produced = 0;
  for (const DLDataType& type : types)
    for (auto& shape : shapes)
      for (int ndim = 0; ndim <= 3; ++ndim)
        for (int s = -1; s < static_cast<int>(std::size(strides)); ++s)
          for (uint64_t offset : {uint64_t{0}, uint64_t{8}})
            for (DLDeviceType device : devices) {
              DLTensor t = cpu_dltensor(type, buffer, shape, ndim, s < 0 ? nullptr : strides[s]);
              t.byte_offset = offset;
              t.device.device_type = device;
              t.device.device_id = device == kDLCPU ? 0 : 2;
              hh_tensor v;
              ASSERT_EQ(hh_tensor_from_dlpack(&t, "v", &v), 1);
              ++produced;
              ASSERT_EQ(check_view(v), "") << "type " << int{type.code} << "/" << int{type.bits}
                                           << " ndim " << ndim << " strides " << s;
              // Everything the view says it covers lies inside the buffer.
              if (device == kDLCPU && v.byte_size > 0) {
                const auto* begin = static_cast<const unsigned char*>(v.data);
                EXPECT_LE(begin + v.byte_size, buffer + sizeof buffer);
              }
            }
  EXPECT_EQ(produced, 9 * 5 * 4 * 6 * 2 * 4);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
