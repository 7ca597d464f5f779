// The one door of every host service (host/src/services/service.hpp), tested alone: a made-up
// service behind the entry template, called through its C function pointers the way a plugin
// calls them; then the built-in services over a small ServiceContext, without a runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/steps.h>

#include <sstream>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services/service.hpp"
#include "services/services.hpp"

namespace hookhost {

// A service whose behaviour each test chooses.
class ProbeService {
 public:
  enum class Act { answer, misuse, refuse, fail };
  Act act = Act::answer;
  int calls = 0;

  int32_t answer(HostServices&, int32_t x) { return respond(x * 2); }
  hh_status write(HostServices&, const char*, hh_error*) { return respond(HH_OK); }
  void note(HostServices&, int32_t) { respond(0); }

 private:
  template <class T>
  T respond(T value) {
    ++calls;
    switch (act) {
      case Act::answer: return value;
      case Act::misuse: throw Misuse("with a bad argument");
      case Act::refuse: throw Refusal("probe refused: over its limit");
      case Act::fail: throw std::runtime_error("disk full");
    }
    return value;
  }
};

ProbeService g_probe;

template <>
ProbeService& service_detail::service_for<ProbeService>(HostServices&) {
  return g_probe;
}

namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kAnswer = entry<"probe/1 answer", AfterEnd::allowed, -1, &ProbeService::answer>;
constexpr auto kWrite = entry<"probe/1 write", AfterEnd::refused, HH_ERROR, &ProbeService::write>;
constexpr auto kNote = entry<"probe/1 note", AfterEnd::refused, NoValue{}, &ProbeService::note>;

class ServiceEntry : public ::testing::Test {
 protected:
  void SetUp() override {
    g_probe = ProbeService{};
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    caller_.logger = std::make_shared<spdlog::logger>("probe-instance", sink);
    caller_.instance_name = "probe-instance";
    caller_.plugin_id = "probe-plugin";
    caller_.c.host_data = &caller_;
    hh_error_init(&error_);
  }
  const hh_host* host() const { return &caller_.c; }
  std::string log() const { return log_.str(); }

  std::ostringstream log_;
  HostServices caller_;
  hh_error error_{};
};

TEST_F(ServiceEntry, AnAnswerPassesThrough) {
  EXPECT_EQ(kAnswer(host(), 21), 42);
  EXPECT_EQ(kWrite(host(), "x", &error_), HH_OK);
  EXPECT_EQ(g_probe.calls, 2);
  EXPECT_EQ(log(), "");
}

TEST_F(ServiceEntry, AHandleThisHostNeverIssuedIsRefusedWithoutCallingTheService) {
  hh_host forged = caller_.c;  // same host_data, but not the table the host handed out
  EXPECT_EQ(kAnswer(&forged, 1), -1);
  EXPECT_EQ(kAnswer(nullptr, 1), -1);
  EXPECT_EQ(kWrite(nullptr, "x", &error_), HH_ERROR);
  EXPECT_THAT(error_.message, HasSubstr("probe/1 write: not a host pointer of this host"));
  EXPECT_EQ(g_probe.calls, 0);
}

TEST_F(ServiceEntry, AfterEndOnlyTheFunctionsMarkedAllowedRun) {
  caller_.ended = true;
  EXPECT_EQ(kAnswer(host(), 2), 4);
  EXPECT_EQ(kWrite(host(), "x", &error_), HH_ERROR);
  kNote(host(), 1);
  EXPECT_EQ(g_probe.calls, 1);
  EXPECT_STREQ(error_.message, "probe/1 write: after end()");
  EXPECT_THAT(log(), HasSubstr("plugin misbehaving: probe/1 write after end() (probe-instance, "
                               "plugin 'probe-plugin'); call refused"));
  EXPECT_THAT(log(), HasSubstr("plugin misbehaving: probe/1 note after end()"));
}

TEST_F(ServiceEntry, MisuseIsLoggedNamingTheInstanceAndReportedInTheErrorBuffer) {
  g_probe.act = ProbeService::Act::misuse;
  EXPECT_EQ(kAnswer(host(), 2), -1);
  EXPECT_EQ(kWrite(host(), "x", &error_), HH_ERROR);
  EXPECT_STREQ(error_.message, "probe/1 write: with a bad argument");
  EXPECT_THAT(log(), HasSubstr("plugin misbehaving: probe/1 answer with a bad argument "
                               "(probe-instance, plugin 'probe-plugin'); call refused"));
}

TEST_F(ServiceEntry, ARefusalIsLoggedAsItsOwnText) {
  g_probe.act = ProbeService::Act::refuse;
  EXPECT_EQ(kWrite(host(), "x", &error_), HH_ERROR);
  EXPECT_STREQ(error_.message, "probe refused: over its limit");
  EXPECT_THAT(log(), HasSubstr("[error] probe refused: over its limit"));
  EXPECT_THAT(log(), Not(HasSubstr("misbehaving")));
}

TEST_F(ServiceEntry, AFailureGoesToTheErrorBufferWhenThereIsOneElseToTheLog) {
  g_probe.act = ProbeService::Act::fail;
  EXPECT_EQ(kWrite(host(), "x", &error_), HH_ERROR);
  EXPECT_STREQ(error_.message, "disk full");
  EXPECT_EQ(log(), "");
  kNote(host(), 1);
  EXPECT_THAT(log(), HasSubstr("probe/1 note failed: disk full (probe-instance, plugin "
                               "'probe-plugin')"));
}

TEST_F(ServiceEntry, AnErrorBufferWithoutItsStructSizeIsLeftUntouched) {
  g_probe.act = ProbeService::Act::misuse;
  hh_error raw;
  std::memset(&raw, 'z', sizeof raw);
  raw.struct_size = 0;
  EXPECT_EQ(kWrite(host(), "x", &raw), HH_ERROR);
  EXPECT_EQ(raw.message[0], 'z');
}

// The built-in services read and change the job only through the context they are given.
class BuiltinServices : public ::testing::Test {
 protected:
  BuiltinServices() {
    caller_.logger = logger_;
    caller_.instance_name = "probe-instance";
    caller_.plugin_id = "probe-plugin";
    caller_.context = &context_;
    HostTable::fill(caller_);
  }
  const hh_host* host() const { return &caller_.c; }
  template <class T>
  const T* service(const char* id) const {
    return static_cast<const T*>(caller_.c.get_service(host(), id));
  }

  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_ = std::make_shared<spdlog::logger>(
      "probe-instance", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
  JobState job_{logger_};
  RunningCall running_;
  EventWriters event_writers_;
  ServiceRegistry registry_{{}};
  ServiceContext context_{job_, running_, event_writers_, registry_,
                          ServiceSettings{16, "config", nullptr, std::chrono::milliseconds(100)}};
  HostServices caller_;
};

TEST_F(BuiltinServices, TheStepAndStopsAreTheJobStates) {
  job_.set_global_step(12);
  EXPECT_EQ(caller_.c.global_step(host()), 12);
  EXPECT_EQ(caller_.c.should_stop(host()), 0);
  caller_.c.request_stop(host(), "enough");
  EXPECT_EQ(caller_.c.should_stop(host()), 1);
  EXPECT_EQ(job_.stop().cause, HH_STOP_CAUSE_HOOK);
  EXPECT_EQ(job_.stop().reason, "hook 'probe-instance': enough");
}

TEST_F(BuiltinServices, StatePutKeepsToTheJobsLimit) {
  const std::string fits(16, 'x'), too_big(17, 'x');
  EXPECT_EQ(caller_.c.state_put(host(), fits.data(), fits.size()), HH_OK);
  EXPECT_EQ(caller_.c.state_put(host(), too_big.data(), too_big.size()), HH_ERROR);
  EXPECT_THAT(log_.str(), HasSubstr("17 bytes is more than the job's state limit of 16 bytes"));
  size_t size = 0;
  EXPECT_EQ(caller_.c.state_info(host(), &size, nullptr), 1);
  EXPECT_EQ(size, 16u);
}

TEST_F(BuiltinServices, ACheckpointRequestIsRecordedAndTheNewestIsReported) {
  const auto* checkpoints = service<hh_checkpoint_service>(HH_SERVICE_CHECKPOINT);
  ASSERT_NE(checkpoints, nullptr);
  EXPECT_EQ(checkpoints->request(host(), "now"), HH_OK);
  EXPECT_TRUE(job_.checkpoint_requested());
  EXPECT_EQ(job_.take_checkpoint_reasons(), "hook 'probe-instance': now");
  int64_t step = -1;
  EXPECT_EQ(checkpoints->last_written(host(), nullptr, 0, &step), 0);
  job_.set_last_checkpoint(WrittenCheckpoint{"ckpt/model-7.ckpt", 7});
  char path[64];
  EXPECT_EQ(checkpoints->last_written(host(), path, sizeof path, &step), 1);
  EXPECT_STREQ(path, "ckpt/model-7.ckpt");
  EXPECT_EQ(step, 7);
}

TEST_F(BuiltinServices, TheLastStepIsTheSmallestPublishedOrTheWorkloads) {
  const auto* steps = service<hh_steps_service>(HH_SERVICE_STEPS);
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->last_step(host()), -1);
  job_.set_workload_last_step(100);
  EXPECT_EQ(steps->publish_last_step(host(), 40), HH_OK);
  EXPECT_EQ(steps->last_step(host()), 40);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
