#include "distributed/state_transfer.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace hookhost {
namespace {

void put_u64(std::string& out, uint64_t value) {
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out.append(bytes, 8);
}
void put_text(std::string& out, const std::string& text) {
  put_u64(out, text.size());
  out += text;
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  uint64_t u64() {
    need(8);
    uint64_t value = 0;
    std::memcpy(&value, bytes_.data() + at_, 8);
    at_ += 8;
    return value;
  }
  std::string text() {
    const uint64_t size = u64();
    need(size);
    std::string out = bytes_.substr(at_, size);
    at_ += size;
    return out;
  }
  void finish() const {
    if (at_ != bytes_.size())
      throw std::runtime_error("hookhost: trailing bytes in a state message");
  }

 private:
  void need(uint64_t n) const {
    if (n > bytes_.size() - at_) throw std::runtime_error("hookhost: a state message is truncated");
  }
  const std::string& bytes_;
  std::size_t at_ = 0;
};

void put_states(std::string& out, const HookStates& states) {
  put_u64(out, states.size());
  for (const auto& [name, state] : states) {
    put_text(out, name);
    put_text(out, state.plugin_id);
    put_u64(out, state.state_version);
    put_text(out, state.plugin_build);
    put_text(out, state.bytes);
  }
}

HookStates get_states(Reader& in) {
  HookStates states;
  for (uint64_t n = in.u64(); n > 0; --n) {
    std::string name = in.text();
    SavedHookState state;
    state.plugin_id = in.text();
    state.state_version = static_cast<uint32_t>(in.u64());
    state.plugin_build = in.text();
    state.bytes = in.text();
    states.emplace(std::move(name), std::move(state));
  }
  return states;
}

}  // namespace

std::string rank_state_key(const std::string& instance, int rank) {
  return rank == 0 ? instance : instance + "@" + std::to_string(rank);
}

HookStates states_of_rank(const HookStates& all, int rank) {
  HookStates mine;
  // Appended, not "@" + to_string(rank): GCC 12 at -O3 warns falsely (-Wrestrict) on that form.
  std::string suffix = "@";
  suffix += std::to_string(rank);
  for (const auto& [key, state] : all) {
    const std::size_t at = key.rfind('@');
    if (rank == 0 && at == std::string::npos) {
      mine.emplace(key, state);
    } else if (rank != 0 && at != std::string::npos &&
               key.compare(at, std::string::npos, suffix) == 0) {
      mine.emplace(key.substr(0, at), state);
    }
  }
  return mine;
}

std::string encode_hook_states(const HookStates& states) {
  std::string out;
  put_states(out, states);
  return out;
}

HookStates decode_hook_states(const std::string& bytes) {
  Reader in(bytes);
  HookStates states = get_states(in);
  in.finish();
  return states;
}

std::string encode_checkpoint_message(const Checkpoint& checkpoint) {
  std::string out;
  put_u64(out, static_cast<uint64_t>(checkpoint.global_step));
  put_text(out, checkpoint.workload_state);
  put_states(out, checkpoint.hook_states);
  return out;
}

Checkpoint decode_checkpoint_message(const std::string& bytes) {
  Reader in(bytes);
  Checkpoint checkpoint;
  checkpoint.global_step = static_cast<int64_t>(in.u64());
  checkpoint.workload_state = in.text();
  checkpoint.hook_states = get_states(in);
  in.finish();
  return checkpoint;
}

}  // namespace hookhost
