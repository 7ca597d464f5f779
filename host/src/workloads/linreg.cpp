#include "workloads/linreg.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <hookhost/version.h>

#include "support/text.hpp"

namespace hookhost {

namespace embedded {
// Generated at build time from data/mtcars.csv by host/cmake/embed_file.cmake.
extern const unsigned char mtcars_csv[];
extern const std::size_t mtcars_csv_size;
}  // namespace embedded

namespace {

namespace fs = std::filesystem;

const std::string kWhere = "workload 'linreg'";
const std::string kStateMagic = "linreg-state 1";
// A minute per step is already slower than any demo needs; more is a typo.
constexpr int64_t kMaxStepDelayMs = 60000;

enum class FailKind { aborted, error, nan };

struct Config {
  std::string source;  // how errors name the data: "data file '...'" or the built-in copy
  std::string label;
  std::vector<std::string> features;
  int64_t batch_size = 0;
  double learning_rate = 0;
  int64_t epochs = 0;
  int64_t shuffle_seed = 0;
  bool standardize = true;
  int64_t fail_at_step = -1;
  int64_t step_delay_ms = 0;
  FailKind fail_kind = FailKind::aborted;
};

struct Dataset {
  std::size_t rows = 0;
  std::size_t cols = 0;   // the features
  std::vector<double> x;  // rows × cols, row-major
  std::vector<double> y;
};

// ---- text helpers ----

// A CSV cell's blanks: spaces, tabs and the '\r' of CRLF line endings.
std::string_view trim_cell(std::string_view s) {
  return trim(s, " \t\r");
}

// A finite number, the whole cell (an optional leading '+' allowed, which from_chars refuses).
bool parse_number(std::string_view cell, double& out) {
  cell = trim_cell(cell);
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  if (cell.empty()) return false;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), out);
  return ec == std::errc() && end == cell.data() + cell.size() && std::isfinite(out);
}

// Shortest text that reads back as exactly the same double (so a restored job is bit-identical).
std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) throw std::runtime_error("linreg: cannot format a number");
  return std::string(buf, end);
}

// Splits one CSV line into fields: "..." quotes a field ("" is a quote inside it); unquoted
// fields are trimmed. Returns an error text, empty when the line is well formed.
std::string split_csv_line(std::string_view line, std::vector<std::string>& fields) {
  fields.clear();
  std::size_t i = 0;
  for (;;) {
    std::string field;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      bool closed = false;
      for (++i; i < line.size(); ++i) {
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          closed = true;
          ++i;
          break;
        }
      }
      const std::string column = "column " + std::to_string(fields.size() + 1);
      if (!closed) return column + ": a quoted field has no closing quote";
      while (i < line.size() && line[i] != ',') {
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
          return column + ": text follows a closing quote";
        ++i;
      }
    } else {
      std::size_t comma = std::min(line.find(',', i), line.size());
      field = trim_cell(line.substr(i, comma - i));
      i = comma;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return {};
    ++i;  // past the comma
  }
}

// ---- configuration ----

const ResolvedParams::Value& param(const ResolvedParams& params, const char* name,
                                   hh_param_type type) {
  const ResolvedParams::Value* v = params.find(name);
  if (!v || !v->is_set || v->spec.type != type)
    throw ConfigError(kWhere + ": parameter '" + name +
                      "' is missing; resolve the parameters against linreg_schema()");
  return *v;
}

Config read_config(const ResolvedParams& params) {
  Config c;
  const std::string data = param(params, "data", HH_PARAM_TYPE_STRING).s;
  c.source = data.empty() ? "the built-in data/mtcars.csv" : "data file '" + data + "'";
  c.label = std::string(trim_cell(param(params, "label", HH_PARAM_TYPE_STRING).s));
  c.features = param(params, "features", HH_PARAM_TYPE_STRING_LIST).list;
  c.batch_size = param(params, "batch_size", HH_PARAM_TYPE_INT).i;
  c.learning_rate = param(params, "learning_rate", HH_PARAM_TYPE_FLOAT).f;
  c.epochs = param(params, "epochs", HH_PARAM_TYPE_INT).i;
  c.shuffle_seed = param(params, "shuffle_seed", HH_PARAM_TYPE_INT).i;
  c.standardize = param(params, "standardize", HH_PARAM_TYPE_BOOL).b;
  c.fail_at_step = param(params, "fail_at_step", HH_PARAM_TYPE_INT).i;
  const std::string kind = param(params, "fail_kind", HH_PARAM_TYPE_STRING).s;
  c.step_delay_ms = param(params, "step_delay_ms", HH_PARAM_TYPE_INT).i;

  const auto bad = [](const std::string& key, const std::string& rule, const std::string& got) {
    return ConfigError(kWhere + ": parameter '" + key + "' must be " + rule + ", got '" + got + "'",
                       key);
  };
  const auto between = [](int64_t low, int64_t high) {
    return "an integer between " + std::to_string(low) + " and " + std::to_string(high);
  };
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (c.label.empty()) throw bad("label", "a column name", c.label);
  if (c.features.empty()) throw bad("features", "at least one column name", "");
  for (std::size_t i = 0; i < c.features.size(); ++i) {
    if (c.features[i] == c.label)
      throw ConfigError(kWhere + ": column '" + c.label +
                            "' is both the label and a feature; a model must not see its answer",
                        "features");
    if (std::find(c.features.begin(), c.features.begin() + static_cast<std::ptrdiff_t>(i),
                  c.features[i]) != c.features.begin() + static_cast<std::ptrdiff_t>(i))
      throw ConfigError(
          kWhere + ": parameter 'features' names column '" + c.features[i] + "' twice", "features");
  }
  if (c.batch_size < 1 || c.batch_size > kIntMax)
    throw bad("batch_size", between(1, kIntMax), std::to_string(c.batch_size));
  if (!(c.learning_rate > 0) || !std::isfinite(c.learning_rate))
    throw bad("learning_rate", "a number > 0", format_double(c.learning_rate));
  if (c.epochs < 0 || c.epochs > kIntMax)
    throw bad("epochs", between(0, kIntMax) + " (0 = until a hook stops the job)",
              std::to_string(c.epochs));
  if (c.fail_at_step < -1)
    throw bad(
        "fail_at_step",
        between(-1, std::numeric_limits<int64_t>::max()) + " (a global step, or -1 for never)",
        std::to_string(c.fail_at_step));
  if (c.step_delay_ms < 0 || c.step_delay_ms > kMaxStepDelayMs)
    throw bad("step_delay_ms", between(0, kMaxStepDelayMs) + " (milliseconds; 0 = no delay)",
              std::to_string(c.step_delay_ms));
  if (kind == "aborted") {
    c.fail_kind = FailKind::aborted;
  } else if (kind == "error") {
    c.fail_kind = FailKind::error;
  } else if (kind == "nan") {
    c.fail_kind = FailKind::nan;
  } else {
    throw bad("fail_kind", "one of aborted, error, nan", kind);
  }
  return c;
}

// ---- data ----

std::string read_data_text(const ResolvedParams& params) {
  const std::string path = param(params, "data", HH_PARAM_TYPE_STRING).s;
  if (path.empty())
    return std::string(reinterpret_cast<const char*>(embedded::mtcars_csv),
                       embedded::mtcars_csv_size);
  const std::string where = kWhere + ": data file '" + path + "' (parameter 'data')";
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) throw ConfigError(where + " does not exist", "data");
  if (fs::is_directory(status)) throw ConfigError(where + " is a folder, not a CSV file", "data");
  if (!fs::is_regular_file(status))
    throw ConfigError(where + " is not a regular file (a device, FIFO or socket)", "data");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(where + " cannot be opened: " + std::strerror(errno), "data");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(where + " cannot be read", "data");
  return text.str();
}

Dataset load_dataset(std::string_view text, const Config& cfg) {
  const std::string where = kWhere + ": " + cfg.source;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 BOM (spreadsheets)

  std::vector<std::string> header;
  std::vector<std::size_t> used;  // column index of the label, then of each feature
  std::vector<std::string> fields;
  Dataset d;
  d.cols = cfg.features.size();
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (trim_cell(line).empty()) continue;
    if (std::string err = split_csv_line(line, fields); !err.empty())
      throw ConfigError(where + ": line " + std::to_string(line_no) + ", " + err, "data");

    if (header.empty()) {
      header = fields;
      double ignored = 0;
      if (std::all_of(header.begin(), header.end(),
                      [&](const std::string& f) { return parse_number(f, ignored); }))
        throw ConfigError(where + " has no header row: line " + std::to_string(line_no) +
                              " holds numbers, but the first line must name the columns",
                          "data");
      const auto column = [&](const std::string& name, const std::string& role,
                              const std::string& key) {
        auto it = std::find(header.begin(), header.end(), name);
        if (it == header.end())
          throw ConfigError(where + " has no column '" + name + "' (" + role +
                                "); the file has columns: " + join(header, ", "),
                            key);
        return static_cast<std::size_t>(it - header.begin());
      };
      used.push_back(column(cfg.label, "the label, parameter 'label'", "label"));
      for (const auto& f : cfg.features)
        used.push_back(column(f, "a feature, parameter 'features'", "features"));
      continue;
    }

    if (fields.size() != header.size())
      throw ConfigError(
          where + ": line " + std::to_string(line_no) + " has " + std::to_string(fields.size()) +
              " fields, but the header has " + std::to_string(header.size()) +
              (fields.size() < header.size()
                   ? " (column " + std::to_string(fields.size() + 1) + ", '" +
                         header[fields.size()] + "', is missing)"
                   : " (column " + std::to_string(header.size() + 1) + " has no header)"),
          "data");
    for (std::size_t k = 0; k < used.size(); ++k) {
      const std::size_t col = used[k];
      double v = 0;
      if (!parse_number(fields[col], v))
        throw ConfigError(where + ": line " + std::to_string(line_no) + ", column '" + header[col] +
                              "' (column " + std::to_string(col + 1) + "): '" + fields[col] +
                              "' is not a finite number",
                          "data");
      if (k == 0) {
        d.y.push_back(v);
      } else {
        d.x.push_back(v);
      }
    }
    ++d.rows;
  }
  if (header.empty()) throw ConfigError(where + " has no header row (the file is empty)", "data");
  if (d.rows == 0) throw ConfigError(where + " has a header but no data rows", "data");
  if (d.rows < static_cast<std::size_t>(cfg.batch_size))
    throw ConfigError(where + " has " + std::to_string(d.rows) +
                          " data rows, fewer than batch_size=" + std::to_string(cfg.batch_size) +
                          "; lower 'batch_size' or use more data",
                      "batch_size");

  if (cfg.standardize) {
    for (std::size_t j = 0; j < d.cols; ++j) {
      double mean = 0;
      for (std::size_t i = 0; i < d.rows; ++i) mean += d.x[i * d.cols + j];
      mean /= static_cast<double>(d.rows);
      double var = 0;
      for (std::size_t i = 0; i < d.rows; ++i) {
        const double dev = d.x[i * d.cols + j] - mean;
        var += dev * dev;
      }
      const double sd = std::sqrt(var / static_cast<double>(d.rows));
      // A constant column carries no information: centre it (to 0) rather than divide by 0.
      const double scale = sd > 0 ? sd : 1.0;
      for (std::size_t i = 0; i < d.rows; ++i)
        d.x[i * d.cols + j] = (d.x[i * d.cols + j] - mean) / scale;
    }
  }
  return d;
}

// ---- shuffling ----

// Uniform in [0, n) by rejection, so the result depends only on the engine's (standardised) output
// sequence; std::uniform_int_distribution differs between standard libraries.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: the biased low values to skip
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

std::vector<std::size_t> epoch_order(std::size_t rows, int64_t seed, int64_t epoch) {
  std::vector<std::size_t> order(rows);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(static_cast<uint64_t>(seed) + static_cast<uint64_t>(epoch));
  for (std::size_t i = rows; i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
  return order;
}

// ---- the session ----

class LinregSession final : public Session {
 public:
  LinregSession(Config cfg, Dataset data, std::shared_ptr<Communicator> comm)
      : cfg_(std::move(cfg)), data_(std::move(data)), comm_(std::move(comm)) {
    steps_per_epoch_ =
        static_cast<int64_t>((data_.rows + static_cast<std::size_t>(cfg_.batch_size) - 1) /
                             static_cast<std::size_t>(cfg_.batch_size));
    state_ = initial_state();
  }

  void create(int /*creation*/) override {
    // A first create after restore_state keeps the restored state; recovery starts from scratch
    // and the program then restores the newest checkpoint.
    if (created_ || !restored_) state_ = initial_state();
    created_ = true;
  }

  int64_t global_step() const override { return state_.step; }

  std::vector<std::string> fetchable() const override {
    return {"loss", "global_step", "learning_rate", "weights", "bias"};
  }
  std::vector<std::string> feedable() const override { return {"learning_rate"}; }

  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override;
  void cancel_step() override;

  std::string save_state() const override;
  void restore_state(std::string_view bytes) override;

  std::optional<int64_t> last_step() const override {
    // epochs 0 runs until stopped; an absurd epoch count has no representable end either.
    if (cfg_.epochs == 0 || cfg_.epochs > std::numeric_limits<int64_t>::max() / steps_per_epoch_)
      return std::nullopt;
    return cfg_.epochs * steps_per_epoch_;
  }

 private:
  struct State {
    int64_t step = 0;
    int64_t epoch = 0;
    std::size_t position = 0;        // rows of this epoch already used
    std::vector<std::size_t> order;  // this epoch's row order
    std::vector<double> weights;
    double bias = 0;
  };

  State initial_state() const {
    State s;
    s.order = epoch_order(data_.rows, cfg_.shuffle_seed, 0);
    s.weights.assign(data_.cols, 0.0);
    return s;
  }

  // The sums every process adds up each step, after the gradient of the weights.
  enum ExtraSum : std::size_t {
    kGradBias,
    kSquaredError,
    kChiefLearningRate,
    kRefused,    // processes whose step's request was refused
    kCancelled,  // processes whose runtime called the step off
    kExtraSums
  };

  // The step's end when every process decides it alike, from the same state and configuration
  // (end of data, an injected fault), before anything is exchanged.
  std::optional<StepResult> decided_alike();
  // Empty when the fetches and feeds are acceptable; sets the step's learning rate.
  std::string check_request(const std::vector<std::string>& fetches, const TensorMap& feeds,
                            double& lr) const;

  static StepResult failure(StepStatus status, std::string message) {
    StepResult r;
    r.status = status;
    r.message = std::move(message);
    return r;
  }

  Config cfg_;
  Dataset data_;
  std::shared_ptr<Communicator> comm_;  // null: one process
  State state_;
  int64_t steps_per_epoch_ = 0;
  bool created_ = false;
  bool restored_ = false;
  bool abort_injected_ = false;  // per process, not in the state: the retry must succeed
};

std::optional<StepResult> LinregSession::decided_alike() {
  if (!created_) return failure(StepStatus::error, "linreg: run() before create()");
  if (cfg_.epochs > 0 && state_.epoch >= cfg_.epochs)
    return failure(StepStatus::end_of_data,
                   "end of data after " + std::to_string(cfg_.epochs) + " epochs");
  State& s = state_;
  if (s.step == cfg_.fail_at_step) {
    switch (cfg_.fail_kind) {
      case FailKind::aborted:
        if (!abort_injected_) {
          abort_injected_ = true;
          return failure(StepStatus::aborted, "injected abort at step " + std::to_string(s.step));
        }
        break;
      case FailKind::error:
        return failure(StepStatus::error, "injected error at step " + std::to_string(s.step));
      case FailKind::nan:
        // Poisoned weights keep every later loss NaN too, like a diverged model.
        std::fill(s.weights.begin(), s.weights.end(), std::numeric_limits<double>::quiet_NaN());
        s.bias = std::numeric_limits<double>::quiet_NaN();
        break;
    }
  }
  return std::nullopt;
}

std::string LinregSession::check_request(const std::vector<std::string>& fetches,
                                         const TensorMap& feeds, double& lr) const {
  const std::vector<std::string> known = fetchable();
  for (const auto& name : fetches)
    if (std::find(known.begin(), known.end(), name) == known.end())
      return "linreg: cannot fetch '" + name + "' (fetchable: " + join(known, ", ") + ")";
  lr = cfg_.learning_rate;
  for (const auto& [name, tensor] : feeds) {
    if (name != "learning_rate")
      return "linreg: cannot feed '" + name + "' (feedable: learning_rate)";
    if (tensor.dtype() == HH_DTYPE_STRING || tensor.element_count() != 1)
      return "linreg: the learning_rate feed must be a numeric scalar";
    lr = tensor.as_double();
    if (!std::isfinite(lr) || lr < 0)
      return "linreg: the fed learning_rate must be a finite number >= 0, got " + format_double(lr);
  }
  return {};
}

void LinregSession::cancel_step() {
  // The other processes reach the gradient allreduce unless the step ends alike everywhere first.
  if (!comm_ || decided_alike()) return;
  std::vector<double> sums(data_.cols + kExtraSums, 0.0);
  sums[data_.cols + kCancelled] = 1;
  comm_->allreduce(sums.data(), sums.size(), ReduceOp::sum);
}

StepResult LinregSession::run(const std::vector<std::string>& fetches, const TensorMap& feeds) {
  if (auto decided = decided_alike()) return *decided;
  // A slow model for demos and tests of kill and resume: linreg alone runs ~10^5 steps/s.
  if (cfg_.step_delay_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(cfg_.step_delay_ms));
  double lr = 0;
  std::string refused = check_request(fetches, feeds, lr);
  if (!refused.empty() && !comm_) return failure(StepStatus::error, refused);

  // This process's rows of the global batch: every size-th from its rank on. The sums of every
  // process's gradients, squared errors and counts give what one process would compute.
  State& s = state_;
  const std::size_t cols = data_.cols;
  const std::size_t end =
      std::min(s.position + static_cast<std::size_t>(cfg_.batch_size), data_.rows);
  const std::size_t first = s.position + static_cast<std::size_t>(comm_ ? comm_->rank() : 0);
  const std::size_t stride = static_cast<std::size_t>(comm_ ? comm_->size() : 1);
  std::vector<double> sums(cols + kExtraSums, 0.0);  // grad_w, then kExtraSums more
  if (refused.empty()) {
    for (std::size_t k = first; k < end; k += stride) {
      const std::size_t row = s.order[k];
      const double* x = &data_.x[row * cols];
      double residual = s.bias - data_.y[row];
      for (std::size_t j = 0; j < cols; ++j) residual += s.weights[j] * x[j];
      sums[cols + kSquaredError] += residual * residual;
      sums[cols + kGradBias] += residual;
      for (std::size_t j = 0; j < cols; ++j) sums[j] += residual * x[j];
    }
  } else {
    sums[cols + kRefused] = 1;
  }
  if (comm_) {
    // The chief's learning rate for everyone: a feed given on one process alone must not make
    // the replicas' weights differ.
    sums[cols + kChiefLearningRate] = comm_->is_chief() ? lr : 0.0;
    comm_->allreduce(sums.data(), sums.size(), ReduceOp::sum);
    if (!refused.empty()) return failure(StepStatus::error, refused);
    if (sums[cols + kRefused] > 0 || sums[cols + kCancelled] > 0)
      return failure(StepStatus::cancelled, "another process could not run the step");
    lr = sums[cols + kChiefLearningRate];
  }

  const double m = static_cast<double>(end - s.position);
  const double loss = sums[cols + kSquaredError] / m;  // with the weights before the update
  const double step_size = lr * 2.0 / m;               // d(mean r²)/dθ = 2/m Σ r ∂r/∂θ
  for (std::size_t j = 0; j < cols; ++j) s.weights[j] -= step_size * sums[j];
  s.bias -= step_size * sums[cols + kGradBias];

  ++s.step;
  s.position = end;
  if (s.position >= data_.rows) {
    s.position = 0;
    ++s.epoch;
    s.order = epoch_order(data_.rows, cfg_.shuffle_seed, s.epoch);
  }

  StepResult r;
  for (const auto& name : fetches) {
    if (name == "loss") {
      r.values.insert_or_assign(name, Tensor::scalar_f32(static_cast<float>(loss)));
    } else if (name == "global_step") {
      r.values.insert_or_assign(name, Tensor::scalar_i64(s.step));
    } else if (name == "learning_rate") {
      r.values.insert_or_assign(name, Tensor::scalar_f32(static_cast<float>(lr)));
    } else if (name == "weights") {
      std::vector<float> w(s.weights.begin(), s.weights.end());
      r.values.insert_or_assign(name, Tensor::vector_f32(std::move(w)));
    } else if (name == "bias") {
      r.values.insert_or_assign(name, Tensor::scalar_f32(static_cast<float>(s.bias)));
    }
  }
  return r;
}

// One "key value..." line per field; the label and features guard against resuming a checkpoint
// with a different model.
std::string LinregSession::save_state() const {
  std::string out = kStateMagic + "\n";
  out += "label " + cfg_.label + "\n";
  out += "features " + join(cfg_.features, ",") + "\n";
  out += "rows " + std::to_string(data_.rows) + "\n";
  out += "step " + std::to_string(state_.step) + "\n";
  out += "epoch " + std::to_string(state_.epoch) + "\n";
  out += "position " + std::to_string(state_.position) + "\n";
  out += "order";
  for (std::size_t i : state_.order) out += " " + std::to_string(i);
  out += "\nbias " + format_double(state_.bias) + "\nweights";
  for (double w : state_.weights) out += " " + format_double(w);
  out += "\n";
  return out;
}

void LinregSession::restore_state(std::string_view bytes) {
  const auto fail = [](const std::string& why) {
    return std::runtime_error("linreg: cannot restore the workload state: " + why);
  };
  std::vector<std::pair<std::string, std::string>> lines;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t nl = std::min(bytes.find('\n', start), bytes.size());
    std::string_view line = bytes.substr(start, nl - start);
    start = nl + 1;
    if (lines.empty() && line == kStateMagic) {
      lines.emplace_back(kStateMagic, "");
      continue;
    }
    if (lines.empty()) throw fail("it does not start with '" + kStateMagic + "'");
    std::size_t space = std::min(line.find(' '), line.size());
    lines.emplace_back(std::string(line.substr(0, space)),
                       std::string(line.substr(std::min(space + 1, line.size()))));
  }
  if (lines.empty()) throw fail("it is empty");

  const std::vector<std::string> keys = {"label",    "features", "rows", "step",   "epoch",
                                         "position", "order",    "bias", "weights"};
  if (lines.size() != keys.size() + 1) throw fail("expected the lines " + join(keys, ", "));
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (lines[i + 1].first != keys[i])
      throw fail("line " + std::to_string(i + 2) + " should be '" + keys[i] + "', found '" +
                 lines[i + 1].first + "'");
  const auto value = [&](std::size_t i) -> const std::string& { return lines[i + 1].second; };

  const auto numbers = [](std::string_view rest) {
    std::vector<std::string_view> items;
    while (!rest.empty()) {
      std::size_t space = std::min(rest.find(' '), rest.size());
      if (space > 0) items.push_back(rest.substr(0, space));
      rest.remove_prefix(std::min(space + 1, rest.size()));
    }
    return items;
  };
  const auto integer = [&](std::string_view item, const std::string& key) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 0)
      throw fail("'" + key + "' holds '" + std::string(item) + "', not a count");
    return v;
  };
  const auto real = [&](std::string_view item, const std::string& key) {
    double v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size())
      throw fail("'" + key + "' holds '" + std::string(item) + "', not a number");
    return v;  // NaN is legal: a diverged model's state
  };
  const auto single = [&](std::size_t i) {
    auto items = numbers(value(i));
    if (items.size() != 1) throw fail("'" + keys[i] + "' must hold one value");
    return items.front();
  };

  if (value(0) != cfg_.label || value(1) != join(cfg_.features, ","))
    throw fail("it was saved for label '" + value(0) + "' and features '" + value(1) +
               "', but this workload has label '" + cfg_.label + "' and features '" +
               join(cfg_.features, ",") + "'");
  if (static_cast<std::size_t>(integer(single(2), "rows")) != data_.rows)
    throw fail("it was saved for " + value(2) + " data rows, but the data has " +
               std::to_string(data_.rows));

  State s;
  s.step = integer(single(3), "step");
  s.epoch = integer(single(4), "epoch");
  s.position = static_cast<std::size_t>(integer(single(5), "position"));
  if (s.position >= data_.rows) throw fail("'position' is past the end of the data");
  std::vector<bool> seen(data_.rows, false);
  for (std::string_view item : numbers(value(6))) {
    const auto row = static_cast<std::size_t>(integer(item, "order"));
    if (row >= data_.rows || seen[row]) throw fail("'order' is not a permutation of the rows");
    seen[row] = true;
    s.order.push_back(row);
  }
  if (s.order.size() != data_.rows) throw fail("'order' is not a permutation of the rows");
  s.bias = real(single(7), "bias");
  for (std::string_view item : numbers(value(8))) s.weights.push_back(real(item, "weights"));
  if (s.weights.size() != data_.cols)
    throw fail("'weights' holds " + std::to_string(s.weights.size()) + " values for " +
               std::to_string(data_.cols) + " features");

  state_ = std::move(s);
  restored_ = true;
}

PluginMetadata make_schema() {
  PluginMetadata m;
  m.id = "linreg";
  m.version = HOOKHOST_VERSION_STRING;
  m.description = "Linear regression by mini-batch SGD on a CSV file (the default workload)";
  m.abi_major = HH_ABI_MAJOR;
  m.abi_minor = HH_ABI_MINOR;
  const auto d = ParamFlag::defaulted;
  m.params = {
      {"data", HH_PARAM_TYPE_STRING, d, "",
       "CSV file with a header row; empty = the built-in copy of data/mtcars.csv"},
      {"label", HH_PARAM_TYPE_STRING, d, "mpg", "the column to predict"},
      {"features", HH_PARAM_TYPE_STRING_LIST, d, "drat,cyl", "the input columns"},
      {"batch_size", HH_PARAM_TYPE_INT, d, "8",
       "rows per step (> 0); the last batch of an epoch may be smaller"},
      {"learning_rate", HH_PARAM_TYPE_FLOAT, d, "0.1",
       "SGD step size (> 0); a hook may feed learning_rate for a step"},
      {"epochs", HH_PARAM_TYPE_INT, d, "100",
       "passes over the data; 0 = run until a hook stops the job"},
      {"shuffle_seed", HH_PARAM_TYPE_INT, d, "42",
       "seed of the per-epoch shuffle (epoch e uses seed + e)"},
      {"standardize", HH_PARAM_TYPE_BOOL, d, "true",
       "standardise each feature to mean 0, sd 1 over the data"},
      {"fail_at_step", HH_PARAM_TYPE_INT, d, "-1",
       "fault injection: fail at this global step; -1 = never"},
      {"fail_kind", HH_PARAM_TYPE_STRING, d, "aborted",
       "aborted (recoverable, once), error (fails the job) or nan (the loss becomes NaN)"},
      {"step_delay_ms", HH_PARAM_TYPE_INT, d, "0",
       "sleep this long in every step (0-60000 ms), to slow the job for kill-and-resume demos"},
  };
  return m;
}

}  // namespace

const PluginMetadata& linreg_schema() {
  static const PluginMetadata schema = make_schema();
  return schema;
}

std::unique_ptr<Session> make_linreg_session(const ResolvedParams& params,
                                             std::shared_ptr<Communicator> comm) {
  Config cfg = read_config(params);
  Dataset data = load_dataset(read_data_text(params), cfg);
  return std::make_unique<LinregSession>(std::move(cfg), std::move(data), std::move(comm));
}

}  // namespace hookhost
