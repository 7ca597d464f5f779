// Which processes of a distributed job run a hook whose section sets no `ranks`: what its plugin
// declares in its note (placement=chief or placement=all), every process when it declares
// nothing. The host knows no plugin by its id: a renamed or forked plugin keeps its placement.
#pragma once

#include "hookhost/host/config.hpp"
#include "hookhost/host/plugin_metadata.hpp"

namespace hookhost {

RankSelection default_ranks(const PluginMetadata& plugin);

}  // namespace hookhost
