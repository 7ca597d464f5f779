#include "workloads/registry.hpp"

#include "workloads/linreg.hpp"

namespace hookhost {

const std::vector<WorkloadKind>& builtin_workloads() {
  static const std::vector<WorkloadKind> kinds = {
      {"linreg", &linreg_schema, &make_linreg_session},
  };
  return kinds;
}

const WorkloadKind* find_workload(const std::string& name) {
  for (const auto& kind : builtin_workloads())
    if (kind.name == name) return &kind;
  return nullptr;
}

}  // namespace hookhost
