// ABI 1.0 and 1.1: the frozen layout of every struct on x86-64, and the validation of every tensor
// view a plugin hands the host (each rejection names the field).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/hookhost.h>
#include <hookhost/host/tensor.hpp>
#include <limits>
#include <string>
#include <vector>

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;

// ---- Frozen layouts (LP64). A change here breaks every plugin ever built: never edit. ---------
#if defined(__x86_64__) || defined(__aarch64__)
#define HH_PIN(type, field, offset) \
  static_assert(offsetof(type, field) == (offset), #type "." #field)
static_assert(HH_ERROR_SIZE_1_0 == 1032);
static_assert(HH_TENSOR_SIZE_1_0 == 60);
HH_PIN(hh_tensor, dtype, 4);
HH_PIN(hh_tensor, name, 8);
HH_PIN(hh_tensor, shape, 16);
HH_PIN(hh_tensor, strides, 24);
HH_PIN(hh_tensor, data, 32);
HH_PIN(hh_tensor, byte_size, 40);
HH_PIN(hh_tensor, rank, 48);
HH_PIN(hh_tensor, device, 52);
static_assert(sizeof(hh_str) == 16 && sizeof(hh_device) == 8);
static_assert(HH_HOST_SIZE_1_0 == 112);
HH_PIN(hh_host, abi_major, 4);
HH_PIN(hh_host, host_data, 16);
HH_PIN(hh_host, instance_name, 24);
HH_PIN(hh_host, state_put, 80);
HH_PIN(hh_host, state_info, 88);
HH_PIN(hh_host, state_get, 96);
HH_PIN(hh_host, get_service, 104);
static_assert(HH_SESSION_INFO_SIZE_1_0 == 16);
static_assert(HH_RUN_CONTEXT_SIZE_1_0 == 24);
static_assert(HH_RUN_REQUEST_SIZE_1_0 == 32);
static_assert(HH_RUN_VALUES_SIZE_1_0 == 20);
HH_PIN(hh_run_values, tensors, 8);
HH_PIN(hh_run_values, tensor_stride, 16);
static_assert(HH_END_INFO_SIZE_1_0 == 32);
static_assert(HH_HOOK_SIZE_1_0 == 72);
HH_PIN(hh_hook, begin, 16);
HH_PIN(hh_hook, destroy, 56);
HH_PIN(hh_hook, get_extension, 64);
static_assert(HH_PARAM_DESC_SIZE_1_0 == 40);
static_assert(HH_PARAM_VALUE_SIZE_1_0 == 60);
HH_PIN(hh_param_value, name, 16);
HH_PIN(hh_param_value, list_count, 56);
static_assert(HH_CREATE_ARGS_SIZE_1_0 == 28);
HH_PIN(hh_create_args, param_stride, 24);
static_assert(HH_PLUGIN_ENTRY_SIZE_1_0 == 72);
HH_PIN(hh_plugin_entry, min_abi_minor, 12);
HH_PIN(hh_plugin_entry, id, 16);
HH_PIN(hh_plugin_entry, params, 40);
HH_PIN(hh_plugin_entry, param_stride, 52);
HH_PIN(hh_plugin_entry, state_version, 56);
HH_PIN(hh_plugin_entry, create, 64);
static_assert(HH_CHECKPOINT_SERVICE_SIZE_1_0 == 24);
HH_PIN(hh_checkpoint_service, request, 8);
HH_PIN(hh_checkpoint_service, last_written, 16);
static_assert(HH_STEPS_SERVICE_SIZE_1_0 == 24);
static_assert(HH_SUMMARY_SERVICE_SIZE_1_0 == 32);
static_assert(HH_DEVICE_VALUES_EXTENSION_SIZE_1_0 == 16);
// ABI 1.1's services.
static_assert(HH_JOB_SERVICE_SIZE_1_1 == 16);
HH_PIN(hh_job_service, config_dir, 8);
static_assert(HH_DIST_SERVICE_SIZE_1_1 == 56);
HH_PIN(hh_dist_service, rank, 8);
HH_PIN(hh_dist_service, world_size, 16);
HH_PIN(hh_dist_service, is_chief, 24);
HH_PIN(hh_dist_service, barrier, 48);
static_assert(HH_DIST_SERVICE_SIZE_1_0 == HH_DIST_SERVICE_SIZE_1_1, "the deprecated alias");
#endif

// ---- Views ------------------------------------------------------------------------------------

struct ViewCase {
  const char* what;
  void (*spoil)(hh_tensor&);
  const char* message;
};

float g_values[6] = {1, 2, 3, 4, 5, 6};
int64_t g_shape[2] = {2, 3};

hh_tensor good_view() {
  hh_tensor t;
  hh_tensor_init(&t);
  t.name = "x";
  t.dtype = HH_DTYPE_F32;
  t.rank = 2;
  t.shape = g_shape;
  t.data = g_values;
  t.byte_size = sizeof g_values;
  return t;
}

class ViewValidation : public ::testing::TestWithParam<ViewCase> {};

TEST_P(ViewValidation, RejectsWithTheFieldNamed) {
  hh_tensor t = good_view();
  ASSERT_EQ(check_view(t), "");
  GetParam().spoil(t);
  EXPECT_THAT(check_view(t), HasSubstr(GetParam().message));
  EXPECT_THROW(Tensor::from_view(t), std::invalid_argument);
}

int64_t g_huge[2] = {int64_t{1} << 40, int64_t{1} << 40};
int64_t g_negative[2] = {2, -3};
int64_t g_negative_strides[2] = {3, -1};
int64_t g_wide_strides[2] = {30, 1};
uint8_t g_bools[6] = {0, 1, 2, 0, 1, 0};
hh_str g_strings[2] = {{"ab", 2}, {nullptr, 4}};
std::string g_long_name(HH_MAX_NAME_LENGTH + 1, 'n');

INSTANTIATE_TEST_SUITE_P(
    EveryField, ViewValidation,
    ::testing::Values(
        ViewCase{"struct_size", [](hh_tensor& t) { t.struct_size = 0; }, "struct_size is 0"},
        ViewCase{"null name", [](hh_tensor& t) { t.name = nullptr; }, "name: the name is NULL"},
        ViewCase{"long name", [](hh_tensor& t) { t.name = g_long_name.c_str(); },
                 "name: the name is longer than 1024 bytes"},
        ViewCase{"dtype", [](hh_tensor& t) { t.dtype = 99; }, "dtype 99 is not a known"},
        ViewCase{"rank", [](hh_tensor& t) { t.rank = HH_MAX_RANK + 1; }, "rank 9 is above"},
        ViewCase{"null shape", [](hh_tensor& t) { t.shape = nullptr; }, "shape is NULL"},
        ViewCase{"negative extent", [](hh_tensor& t) { t.shape = g_negative; },
                 "shape[1] is negative"},
        ViewCase{"overflow", [](hh_tensor& t) { t.shape = g_huge; }, "overflows size_t"},
        ViewCase{"byte_size", [](hh_tensor& t) { t.byte_size = 8; }, "byte_size 8 does not match"},
        ViewCase{"null data", [](hh_tensor& t) { t.data = nullptr; }, "data is NULL for 6"},
        ViewCase{"device 0", [](hh_tensor& t) { t.device.type = 0; }, "device.type 0"},
        ViewCase{"device id", [](hh_tensor& t) { t.device.id = -1; }, "device.id is negative"},
        ViewCase{"negative stride", [](hh_tensor& t) { t.strides = g_negative_strides; },
                 "strides[1] is negative"},
        ViewCase{"strided reach", [](hh_tensor& t) { t.strides = g_wide_strides; },
                 "smaller than the 132 bytes"},
        ViewCase{"bool byte",
                 [](hh_tensor& t) {
                   t.dtype = HH_DTYPE_BOOL;
                   t.data = g_bools;
                   t.byte_size = sizeof g_bools;
                 },
                 "bool element 2 is 2"},
        ViewCase{"string element",
                 [](hh_tensor& t) {
                   t.dtype = HH_DTYPE_STRING;
                   t.rank = 1;
                   t.shape = g_shape;  // 2 elements
                   t.data = g_strings;
                   t.byte_size = sizeof g_strings;
                 },
                 "string element 1 has NULL data and size 4"}),
    [](const auto& info) {
      std::string name = info.param.what;
      for (char& c : name)
        if (c == ' ' || c == '_') c = 'X';
      return name;
    });

TEST(ViewValidation, AcceleratorValuesAreWrappedButNeverCopiedAsFeeds) {
  hh_tensor t = good_view();
  t.device = {HH_DEVICE_CUDA, 1};
  EXPECT_EQ(check_view(t), "");
  EXPECT_THAT([&] { Tensor::from_view(t); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("is not the CPU")));
  const Tensor borrowed = Tensor::borrow(t, nullptr);
  EXPECT_EQ(borrowed.device().type, HH_DEVICE_CUDA);
  EXPECT_EQ(borrowed.view("x").data, g_values);  // zero-copy
}

TEST(ViewValidation, StridedFeedIsCopiedContiguously) {
  // The 2x3 matrix seen transposed: shape 3x2 with strides {1, 3}.
  int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
  hh_tensor t = good_view();
  t.shape = shape;
  t.strides = strides;
  ASSERT_EQ(check_view(t), "");
  const Tensor copy = Tensor::from_view(t);
  std::vector<double> got;
  for (size_t i = 0; i < 6; ++i) got.push_back(copy.as_double(i));
  EXPECT_EQ(got, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(hh_tensor_get_double(&t, i), got[i]) << i;
}

TEST(ViewValidation, HalfPrecisionElementsReadAsDoubles) {
  uint16_t halves[3] = {0x3c00, 0xc000, 0x3555};  // 1, -2, ~0.333
  uint16_t bfloats[2] = {0x3f80, 0xc040};         // 1, -3
  int64_t n3 = 3, n2 = 2;
  hh_tensor h;
  hh_tensor_init(&h);
  h.name = "h";
  h.dtype = HH_DTYPE_F16;
  h.rank = 1;
  h.shape = &n3;
  h.data = halves;
  h.byte_size = sizeof halves;
  ASSERT_EQ(check_view(h), "");
  EXPECT_EQ(hh_tensor_get_double(&h, 0), 1.0);
  EXPECT_EQ(hh_tensor_get_double(&h, 1), -2.0);
  EXPECT_NEAR(hh_tensor_get_double(&h, 2), 1.0 / 3, 1e-3);
  hh_tensor b = h;
  b.dtype = HH_DTYPE_BF16;
  b.shape = &n2;
  b.data = bfloats;
  b.byte_size = sizeof bfloats;
  EXPECT_EQ(hh_tensor_get_double(&b, 1), -3.0);
}

TEST(ViewValidation, FetchNamesAreCapped) {
  EXPECT_EQ(check_name("loss"), "");
  EXPECT_THAT(check_name(nullptr), HasSubstr("NULL"));
  EXPECT_THAT(check_name(g_long_name.c_str()), HasSubstr("longer than 1024 bytes"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
