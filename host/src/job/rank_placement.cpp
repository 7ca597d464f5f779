#include "job/rank_placement.hpp"

namespace hookhost {

RankSelection default_ranks(const PluginMetadata& plugin) {
  RankSelection ranks;
  if (plugin.default_placement() == Placement::chief) ranks.kind = RankSelection::Kind::chief;
  return ranks;
}

}  // namespace hookhost
