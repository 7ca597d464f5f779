// The workloads this hookhost can run by name ([workload] name), each with its parameter schema
// and a factory, so the job composes any of them without knowing one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hookhost/host/communicator.hpp"
#include "hookhost/host/params.hpp"
#include "hookhost/host/plugin_metadata.hpp"
#include "hookhost/host/session.hpp"

namespace hookhost {

struct WorkloadKind {
  std::string name;
  const PluginMetadata& (*schema)();
  // `comm` is the job's processes, or null for one.
  std::unique_ptr<Session> (*make)(const ResolvedParams& params, std::shared_ptr<Communicator> comm);
};

// Every built-in workload, in the order `--help` lists them.
const std::vector<WorkloadKind>& builtin_workloads();
// The workload called `name`, or nullptr.
const WorkloadKind* find_workload(const std::string& name);

}  // namespace hookhost
