// One hook's hh_run_request: what its before_run adds to a step (names to fetch, values to feed),
// and the host's reason when it refused one. The checks themselves are in step_request.cpp.
// Thread rules: filled by the before_run that holds it open (on the training thread, or on an
// observer's worker while the training thread leaves it alone, observer_lane.hpp); read and
// emptied by the training thread between calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <hookhost/hook.h>

#include "hookhost/host/tensor.hpp"

namespace hookhost {

class StepEngine;
struct Slot;

// Standard layout with the C struct first: a request pointer converts back to its builder. It is
// open while its slot's before_run runs on this thread (the runtime's running call says so), so
// opening and closing it costs the step nothing. One per slot, so a request a plugin keeps past
// its before_run points at a live object that says it is closed.
struct RequestBuilder {
  static constexpr uint64_t kMagic = 0x68682e7265713031ULL;  // "hh.req01"
  hh_run_request c;
  uint64_t magic;
  StepEngine* engine;
  Slot* slot;
};

class StepRequest {
 public:
  // Makes the C struct usable by `slot`'s hook; once, when the slot joins `engine`.
  void issue(StepEngine* engine, Slot* slot);
  // What the plugin's before_run is given. Its C fields are the host's: a plugin that overwrites
  // them breaks only its own later calls.
  hh_run_request& c() { return builder_.c; }

  // --- fetches ---
  const std::vector<std::string>& fetches() const { return fetches_; }
  bool has_fetches() const { return !fetches_.empty(); }
  void add_fetch(std::string_view name);  // once per name
  std::vector<std::string> take_fetches() { return std::exchange(fetches_, {}); }
  void clear_fetches() { fetches_.clear(); }

  // --- feeds ---
  bool has_feeds() const { return !feeds_.empty(); }
  bool feeds(const std::string& name) const { return feeds_.count(name) != 0; }
  void add_feed(const std::string& name, Tensor value) { feeds_.emplace(name, std::move(value)); }
  // Hands the feeds over (their values moved out) and leaves none.
  template <typename Fn>
  void take_feeds(Fn&& each) {
    for (auto& [name, value] : feeds_) each(name, std::move(value));
    feeds_.clear();
  }

  // --- refusal ---
  // The host's reason for a fetch or feed it refused in this before_run ("" when none).
  const std::string& refusal() const { return refusal_; }
  void refuse(std::string why) { refusal_ = std::move(why); }
  void clear_refusal() { refusal_.clear(); }

  // A before_run begins: what an earlier one left is dropped.
  void restart_for_call() {
    fetches_.clear();
    refusal_.clear();
  }
  // The hook failed in before_run: it contributes nothing to this step.
  void drop() {
    fetches_.clear();
    feeds_.clear();
  }

 private:
  RequestBuilder builder_{};
  std::vector<std::string> fetches_;
  std::string refusal_;
  TensorMap feeds_;
};

}  // namespace hookhost
