// The embedded default workload: linear regression by mini-batch SGD on a CSV file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/params.hpp>
#include "workloads/linreg.hpp"

#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "process.hpp"
#include "storage/checkpoint.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
namespace fs = std::filesystem;
using Raw = std::multimap<std::string, std::string>;
using testing::Process;
using testing::ProcessResult;
using testing::run_hookhost;
using testing::TempDir;
using testing::wait_until;
using testing::write_file;

ResolvedParams params(const Raw& raw = {}) {
  return resolve_params(linreg_schema(), "workload", raw);
}

std::unique_ptr<Session> created(const Raw& raw = {}) {
  std::unique_ptr<Session> s = make_linreg_session(params(raw));
  s->create(1);
  return s;
}

// One step fetching the loss; a failed step fails the test and reports -1.
float step_loss(Session& s, const TensorMap& feeds = {}) {
  StepResult r = s.run({"loss"}, feeds);
  EXPECT_EQ(r.status, StepStatus::ok) << r.message;
  if (r.status != StepStatus::ok) return -1;
  return static_cast<float>(r.values.at("loss").as_double());
}

std::vector<float> losses(Session& s, int steps) {
  std::vector<float> out;
  for (int i = 0; i < steps; ++i) out.push_back(step_loss(s));
  return out;
}

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out;
  for (std::size_t i = 0; i < t.element_count(); ++i) out.push_back(t.as_double(i));
  return out;
}

std::string config_error(const Raw& raw) {
  try {
    make_linreg_session(params(raw));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// y = 3·x1 − 2·x2 + 1 exactly; the quoted names hold commas and quotes, and are never parsed.
const char kLinearCsv[] =
    "name,x1,x2,y\n"
    "\"a, first\",0,0,1\n"
    "b,1,0,4\n"
    "c,0,1,-1\n"
    "\"d \"\"quoted\"\"\",1,1,2\n"
    "e,-1,0,-2\n"
    "f,0,-1,3\n"
    "g,0.5,0.5,1.5\n"
    "h,-0.5,1,-2.5\n"
    "\r\n";

TEST(Linreg, SchemaDeclaresTheDocumentedKeysAndDefaults) {
  EXPECT_EQ(linreg_schema().id, "linreg");
  ResolvedParams p = params();
  EXPECT_EQ(p.find("data")->s, "");
  EXPECT_EQ(p.find("label")->s, "mpg");
  EXPECT_THAT(p.find("features")->list, ElementsAre("drat", "cyl"));
  EXPECT_EQ(p.find("batch_size")->i, 8);
  EXPECT_DOUBLE_EQ(p.find("learning_rate")->f, 0.1);
  EXPECT_EQ(p.find("epochs")->i, 100);
  EXPECT_EQ(p.find("shuffle_seed")->i, 42);
  EXPECT_TRUE(p.find("standardize")->b);
  EXPECT_EQ(p.find("fail_at_step")->i, -1);
  EXPECT_EQ(p.find("step_delay_ms")->i, 0);
  EXPECT_EQ(p.find("fail_kind")->s, "aborted");
  EXPECT_EQ(p.values().size(), 11u);
}

TEST(Linreg, LossOnBuiltInMtcarsFallsBelowATenthWithinAFewHundredSteps) {
  std::unique_ptr<Session> s = created();
  std::vector<float> l = losses(*s, 400);
  ASSERT_EQ(l.size(), 400u);
  // Zero weights predict 0 mpg: the first loss is the batch's mean mpg², hundreds.
  EXPECT_GT(l[0], 100.0f);
  std::size_t first_below = l.size();
  for (std::size_t i = 0; i < l.size(); ++i)
    if (l[i] < l[0] / 10) {
      first_below = i;
      break;
    }
  EXPECT_LT(first_below, 300u) << "loss never fell below a tenth of " << l[0];
  // Converged, not a lucky batch: the whole last epoch stays low.
  for (std::size_t i = 396; i < 400; ++i) EXPECT_LT(l[i], l[0] / 10) << "step " << i;
  std::cout << "[linreg] first loss " << l[0] << ", loss at step 100 " << l[99] << ", at step 400 "
            << l[399] << ", first below a tenth at step " << first_below + 1 << "\n";
}

TEST(Linreg, BuiltInDataIsTheRepositorysMtcarsCsv) {
  std::unique_ptr<Session> builtin = created();
  std::unique_ptr<Session> file =
      created({{"data", std::string(HOOKHOST_SOURCE_DIR) + "/data/mtcars.csv"}});
  EXPECT_EQ(losses(*builtin, 40), losses(*file, 40));
  // 32 cars: one row per step makes 32 steps an epoch.
  EXPECT_EQ(created({{"batch_size", "1"}, {"epochs", "1"}})->last_step(), 32);
}

TEST(Linreg, EndOfDataAfterTheLastEpochAndLastStepKnowsWhen) {
  std::unique_ptr<Session> s = created({{"epochs", "2"}});  // 32 rows / 8 = 4 steps an epoch
  EXPECT_EQ(s->last_step(), 8);
  for (int i = 0; i < 8; ++i) {
    StepResult r = s->run({"global_step"}, {});
    ASSERT_EQ(r.status, StepStatus::ok) << "run " << i + 1 << ": " << r.message;
    EXPECT_EQ(r.values.at("global_step").as_double(), i + 1);
  }
  StepResult ninth = s->run({"loss"}, {});
  EXPECT_EQ(ninth.status, StepStatus::end_of_data);
  EXPECT_THAT(ninth.message, HasSubstr("end of data after 2 epochs"));
  EXPECT_EQ(s->global_step(), 8);
}

TEST(Linreg, EpochsZeroRunsOnWithoutAKnownEnd) {
  std::unique_ptr<Session> s = created({{"epochs", "0"}});
  EXPECT_EQ(s->last_step(), std::nullopt);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(s->run({}, {}).status, StepStatus::ok) << i;
  EXPECT_EQ(s->global_step(), 500);
}

TEST(Linreg, FirstStepReportsTheInitialLossThenTakesAGradientStep) {
  TempDir dir;
  write_file(dir / "four.csv", "x,y\n1,1\n2,2\n3,3\n4,4\n");
  std::unique_ptr<Session> s = created({{"data", (dir / "four.csv").string()},
                                        {"label", "y"},
                                        {"features", "x"},
                                        {"batch_size", "4"}});
  StepResult r = s->run({"loss", "weights", "bias"}, {});
  ASSERT_EQ(r.status, StepStatus::ok) << r.message;
  // Zero weights: the loss is mean(y²) = 7.5, measured before the update.
  EXPECT_FLOAT_EQ(static_cast<float>(r.values.at("loss").as_double()), 7.5f);
  // One step of 0.1 on mean squared error: b = 0.2·mean(y) and w = 0.2·mean(y·x'), x' being x
  // standardised with the population sd (sqrt 1.25), so w = 0.2·1.25/sqrt(1.25).
  EXPECT_NEAR(r.values.at("bias").as_double(), 0.5, 1e-6);
  EXPECT_THAT(values_of(r.values.at("weights")),
              ElementsAre(::testing::DoubleNear(0.2 * std::sqrt(1.25), 1e-6)));
}

TEST(Linreg, LastPartialBatchOfAnEpochIsUsed) {
  TempDir dir;
  write_file(dir / "ten.csv", "x,y\n1,1\n2,2\n3,3\n4,4\n5,5\n6,6\n7,7\n8,8\n9,9\n10,10\n");
  std::unique_ptr<Session> s = created({{"data", (dir / "ten.csv").string()},
                                        {"label", "y"},
                                        {"features", "x"},
                                        {"batch_size", "4"},
                                        {"epochs", "1"}});
  EXPECT_EQ(s->last_step(), 3);  // 4 + 4 + 2 rows
  for (int i = 0; i < 3; ++i) ASSERT_EQ(s->run({}, {}).status, StepStatus::ok);
  EXPECT_EQ(s->run({}, {}).status, StepStatus::end_of_data);
}

TEST(Linreg, FetchesReturnExactlyTheNamesWithTheirTypes) {
  std::unique_ptr<Session> s = created();
  EXPECT_THAT(s->fetchable(),
              UnorderedElementsAre("loss", "global_step", "learning_rate", "weights", "bias"));
  EXPECT_THAT(s->feedable(), ElementsAre("learning_rate"));
  EXPECT_EQ(s->global_step(), 0);

  StepResult all = s->run({"loss", "global_step", "learning_rate", "weights", "bias"}, {});
  ASSERT_EQ(all.status, StepStatus::ok) << all.message;
  ASSERT_EQ(all.values.size(), 5u);
  const auto scalar = [](const Tensor& t, hh_dtype dtype) {
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_TRUE(t.shape().empty());
  };
  scalar(all.values.at("loss"), HH_DTYPE_F32);
  scalar(all.values.at("global_step"), HH_DTYPE_I64);
  scalar(all.values.at("learning_rate"), HH_DTYPE_F32);
  scalar(all.values.at("bias"), HH_DTYPE_F32);
  EXPECT_EQ(all.values.at("global_step").as_double(), 1);  // the value after the step
  EXPECT_FLOAT_EQ(static_cast<float>(all.values.at("learning_rate").as_double()), 0.1f);
  const Tensor& w = all.values.at("weights");
  EXPECT_EQ(w.dtype(), HH_DTYPE_F32);
  EXPECT_THAT(w.shape(), ElementsAre(2));
  EXPECT_NE(values_of(w), (std::vector<double>{0, 0}));  // updated from zero
  EXPECT_GT(all.values.at("bias").as_double(), 0);       // mpg is positive

  StepResult one = s->run({"global_step"}, {});
  ASSERT_EQ(one.status, StepStatus::ok);
  ASSERT_EQ(one.values.size(), 1u);
  EXPECT_EQ(one.values.at("global_step").as_double(), 2);
  StepResult none = s->run({}, {});
  EXPECT_EQ(none.status, StepStatus::ok);
  EXPECT_TRUE(none.values.empty());
  EXPECT_EQ(s->global_step(), 3);
}

TEST(Linreg, FedLearningRateLastsOneStepAndZeroFreezesTheWeights) {
  std::unique_ptr<Session> s = created();
  const std::vector<std::string> fetch = {"weights", "bias", "learning_rate"};
  StepResult before = s->run(fetch, {});
  ASSERT_EQ(before.status, StepStatus::ok);

  StepResult frozen = s->run(fetch, {{"learning_rate", Tensor::scalar_f32(0.0f)}});
  ASSERT_EQ(frozen.status, StepStatus::ok) << frozen.message;
  EXPECT_EQ(values_of(frozen.values.at("weights")), values_of(before.values.at("weights")));
  EXPECT_EQ(frozen.values.at("bias").as_double(), before.values.at("bias").as_double());
  EXPECT_EQ(frozen.values.at("learning_rate").as_double(), 0.0);
  EXPECT_EQ(s->global_step(), 2);  // a frozen step still counts

  StepResult after = s->run(fetch, {});  // the feed is gone: the configured rate again
  ASSERT_EQ(after.status, StepStatus::ok);
  EXPECT_FLOAT_EQ(static_cast<float>(after.values.at("learning_rate").as_double()), 0.1f);
  EXPECT_NE(values_of(after.values.at("weights")), values_of(frozen.values.at("weights")));

  // Any numeric scalar is a rate; a string, a vector or a negative rate is an error.
  EXPECT_EQ(s->run({}, {{"learning_rate", Tensor::scalar_f64(0.05)}}).status, StepStatus::ok);
  EXPECT_EQ(s->run({}, {{"learning_rate", Tensor::string("fast")}}).status, StepStatus::error);
  EXPECT_EQ(s->run({}, {{"learning_rate", Tensor::vector_f32({0.1f, 0.2f})}}).status,
            StepStatus::error);
  StepResult negative = s->run({}, {{"learning_rate", Tensor::scalar_f32(-1.0f)}});
  EXPECT_EQ(negative.status, StepStatus::error);
  EXPECT_THAT(negative.message, HasSubstr("learning_rate"));
  EXPECT_EQ(s->global_step(), 4);  // rejected steps did not run
}

TEST(Linreg, RestoredMidEpochContinuesWithTheSameLosses) {
  std::unique_ptr<Session> a = created();
  losses(*a, 6);  // 6 steps of 4 per epoch: mid-epoch 2
  const std::string saved = a->save_state();
  const std::vector<float> expected = losses(*a, 6);

  // Restored before the first create (how a job resumes from a checkpoint).
  std::unique_ptr<Session> b = make_linreg_session(params());
  b->restore_state(saved);
  b->create(1);
  EXPECT_EQ(b->global_step(), 6);
  EXPECT_EQ(losses(*b, 6), expected);
  EXPECT_EQ(b->global_step(), 12);

  // Restored after a recovery's create (which first resets to the initial state).
  std::unique_ptr<Session> c = created();
  losses(*c, 3);
  c->create(2);
  EXPECT_EQ(c->global_step(), 0);
  c->restore_state(saved);
  EXPECT_EQ(losses(*c, 6), expected);
  EXPECT_EQ(c->save_state(), a->save_state());  // the whole state matches, not only the losses
}

TEST(Linreg, RecoveryCreateStartsAgainFromTheInitialState) {
  std::unique_ptr<Session> s = created();
  const std::vector<float> first = losses(*s, 5);
  s->create(2);
  EXPECT_EQ(s->global_step(), 0);
  EXPECT_EQ(losses(*s, 5), first);
}

TEST(Linreg, RestoreRejectsMalformedOrForeignState) {
  std::unique_ptr<Session> s = created();
  losses(*s, 3);
  const std::string good = s->save_state();
  const auto error = [&](const std::string& bytes) -> std::string {
    try {
      s->restore_state(bytes);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_THAT(error(""), HasSubstr("linreg"));
  EXPECT_THAT(error("garbage"), HasSubstr("linreg-state"));
  EXPECT_THAT(error(good.substr(0, good.size() / 2)), HasSubstr("cannot restore"));
  std::string bad_step = good;
  bad_step.replace(bad_step.find("step 3"), 6, "step x");
  EXPECT_THAT(error(bad_step), HasSubstr("'step'"));
  // A state for other features, or for other data, is refused rather than misread.
  std::unique_ptr<Session> other = created({{"features", "wt"}});
  EXPECT_THAT(error(other->save_state()), HasSubstr("features 'wt'"));
  std::string foreign = good;
  foreign.replace(foreign.find("rows 32"), 7, "rows 31");
  EXPECT_THAT(error(foreign), HasSubstr("31 data rows"));
  // A refused state leaves the session as it was.
  EXPECT_EQ(s->global_step(), 3);
  EXPECT_EQ(s->save_state(), good);
}

TEST(Linreg, InjectedAbortFailsOnceThenTheRetrySucceeds) {
  std::unique_ptr<Session> s = created({{"fail_at_step", "3"}});  // fail_kind defaults to aborted
  losses(*s, 3);
  StepResult aborted = s->run({"loss"}, {});
  EXPECT_EQ(aborted.status, StepStatus::aborted);
  EXPECT_THAT(aborted.message, HasSubstr("step 3"));
  EXPECT_EQ(s->global_step(), 3);
  EXPECT_EQ(s->run({"loss"}, {}).status, StepStatus::ok);
  EXPECT_EQ(s->global_step(), 4);
  // Replaying the step after a recovery does not abort again: once per process.
  s->create(2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s->run({}, {}).status, StepStatus::ok) << i;
}

TEST(Linreg, InjectedErrorFailsTheStep) {
  std::unique_ptr<Session> s = created({{"fail_at_step", "2"}, {"fail_kind", "error"}});
  losses(*s, 2);
  StepResult r = s->run({"loss"}, {});
  EXPECT_EQ(r.status, StepStatus::error);
  EXPECT_EQ(r.message, "injected error at step 2");
  EXPECT_EQ(s->global_step(), 2);
}

TEST(Linreg, InjectedNanPoisonsEveryLaterLoss) {
  std::unique_ptr<Session> s = created({{"fail_at_step", "2"}, {"fail_kind", "nan"}});
  std::vector<float> l = losses(*s, 6);
  EXPECT_TRUE(std::isfinite(l[0]) && std::isfinite(l[1]));
  for (std::size_t i = 2; i < l.size(); ++i) EXPECT_TRUE(std::isnan(l[i])) << "step " << i;
  // A diverged model's state saves and restores too.
  std::unique_ptr<Session> t = make_linreg_session(params());
  t->restore_state(s->save_state());
  t->create(1);
  EXPECT_TRUE(std::isnan(step_loss(*t)));
}

TEST(Linreg, CustomCsvWithOwnLabelAndFeaturesFitsTheLine) {
  TempDir dir;
  write_file(dir / "line.csv", kLinearCsv);
  std::unique_ptr<Session> s = created({{"data", (dir / "line.csv").string()},
                                        {"label", "y"},
                                        {"features", "x1, x2"},
                                        {"batch_size", "3"},
                                        {"standardize", "false"},
                                        {"epochs", "0"}});
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(s->run({}, {}).status, StepStatus::ok);
  StepResult r = s->run({"weights", "bias", "loss"}, {});
  ASSERT_EQ(r.status, StepStatus::ok);
  EXPECT_THAT(values_of(r.values.at("weights")),
              ElementsAre(::testing::DoubleNear(3, 1e-3), ::testing::DoubleNear(-2, 1e-3)));
  EXPECT_NEAR(r.values.at("bias").as_double(), 1, 1e-3);
  EXPECT_LT(r.values.at("loss").as_double(), 1e-5);
}

TEST(Linreg, ShuffleVisitsEveryRowOncePerEpochInAFixedOrder) {
  // Zero weights and a fed rate of 0 keep the model still, so a one-row batch's loss is y² and
  // reveals which row it read.
  TempDir dir;
  std::string csv = "x,y\n";
  for (int i = 1; i <= 10; ++i) csv += "0," + std::to_string(i) + "\n";
  write_file(dir / "rows.csv", csv);
  const auto order = [&](const std::string& seed) {
    std::unique_ptr<Session> s = created({{"data", (dir / "rows.csv").string()},
                                          {"label", "y"},
                                          {"features", "x"},
                                          {"batch_size", "1"},
                                          {"shuffle_seed", seed}});
    std::vector<int> rows;
    for (int i = 0; i < 20; ++i)
      rows.push_back(static_cast<int>(
          std::lround(std::sqrt(step_loss(*s, {{"learning_rate", Tensor::scalar_f32(0)}})))));
    return rows;
  };
  const std::vector<int> seed42 = order("42");
  const std::vector<int> epoch1(seed42.begin(), seed42.begin() + 10);
  const std::vector<int> epoch2(seed42.begin() + 10, seed42.end());
  EXPECT_THAT(epoch1, UnorderedElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  EXPECT_THAT(epoch2, UnorderedElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  EXPECT_NE(epoch1, epoch2);  // each epoch has its own seed (seed + epoch)
  EXPECT_EQ(order("42"), seed42);
  EXPECT_NE(order("7"), seed42);
  // mt19937_64 is fully specified and the shuffle is ours, so this order holds on every standard
  // library (checked against an independent mt19937_64 + Fisher–Yates); a change here changes
  // every job's results.
  EXPECT_THAT(epoch1, ElementsAre(2, 8, 10, 1, 4, 9, 5, 3, 6, 7));
  EXPECT_THAT(epoch2, ElementsAre(3, 5, 4, 9, 2, 8, 6, 10, 1, 7));
}

TEST(Linreg, CsvProblemsNameTheFileAndWhatIsWrong) {
  TempDir dir;
  const std::string file = (dir / "bad.csv").string();
  const Raw use = {{"data", file}, {"label", "y"}, {"features", "x1,x2"}, {"batch_size", "2"}};

  EXPECT_THAT(config_error({{"data", (dir / "missing.csv").string()}}),
              AllOf(HasSubstr("missing.csv"), HasSubstr("does not exist")));
  EXPECT_THAT(config_error({{"data", dir.path().string()}}), HasSubstr("is a folder"));

  write_file(file, "");
  EXPECT_THAT(config_error(use), AllOf(HasSubstr(file), HasSubstr("no header row")));
  write_file(file, "1,2,3\n4,5,6\n");
  EXPECT_THAT(config_error(use), AllOf(HasSubstr(file), HasSubstr("no header row")));

  write_file(file, kLinearCsv);
  Raw unknown_label = use;
  unknown_label.find("label")->second = "z";
  EXPECT_THAT(config_error(unknown_label),
              AllOf(HasSubstr(file), HasSubstr("no column 'z'"),
                    HasSubstr("the file has columns: name, x1, x2, y")));
  Raw unknown_feature = use;
  unknown_feature.find("features")->second = "x1,x3";
  EXPECT_THAT(config_error(unknown_feature),
              AllOf(HasSubstr(file), HasSubstr("no column 'x3'"), HasSubstr("x1, x2, y")));
  EXPECT_THAT(config_error({{"features", "weight"}}),
              AllOf(HasSubstr("built-in data/mtcars.csv"),
                    HasSubstr("model, mpg, cyl, disp, hp, drat, wt, qsec, vs, am, gear, carb")));

  write_file(file, "name,x1,x2,y\na,1,2,3\nb,abc,2,3\n");
  EXPECT_THAT(config_error(use),
              AllOf(HasSubstr(file), HasSubstr("line 3"), HasSubstr("column 'x1' (column 2)"),
                    HasSubstr("'abc' is not a finite number")));
  write_file(file, "name,x1,x2,y\na,1,2,3\nb,1,2,\n");
  EXPECT_THAT(config_error(use), AllOf(HasSubstr("line 3"), HasSubstr("column 'y'")));
  write_file(file, "name,x1,x2,y\na,1,2,3\nb,1,2\n");
  EXPECT_THAT(config_error(use), AllOf(HasSubstr(file), HasSubstr("line 3 has 3 fields"),
                                       HasSubstr("(column 4, 'y', is missing)")));
  write_file(file, "name,x1,x2,y\n\"a,1,2,3\n");
  EXPECT_THAT(config_error(use), AllOf(HasSubstr("line 2, column 1"), HasSubstr("closing quote")));

  write_file(file, "name,x1,x2,y\n");
  EXPECT_THAT(config_error(use), AllOf(HasSubstr(file), HasSubstr("no data rows")));
  write_file(file, "name,x1,x2,y\na,1,2,3\n");
  EXPECT_THAT(config_error(use),
              AllOf(HasSubstr(file), HasSubstr("1 data rows, fewer than batch_size=2")));
}

TEST(Linreg, ParametersAreValidatedNamingTheKey) {
  // Types are checked generically by resolve_params...
  try {
    params({{"batch_size", "x"}});
    ADD_FAILURE() << "batch_size 'x' was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'batch_size'"), HasSubstr("plugin 'linreg'")));
  }
  EXPECT_THROW(params({{"batchsize", "8"}}), ConfigError);
  // ...ranges and choices by the workload.
  EXPECT_THAT(config_error({{"batch_size", "0"}}),
              AllOf(HasSubstr("'batch_size'"), HasSubstr("an integer between 1 and 2147483647")));
  EXPECT_THAT(config_error({{"learning_rate", "0"}}), HasSubstr("'learning_rate'"));
  EXPECT_THAT(config_error({{"learning_rate", "-0.5"}}), HasSubstr("'learning_rate'"));
  EXPECT_THAT(config_error({{"epochs", "-1"}}), HasSubstr("'epochs'"));
  EXPECT_THAT(config_error({{"fail_at_step", "-2"}}), HasSubstr("'fail_at_step'"));
  EXPECT_THAT(
      config_error({{"step_delay_ms", "-1"}}),
      AllOf(HasSubstr("'step_delay_ms'"), HasSubstr("between 0 and 60000"), HasSubstr("'-1'")));
  EXPECT_THAT(config_error({{"step_delay_ms", "60001"}}),
              AllOf(HasSubstr("'step_delay_ms'"), HasSubstr("'60001'")));
  EXPECT_EQ(config_error({{"step_delay_ms", "60000"}}), "(no error)");
  EXPECT_THAT(config_error({{"fail_kind", "boom"}}),
              AllOf(HasSubstr("'fail_kind'"), HasSubstr("aborted, error, nan"), HasSubstr("boom")));
  EXPECT_THAT(config_error({{"features", "mpg,cyl"}}), HasSubstr("both the label and a feature"));
  EXPECT_THAT(config_error({{"features", "cyl,cyl"}}), HasSubstr("twice"));
  EXPECT_THAT(config_error({{"batch_size", "33"}}), HasSubstr("fewer than batch_size=33"));
  EXPECT_EQ(config_error({{"batch_size", "32"}}), "(no error)");
}

// The delay is there so that a person (or a test) can kill a job mid-run: with it, a checkpoint
// written at step 5 of 300 appears while the job still runs, the kill leaves it unfinished, and a
// plain restart resumes from that checkpoint. Without the delay linreg finishes 300 steps before
// anyone can react.
TEST(Linreg, StepDelayLeavesTimeToKillMidRunAndResume) {
  TempDir dir;
  write_file(dir / "job.ini",
             "[run]\nrun_dir = run\nkeep_checkpoints = 0\n"
             "[workload]\nname = linreg\nepochs = 0\nstep_delay_ms = 20\n"
             "[hook.stop]\nplugin = stop_at_step\nlast_step = 300\n"
             "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 5\n");
  const fs::path checkpoints = dir / "run" / "checkpoints";
  const auto newest_step = [&]() -> int64_t {
    if (!fs::exists(checkpoints)) return -1;
    const std::vector<fs::path> files = list_checkpoints(checkpoints);
    return files.empty() ? -1 : read_checkpoint(files.front()).global_step;
  };
  {
    Process job({"run", "--config", (dir / "job.ini").string(), "--log-level", "warn"}, dir.path());
    ASSERT_TRUE(wait_until([&] { return newest_step() >= 5; })) << "no checkpoint appeared";
    job.signal(SIGKILL);
    const ProcessResult killed = job.wait();
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << "the job ended before the kill:\n"
                                               << killed.out << killed.err;
  }
  const int64_t saved = newest_step();
  ASSERT_GE(saved, 5);
  ASSERT_LT(saved, 300) << "the job reached its last step before the kill";

  // The restart (without the delay, to finish quickly) resumes from the killed run's checkpoint.
  const ProcessResult resumed = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--set", "workload.step_delay_ms=0"},
      dir.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("at global step " + std::to_string(saved)));
  EXPECT_THAT(resumed.out, HasSubstr("global step " + std::to_string(saved) + " -> 300)"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
