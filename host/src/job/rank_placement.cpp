#include "job/rank_placement.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace hookhost {

RankSelection default_ranks(const std::string& plugin_id) {
  static constexpr std::array<std::string_view, 6> kChiefOnly = {
      "checkpoint_saver", "summary_saver", "history_saver",
      "step_counter",     "progress_bar",  "logging_tensor"};
  RankSelection ranks;
  if (std::find(kChiefOnly.begin(), kChiefOnly.end(), plugin_id) != kChiefOnly.end())
    ranks.kind = RankSelection::Kind::chief;
  return ranks;
}

}  // namespace hookhost
