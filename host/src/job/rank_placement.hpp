// Which processes of a distributed job run a hook whose section sets no `ranks`, in the spirit of
// TensorFlow's chief_only_hooks: hooks that write the job's outputs or report its progress run on
// the chief alone (every process holds the same model, so one report is the job's report); hooks
// that stop the job or guard it run everywhere, so each process checks its own part (a NaN in one
// shard's loss) and a time limit does not depend on one machine. Any other plugin runs on every
// process, each with its own run directory.
#pragma once

#include <string>

#include "hookhost/host/config.hpp"

namespace hookhost {

RankSelection default_ranks(const std::string& plugin_id);

}  // namespace hookhost
