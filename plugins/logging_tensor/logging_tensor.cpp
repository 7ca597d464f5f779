// logging_tensor: TensorFlow's LoggingTensorHook. Logs named tensors every N iterations or every
// N seconds (counted in local iterations, like TensorFlow) and/or once at the end of the job.
//
// Default line, as TensorFlow prints it: "loss = 0.123, global_step = 40 (0.512 sec)", the
// elapsed part omitted on the first log. With `format`, the line is the format text with every
// {name} replaced by that tensor's value ({{ and }} are literal braces).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <hookhost/sdk/timer.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace {

using hookhost::format_number;

// A copy of a fetched tensor: views are valid only during after_run, at_end needs them later.
struct TensorCopy {
  hh_dtype dtype = HH_DTYPE_F64;
  std::vector<int64_t> shape;
  std::vector<double> numbers;
  std::vector<std::string> strings;

  static TensorCopy of(const hookhost::TensorView& t) {
    TensorCopy c;
    c.dtype = t.dtype();
    c.shape.assign(t.shape().begin(), t.shape().end());
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.is_numeric()) {
        c.numbers.push_back(t.at(i));
      } else {
        c.strings.emplace_back(t.string_at(i));
      }
    }
    return c;
  }
  std::size_t size() const { return dtype == HH_DTYPE_STRING ? strings.size() : numbers.size(); }
};

std::string format_element(const TensorCopy& t, std::size_t i) {
  if (t.dtype == HH_DTYPE_STRING) return t.strings[i];
  const double v = t.numbers[i];
  if (t.dtype == HH_DTYPE_BOOL) return v != 0 ? "true" : "false";
  if (std::isnan(v)) return "nan";
  // Integers print exactly; %g would round large steps ("1e+06").
  if (t.dtype == HH_DTYPE_I32 || t.dtype == HH_DTYPE_I64 || t.dtype == HH_DTYPE_U8)
    return std::to_string(static_cast<int64_t>(v));
  return format_number(v);
}

// numpy's summarising rule: past 1000 elements, show 3 items at each edge of every dimension.
constexpr std::size_t kSummariseAbove = 1000;
constexpr int64_t kEdgeItems = 3;

void format_dim(const TensorCopy& t, std::size_t dim, std::size_t offset, bool summarise,
                std::string& out) {
  if (dim == t.shape.size()) {
    out += format_element(t, offset);
    return;
  }
  std::size_t stride = 1;
  for (std::size_t d = dim + 1; d < t.shape.size(); ++d)
    stride *= static_cast<std::size_t>(t.shape[d]);
  const int64_t extent = t.shape[dim];
  out += '[';
  for (int64_t i = 0; i < extent; ++i) {
    if (summarise && extent > 2 * kEdgeItems && i == kEdgeItems) {
      out += "..., ";
      i = extent - kEdgeItems - 1;
      continue;
    }
    if (i > 0) out += ", ";
    format_dim(t, dim + 1, offset + static_cast<std::size_t>(i) * stride, summarise, out);
  }
  out += ']';
}

std::string format_value(const TensorCopy& t) {
  if (t.shape.empty()) return t.size() ? format_element(t, 0) : std::string("[]");
  std::string out;
  format_dim(t, 0, 0, t.size() > kSummariseAbove, out);
  return out;
}

// The `format` text split into literal text and tensor names, parsed once.
class LineFormat {
 public:
  LineFormat() = default;
  LineFormat(const std::string& text, const std::vector<std::string>& tensors) {
    std::string literal;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
        literal += c;
        ++i;
      } else if (c == '{') {
        const std::size_t close = text.find('}', i);
        if (close == std::string::npos)
          throw hookhost::Error("'format' has a '{' without a closing '}' (write {{ for a brace)");
        const std::string name = text.substr(i + 1, close - i - 1);
        if (std::find(tensors.begin(), tensors.end(), name) == tensors.end())
          throw hookhost::Error("'format' uses {" + name +
                                "}, which is not one of the names in 'tensors'");
        if (!literal.empty()) parts_.emplace_back(std::move(literal));
        literal.clear();
        parts_.emplace_back(Placeholder{name});
        i = close;
      } else if (c == '}') {
        throw hookhost::Error("'format' has a '}' without an opening '{' (write }} for a brace)");
      } else {
        literal += c;
      }
    }
    if (!literal.empty()) parts_.emplace_back(std::move(literal));
  }

  template <typename Lookup>
  std::string render(Lookup&& value_of) const {
    std::string out;
    for (const auto& part : parts_) {
      if (const auto* p = std::get_if<Placeholder>(&part)) {
        out += value_of(p->name);
      } else {
        out += std::get<std::string>(part);
      }
    }
    return out;
  }

 private:
  struct Placeholder {
    std::string name;
  };
  std::vector<std::variant<std::string, Placeholder>> parts_;
};

class LoggingTensor : public hookhost::Hook {
 public:
  explicit LoggingTensor(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        tensors_(params().get_string_list("tensors")),
        at_end_(params().get_bool("at_end")) {
    if (tensors_.empty()) throw hookhost::Error("'tensors' must name at least one tensor");
    const bool by_iter = params().has("every_n_iter");
    const bool by_secs = params().has("every_n_secs");
    if (by_iter && by_secs)
      throw hookhost::Error(
          "either 'at_end' and/or exactly one of 'every_n_iter' and 'every_n_secs' must be "
          "provided: got both 'every_n_iter' and 'every_n_secs'");
    if (!by_iter && !by_secs && !at_end_)
      throw hookhost::Error(
          "either 'at_end' and/or exactly one of 'every_n_iter' and 'every_n_secs' must be "
          "provided: got none of 'at_end', 'every_n_iter', 'every_n_secs'");
    if (by_iter) {
      const int64_t n = params().get_int("every_n_iter");
      if (n <= 0)
        throw hookhost::Error("invalid every_n_iter=" + std::to_string(n) +
                              " ('every_n_iter' must be > 0)");
      timer_ = hookhost::StepTimer::every_steps(n);
    } else if (by_secs) {
      const double secs = params().get_float("every_n_secs");
      if (!(secs > 0) || !std::isfinite(secs))
        throw hookhost::Error("invalid every_n_secs=" + format_number(secs) +
                              " ('every_n_secs' must be a positive number of seconds)");
      timer_ = hookhost::StepTimer::every_secs(secs);
    }
    if (params().has("format")) format_ = LineFormat(params().get_string("format"), tensors_);
  }

  void begin() override {
    timer_.reset();
    last_values_.clear();
  }

  void before_run(const hh_run_context& ctx, hookhost::RunRequest& request) override {
    // TensorFlow counts local iterations (ctx.iteration), not the global step.
    triggered_ = timer_.should_trigger(ctx.iteration);
    // at_end cannot run the session in end(), so it keeps the last values seen.
    if (triggered_ || at_end_)
      for (const auto& name : tensors_) request.fetch(name);
  }

  void after_run(const hh_run_context& ctx, const hookhost::RunValues& values) override {
    iterations_done_ = ctx.iteration + 1;
    if (!triggered_ && !at_end_) return;
    last_values_.clear();
    for (const auto& name : tensors_) last_values_.push_back(TensorCopy::of(values.get(name)));
    if (triggered_) host().info(log_line(timer_.update(ctx.iteration)));
  }

  void end(const hh_end_info& info) override {
    if (!at_end_) return;
    const std::string outcome =
        std::string(" [at end: ") + hh_outcome_name(info.outcome) + ": " + info.reason + "]";
    if (last_values_.empty()) {
      host().info("no values of the tensors were fetched before the end" + outcome);
      return;
    }
    // Like TensorFlow, the elapsed time is shown when a timed log came before.
    std::optional<std::pair<double, int64_t>> elapsed;
    if (timer_.last_triggered_step()) elapsed = timer_.update(iterations_done_);
    host().info(log_line(elapsed) + outcome);
  }

 private:
  std::string log_line(const std::optional<std::pair<double, int64_t>>& elapsed) const {
    auto value_of = [&](const std::string& name) {
      for (std::size_t i = 0; i < tensors_.size(); ++i)
        if (tensors_[i] == name) return format_value(last_values_[i]);
      return std::string();
    };
    if (format_) return format_->render(value_of);
    std::string line;
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      line += (i ? ", " : "") + tensors_[i] + " = " + format_value(last_values_[i]);
    if (elapsed) {
      char buf[48];
      std::snprintf(buf, sizeof buf, " (%.3f sec)", elapsed->first);
      line += buf;
    }
    return line;
  }

  std::vector<std::string> tensors_;
  bool at_end_;
  hookhost::StepTimer timer_ = hookhost::StepTimer::never();
  std::optional<LineFormat> format_;
  bool triggered_ = false;
  int64_t iterations_done_ = 0;
  std::vector<TensorCopy> last_values_;
};

}  // namespace

#define LOGGING_TENSOR_PARAMS(P)                                                                   \
  P(tensors, STRING_LIST, REQUIRED, "", "tensors to log, in this order (e.g. loss,global_step)")   \
  P(every_n_iter, INT, OPTIONAL, "", "log every N local iterations (exclusive with every_n_secs)") \
  P(every_n_secs, FLOAT, OPTIONAL, "",                                                             \
    "log at most every N seconds (exclusive with every_n_iter)")                                   \
  P(at_end, BOOL, DEFAULT, "false", "also log the last values seen when the job ends")             \
  P(format, STRING, OPTIONAL, "",                                                                  \
    "line template: {name} is replaced by the value of that tensor; {{ and }} are braces")

HOOKHOST_PLUGIN(
    LoggingTensor, "logging_tensor", "1.0.0",
    "Logs tensors every N iterations or seconds and/or at the end (TF LoggingTensorHook)",
    LOGGING_TENSOR_PARAMS, chief)
