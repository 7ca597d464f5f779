// The arena that carries one hook's fetched values to its runner for after_run: a memfd the host
// maps read-write and rewrites each step, handed to the runner once (again when it grows) as a
// descriptor reopened read-only through /proc/self/fd. The runner can map it only PROT_READ: a
// writable mapping and a later mprotect fail with EACCES, so a hook cannot change what the host
// holds. Each memfd is sealed against shrinking and growing (and new writable mappings) before the
// runner gets it: a hook that reopens it read-write through /proc/self/fd cannot truncate it, so
// the host's writes never touch pages past its end (SIGBUS). F_SEAL_WRITE is no use here: it would
// stop the host's writes too.
//
// Layout per step: each value's name (NUL-terminated), shape, and data, 8-byte aligned. String
// tensors carry their hh_str array in the arena too, with pointers already in the runner's address
// space (the runner reports where it mapped the arena), so the runner hands out views as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hookhost/hook.h>

#include "protocol.hpp"
#include "support/unique_fd.hpp"

namespace hookhost::sandbox {

// One value's place in the arena, as the after_run message carries it.
struct ValuePlacement {
  uint64_t name_offset = 0;
  uint64_t shape_offset = 0;
  uint32_t rank = 0;
  int32_t dtype = 0;
  uint64_t data_offset = 0;
  uint64_t byte_size = 0;
};

class ValuesArena {
 public:
  ValuesArena() = default;
  ~ValuesArena();
  ValuesArena(const ValuesArena&) = delete;
  ValuesArena& operator=(const ValuesArena&) = delete;

  // The bytes `values` take in the arena. Throws std::invalid_argument for a value not on the
  // CPU (device memory cannot cross to another process).
  static size_t measure(const hh_run_values& values);

  // Makes room for `bytes` (grows, never shrinks; a new sealed memfd each time). Returns true when
  // the arena was replaced: its generation changed and the runner must map it again. Throws
  // std::system_error.
  bool reserve(size_t bytes);
  uint64_t generation() const { return generation_; }
  size_t capacity() const { return capacity_; }

  // A new read-only descriptor of the arena, for the runner.
  UniqueFd read_only_fd() const;

  // Copies `values` into the arena (reserve(measure(values)) first) and returns where each went.
  // `runner_base` is where the runner mapped this generation: string elements point there.
  std::vector<ValuePlacement> write(const hh_run_values& values, uint64_t runner_base);

 private:
  UniqueFd memfd_;
  std::byte* map_ = nullptr;
  size_t capacity_ = 0;
  uint64_t generation_ = 0;
};

// Writes the after_run value table of a call message.
void put_placements(Writer& out, const std::vector<ValuePlacement>& placements);

}  // namespace hookhost::sandbox
